;;;; 10-setf.lisp — generalised places: setf and the macros that modify
;;;; places (incf, push, pop, rotatef, ...).
;;;;
;;;; A place (ACC args...) is written by, in order of preference: a setf
;;;; expander registered with defsetf or define-setf-expander; the primitive
;;;; %SET-ACC (the C modules provide one per built-in accessor, taking the
;;;; accessor's arguments and then the new value); or the function (SETF
;;;; ACC).  A macro form or a symbol macro is expanded (in the environment
;;;; of the macro that asks, so local macros count) and its expansion used.
;;;;
;;;; The macros evaluate the subforms of their places once each, left to
;;;; right, before the values they store (CLHS 5.1.1.1).

;; The five values of CL's get-setf-expansion:
;; temporaries, their value forms, store variables, writer form, reader form.
(defun get-setf-expansion (place &optional env)
  (cond
    ((symbolp place)
     (multiple-value-bind (expansion expanded) (macroexpand-1 place env)
       (if expanded
           (get-setf-expansion expansion env)
           (let ((g (gensym "NEW")))
             (values nil nil (list g) `(setq ,place ,g) place)))))
    ((not (consp place)) (error "SETF: ~S is not a place" place))
    (t
     (let* ((acc (car place))
            (expander (and (symbolp acc) (%meta acc '%setf-expander))))
       (cond
         (expander (funcall expander place env))
         ((eq acc 'the)
          (multiple-value-bind (temps vals stores setter getter)
              (get-setf-expansion (car (cdr (cdr place))) env)
            (values temps vals stores setter `(the ,(car (cdr place)) ,getter))))
         ((and (symbolp acc) (not (%setter-symbol acc)) (not (%meta acc '%setf-updater))
               (multiple-value-bind (expansion expanded) (macroexpand-1 place env)
                 (and expanded (not (equal expansion place)))))
          (get-setf-expansion (macroexpand-1 place env) env))
         (t
          (let* ((args (cdr place))
                 (temps (mapcar (lambda (a) (declare (ignore a)) (gensym "T")) args))
                 (store (gensym "NEW"))
                 (updater (and (symbolp acc) (%meta acc '%setf-updater)))
                 (setter (%setter-symbol acc))
                 (wargs (if (and (eq acc 'gethash) (cdr (cdr temps)))
                            (list (car temps) (car (cdr temps)))
                            temps)))
            (values temps args (list store)
                    (cond (updater `(,updater ,@wargs ,store))
                          (setter `(,setter ,@wargs ,store))
                          (t `(funcall #'(setf ,acc) ,store ,@wargs)))
                    `(,acc ,@temps)))))))))

;; Bind the temporaries of an expansion, then bind its store variables to
;; the values of VALUE (the first to its primary value when there is one).
(defun %bind-stores (temps vals stores value body)
  `(let* ,(mapcar #'list temps vals)
     ,(if (and stores (null (cdr stores)))
          `(let ((,(car stores) ,value)) ,@body)
          `(multiple-value-bind ,stores ,value ,@body))))

(defun %expand-setf-1 (place value env)
  (if (and (symbolp place) (not (nth-value 1 (macroexpand-1 place env))))
      `(setq ,place ,value)
      (let ((acc (and (consp place) (car place))))
        (if (and (symbolp acc) (not (%meta acc '%setf-expander)) (not (%meta acc '%setf-updater))
                 (%setter-symbol acc)
                 (not (and (eq acc 'gethash) (cdr (cdr (cdr place))))))
            `(,(%setter-symbol acc) ,@(cdr place) ,value)
            (multiple-value-bind (temps vals stores setter) (get-setf-expansion place env)
              (%bind-stores temps vals stores value (list setter)))))))

(defmacro setf (&environment env &rest pairs)
  (cond ((null pairs) nil)
        ((null (cdr pairs)) (error 'program-error))
        ((null (cdr (cdr pairs))) (%expand-setf-1 (car pairs) (car (cdr pairs)) env))
        (t (let ((forms nil))
             (do ((p pairs (cdr (cdr p)))) ((null p))
               (if (null (cdr p)) (error 'program-error))
               (setq forms (cons (%expand-setf-1 (car p) (car (cdr p)) env) forms)))
             `(progn ,@(nreverse forms))))))

;; Read-modify-write through an expansion: (FN getter) is the new value.
(defun %modify (place make-value env)
  (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place env)
    `(let* (,@(mapcar #'list temps vals) (,(car stores) ,(funcall make-value getter)))
       ,setter)))

;; INCF and DECF read the place after evaluating DELTA (CLHS 5.1.3): the
;; place's subforms, then DELTA, then the read and the write.  A DELTA that
;; is a constant or a variable needs no temporary.
(defun %increment (op place delta env)
  (let* ((simple (or (constantp delta env)
                     (and (symbolp delta) (not (nth-value 1 (macroexpand-1 delta env))))))
         (d (if simple delta (gensym "DELTA"))))
    (if (and (symbolp place) (not (nth-value 1 (macroexpand-1 place env))))
        (if simple
            `(setq ,place (,op ,place ,delta))
            `(let ((,d ,delta)) (setq ,place (,op ,place ,d))))
        (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place env)
          `(let* (,@(mapcar #'list temps vals) ,@(unless simple `((,d ,delta)))
                  (,(car stores) (,op ,getter ,d)))
             ,setter)))))

(defmacro incf (&environment env place &optional (delta 1))
  (%increment '+ place delta env))

(defmacro decf (&environment env place &optional (delta 1))
  (%increment '- place delta env))

;; push and pushnew evaluate ITEM before the place's subforms.
(defmacro push (&environment env item place)
  (if (and (symbolp place) (not (nth-value 1 (macroexpand-1 place env))))
      `(setq ,place (cons ,item ,place))
      (let ((i (gensym "ITEM")))
        `(let ((,i ,item)) ,(%modify place (lambda (g) `(cons ,i ,g)) env)))))

(defmacro pushnew (&environment env item place &rest keys)
  (let ((i (gensym "ITEM")))
    `(let ((,i ,item))
       ,(if (and (symbolp place) (not (nth-value 1 (macroexpand-1 place env))))
            `(setq ,place (adjoin ,i ,place ,@keys))
            (%modify place (lambda (g) `(adjoin ,i ,g ,@keys)) env)))))

(defmacro pop (&environment env place)
  (if (and (symbolp place) (not (nth-value 1 (macroexpand-1 place env))))
      `(prog1 (car ,place) (setq ,place (cdr ,place)))
      (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place env)
        (let ((head (gensym "HEAD")))
          `(let* (,@(mapcar #'list temps vals) (,head ,getter) (,(car stores) (cdr ,head)))
             ,setter
             (car ,head))))))

;; (psetf place value ...): every place's subforms and every value are
;; evaluated, left to right, before any place is written.
(defmacro psetf (&environment env &rest pairs)
  (when (oddp (length pairs)) (error 'program-error))
  ;; A loop of its own, not do: do steps with psetq, which expands into
  ;; this macro (below), and the library's macros are analysed at their
  ;; first use.
  (let ((bindings nil) (setters nil) (p pairs))
    (tagbody
     next
       (when p
         (multiple-value-bind (temps vals stores setter) (get-setf-expansion (car p) env)
           (setq bindings (append bindings (mapcar #'list temps vals)))
           (setq bindings (append bindings
                                  (if (cdr stores)
                                      (list (list stores (car (cdr p))))
                                      (list (list (car stores) (car (cdr p)))))))
           (setq setters (cons setter setters)))
         (setq p (cdr (cdr p)))
         (go next)))
    (%nest-bindings bindings `(progn ,@(nreverse setters) nil))))

;; let* over BINDINGS, each (var form) or ((var...) form) for several values.
(defun %nest-bindings (bindings body)
  (if (null bindings)
      body
      (let ((b (car bindings)))
        (if (listp (car b))
            `(multiple-value-bind ,(car b) ,(car (cdr b)) ,(%nest-bindings (cdr bindings) body))
            `(let ((,(car b) ,(car (cdr b)))) ,(%nest-bindings (cdr bindings) body))))))

;; shiftf and rotatef read every place (its subforms first) left to right,
;; then (shiftf) evaluate the new value, then write every place.
(defmacro shiftf (&environment env &rest places-and-value)
  (when (null (cdr places-and-value)) (error 'program-error))
  (let* ((places (butlast places-and-value))
         (exps (mapcar (lambda (p) (multiple-value-list (get-setf-expansion p env))) places))
         (olds (mapcar (lambda (p) (declare (ignore p)) (gensym "OLD")) places))
         (new (gensym "NEW"))
         (bindings nil))
    (mapc (lambda (e old)
            (setq bindings (append bindings (mapcar #'list (first e) (second e))
                                   (list (list old (fifth e))))))
          exps olds)
    ;; the new value keeps all its values, for a place with several stores
    (setq bindings (append bindings
                           (list (list new `(multiple-value-list ,(car (last places-and-value)))))))
    (%nest-bindings bindings
                    `(progn
                       ,@(mapcar (lambda (e value)
                                   `(multiple-value-bind ,(third e) ,value ,(fourth e)))
                                 exps (append (mapcar (lambda (o) o) (cdr olds))
                                              (list `(values-list ,new))))
                       ,(car olds)))))

(defmacro rotatef (&environment env &rest places)
  (if (null places)
      nil
      (let* ((exps (mapcar (lambda (p) (multiple-value-list (get-setf-expansion p env))) places))
             (olds (mapcar (lambda (p) (declare (ignore p)) (gensym "OLD")) places))
             (bindings nil))
        (mapc (lambda (e old)
                (setq bindings (append bindings (mapcar #'list (first e) (second e))
                                       (list (list old (fifth e))))))
              exps olds)
        (%nest-bindings bindings
                        `(progn
                           ,@(mapcar (lambda (e new)
                                       `(let ((,(car (third e)) ,new)) ,(fourth e)))
                                     exps (append (cdr olds) (list (car olds))))
                           nil)))))

;; The expander of a long-form defsetf: WRITER, called with the environment,
;; the store variables and the temporaries (bound to the place's arguments),
;; returns the writer form.  Shared by every defsetf, so a definition costs
;; only its own body.
(defun %defsetf-expander (access-fn nstores writer)
  (lambda (place &optional env)
    (let* ((args (cdr place))
           (temps (mapcar (lambda (a) (declare (ignore a)) (gensym "T")) args))
           (stores (let ((l nil)) (dotimes (i nstores l) (push (gensym "NEW") l)))))
      (values temps args stores
              (apply writer env (append stores temps))
              (cons access-fn temps)))))

;; (defsetf access-fn update-fn [doc]) or (defsetf access-fn lambda-list
;; (store...) [doc] body...): in the long form BODY computes the writer form
;; from the temporaries (bound to the place's arguments) and the stores,
;; inside a block named ACCESS-FN.  Like DEFTYPE, DEFSETF and
;; DEFINE-SETF-EXPANDER expand into a call with the whole form, which makes
;; the expander from the form (in the null lexical environment) and records
;; the form as ACCESS-FN's setf-expander entry.
(defmacro defsetf (&whole whole access-fn &rest rest)
  (declare (ignore access-fn rest))
  `(%defsetf ',whole))

(defun %defsetf (whole)
  (unless (and (consp whole) (eq (car whole) 'defsetf) (consp (cdr whole)) (symbolp (car (cdr whole)))
               (consp (cdr (cdr whole))))
    (error "~S is not a DEFSETF form" whole))
  (let ((access-fn (car (cdr whole))) (rest (cdr (cdr whole))))
    (if (and rest (symbolp (car rest)) (car rest))
        (%define-setf access-fn :updater (car rest))
        (let* ((lambda-list (car rest)) (stores (car (cdr rest))) (body (cdr (cdr rest)))
               (envp (member '&environment lambda-list))
               (env-var (or (car (cdr envp)) (gensym "ENV")))
               (lambda-list (if envp (append (ldiff lambda-list envp) (cdr (cdr envp))) lambda-list))
               (body (if (and (stringp (car body)) (cdr body)) (cdr body) body))
               (args (gensym "ARGS")))
          (%define-setf access-fn :expander
                        (%defsetf-expander access-fn (length stores)
                                           (%definition-function
                                            `(lambda (,env-var ,@stores &rest ,args)
                                               (declare (ignorable ,env-var))
                                               (apply (lambda ,lambda-list (block ,access-fn ,@body)) ,args)))))))
    (%record-definition :setf-expander access-fn whole)))

;; c[ad]{2,4}r places that have no %SET- primitive write through the
;; shorter accessor: (setf (cadar x) v) is (setf (car (cdar x)) v).
(defun %cxr-expander (outer inner)
  (lambda (place &optional env)
    (declare (ignore env))
    (let ((x (gensym "T")) (v (gensym "NEW")))
      (values (list x) (list (car (cdr place))) (list v)
              (list 'setf (list outer (list inner x)) v)
              (list (car place) x)))))

(dolist (d '((caar car car) (cdar cdr car) (caaar car caar) (caadr car cadr)
             (cadar car cdar) (cdaar cdr caar) (cdadr cdr cadr) (cddar cdr cdar)
             (cdddr cdr cddr) (caaaar car caaar) (caaadr car caadr) (caadar car cadar)
             (caaddr car caddr) (cadaar car cdaar) (cadadr car cdadr) (caddar car cddar)
             (cadddr car cdddr) (cdaaar cdr caaar) (cdaadr cdr caadr) (cdadar cdr cadar)
             (cdaddr cdr caddr) (cddaar cdr cdaar) (cddadr cdr cdadr) (cdddar cdr cddar)
             (cddddr cdr cdddr)))
  (%define-setf (car d) :expander (%cxr-expander (car (cdr d)) (car (cdr (cdr d))))))

;; getf as a place: writes a fresh plist back to the underlying place.
(defun %putf (plist indicator value)
  (do ((p plist (cdr (cdr p)))) ((null p) (list* indicator value plist))
    (when (eq (car p) indicator)
      (setf (car (cdr p)) value)
      (return plist))))

(%define-setf 'getf :expander
      (lambda (place &optional env)
        (multiple-value-bind (temps vals stores setter getter)
            (get-setf-expansion (car (cdr place)) env)
          ;; (getf plist-place indicator [default]): the default is read
          ;; by the getter (incf of an absent property starts from it)
          (let ((ind (gensym "IND")) (def (gensym "DEFAULT")) (new (gensym "NEW")))
            (values (append temps (list ind def))
                    (append vals (list (car (cdr (cdr place))) (car (cdr (cdr (cdr place))))))
                    (list new)
                    `(let ((,(car stores) (%putf ,getter ,ind ,new))) ,setter ,new)
                    `(getf ,getter ,ind ,def))))))

(defun %remf (plist indicator)
  (cond ((null plist) (values nil nil))
        ((eq (car plist) indicator) (values (cdr (cdr plist)) t))
        (t (do ((p plist (cdr (cdr p)))) ((null (cdr (cdr p))) (values plist nil))
             (when (eq (car (cdr (cdr p))) indicator)
               (setf (cdr (cdr p)) (cdr (cdr (cdr (cdr p)))))
               (return (values plist t)))))))

;; The place's subforms, then INDICATOR, then the place is read.
(defmacro remf (&environment env place indicator)
  (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place env)
    (let ((found (gensym "FOUND")) (ind (gensym "IND")))
      `(let* (,@(mapcar #'list temps vals) (,ind ,indicator))
         (multiple-value-bind (,(car stores) ,found) (%remf ,getter ,ind)
           ,setter
           ,found)))))

;; BODY, run with LAMBDA-LIST bound to the place's arguments (and
;; &environment to the environment), returns the five values of
;; get-setf-expansion.
(defmacro define-setf-expander (&whole whole access-fn lambda-list &body body)
  (declare (ignore access-fn lambda-list body))
  `(%define-setf-expander ',whole))

(defun %define-setf-expander (whole)
  (unless (and (consp whole) (eq (car whole) 'define-setf-expander) (consp (cdr whole))
               (symbolp (car (cdr whole))) (consp (cdr (cdr whole))) (listp (car (cdr (cdr whole))))
               (listp (cdr (cdr (cdr whole)))))
    (error "~S is not a DEFINE-SETF-EXPANDER form" whole))
  (let* ((access-fn (car (cdr whole))) (lambda-list (car (cdr (cdr whole)))) (body (cdr (cdr (cdr whole))))
         (place (gensym "PLACE")) (env (gensym "ENV"))
         (envp (member '&environment lambda-list))
         (env-var (car (cdr envp)))
         (lambda-list (if envp (append (ldiff lambda-list envp) (cdr (cdr envp))) lambda-list)))
    ;; the body is in a block named ACCESS-FN (CLHS 3.4.11)
    (multiple-value-bind (decls forms) (%parse-body body t)
      (%define-setf access-fn :expander
                    (%definition-function
                     `(lambda (,place &optional ,env)
                        (declare (ignorable ,env))
                        (let (,@(if env-var `((,env-var ,env))))
                          (destructuring-bind ,lambda-list (cdr ,place) ,@decls (block ,access-fn ,@forms)))))))
    (%record-definition :setf-expander access-fn whole)))

;; (setf (values place...) form): each place gets the corresponding value
;; of FORM (NIL when FORM has fewer); the values stored are returned.  A
;; place with several stores gets the value in its first, NIL in the others.
(%define-setf 'values :expander
      (lambda (form &optional env)
        (let ((temps nil) (vals nil) (stores nil) (setters nil) (getters nil))
          (dolist (place (cdr form))
            (multiple-value-bind (ts vs ss setter getter) (get-setf-expansion place env)
              (setq temps (append temps ts (cdr ss)) vals (append vals vs (mapcar (lambda (s) (declare (ignore s)) nil) (cdr ss))))
              (setq stores (append stores (list (car ss))))
              (setq setters (append setters (list setter)) getters (append getters (list getter)))))
          (values temps vals stores
                  `(values ,@setters)
                  `(values ,@getters)))))

;; (setf (apply #'fn args... list) new): writes with fn's writer, applied.
(%define-setf 'apply :expander
      (lambda (form &optional env)
        (declare (ignore env))
        (let* ((fn (car (cdr form)))
               (name (if (and (consp fn) (member (car fn) '(function quote))) (car (cdr fn)) fn))
               (args (cdr (cdr form)))
               (temps (mapcar (lambda (a) (declare (ignore a)) (gensym "T")) args))
               (store (gensym "NEW")))
          (values temps args (list store)
                  `(apply #'(setf ,name) ,store ,@temps)
                  `(apply #',name ,@temps)))))

;; psetq is psetf when a variable is a symbol macro.
(defmacro psetq (&environment env &rest pairs)
  (when (oddp (length pairs)) (error 'program-error))
  `(psetf ,@pairs))

(defmacro multiple-value-setq (vars form)
  (dolist (v vars) (unless (symbolp v) (error 'program-error)))
  (if vars
      `(values (setf (values ,@vars) ,form))
      `(values ,form)))

;; The macro is defined from the whole form, which is its macro entry: the
;; DEFMACRO it makes calls the kernel's %MODIFY, which no stored form may
;; name.
(defmacro define-modify-macro (&whole whole name lambda-list function &optional doc)
  (declare (ignore name lambda-list function doc))
  `(%define-modify-macro ',whole))

(defun %define-modify-macro (whole)
  (unless (and (consp whole) (eq (car whole) 'define-modify-macro) (consp (cdr whole))
               (symbolp (car (cdr whole))) (consp (cdr (cdr whole))) (listp (car (cdr (cdr whole))))
               (consp (cdr (cdr (cdr whole)))) (symbolp (car (cdr (cdr (cdr whole)))))
               (listp (cdr (cdr (cdr (cdr whole)))))
               (null (cdr (cdr (cdr (cdr (cdr whole))))))
               (typep (car (cdr (cdr (cdr (cdr whole))))) '(or null string)))
    (error "~S is not a DEFINE-MODIFY-MACRO form" whole))
  (destructuring-bind (name lambda-list function &optional doc) (cdr whole)
    (let* ((place (gensym "PLACE")) (env (gensym "ENV"))
           (rest (car (cdr (member '&rest lambda-list))))
           (plain (remove-if (lambda (x) (member x '(&optional &rest)))
                             (ldiff lambda-list (member '&rest lambda-list))))
           (vars (mapcar (lambda (x) (if (consp x) (car x) x)) plain)))
      (%definition-function
       `(defmacro ,name (&environment ,env ,place ,@lambda-list)
          ,@(if doc (list doc))
          (%modify ,place (lambda (g) (list* ',function g (list* ,@vars ,rest))) ,env)))
      (%record-definition :macro name whole))))

;; The array accessors as setf functions, for (setf (apply #'aref ...)) and
;; #'(setf aref); (setf (aref ...)) itself writes through the primitive.
;; (CHECK-TYPE is not a macro yet when this file loads: the type checks are
;; written out.)
(defun (setf aref) (new array &rest subscripts)
  (setf (row-major-aref array (apply #'array-row-major-index array subscripts)) new))
(defun (setf bit) (new array &rest subscripts)
  (unless (typep array '(array bit))
    (error 'type-error :datum array :expected-type '(array bit)))
  (setf (row-major-aref array (apply #'array-row-major-index array subscripts)) new))
(defun (setf sbit) (new array &rest subscripts)
  (unless (typep array '(simple-array bit))
    (error 'type-error :datum array :expected-type '(simple-array bit)))
  (setf (row-major-aref array (apply #'array-row-major-index array subscripts)) new))
