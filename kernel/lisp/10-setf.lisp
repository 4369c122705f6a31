;;;; 10-setf.lisp — generalised places: setf and the macros that modify
;;;; places (incf, push, pop, rotatef, ...).
;;;;
;;;; A place (ACC args...) is written by, in order of preference: a setf
;;;; expander registered with defsetf; the primitive %SET-ACC (the C modules
;;;; provide one per built-in accessor, taking the accessor's arguments and
;;;; then the new value); or the function (SETF ACC).

;; The five values of CL's get-setf-expansion:
;; temporaries, their value forms, store variables, writer form, reader form.
(defun get-setf-expansion (place &optional env)
  (declare (ignore env))
  (cond
    ((symbolp place)
     (let ((g (gensym "NEW")))
       (values nil nil (list g) `(setq ,place ,g) place)))
    ((not (consp place)) (error "SETF: ~S is not a place" place))
    (t
     (let* ((acc (car place))
            (expander (and (symbolp acc) (%meta acc '%setf-expander))))
       (cond
         (expander (funcall expander place))
         ((eq acc 'the) (get-setf-expansion (car (cdr (cdr place)))))
         ((and (symbolp acc) (macro-function acc) (not (%setter-symbol acc))
               (not (fboundp (list 'setf acc))))
          (get-setf-expansion (macroexpand-1 place)))
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

(defun %expand-setf-1 (place value)
  (if (symbolp place)
      `(setq ,place ,value)
      (let ((acc (and (consp place) (car place))))
        (if (and (symbolp acc) (not (%meta acc '%setf-expander)) (not (%meta acc '%setf-updater))
                 (%setter-symbol acc)
                 (not (and (eq acc 'gethash) (cdr (cdr (cdr place))))))
            `(,(%setter-symbol acc) ,@(cdr place) ,value)
            (multiple-value-bind (temps vals stores setter) (get-setf-expansion place)
              (if (cdr stores)
                  `(let* ,(mapcar #'list temps vals)
                     (multiple-value-bind ,stores ,value ,setter))
                  `(let* (,@(mapcar #'list temps vals) (,(car stores) ,value))
                     ,setter)))))))

(defmacro setf (&rest pairs)
  (cond ((null pairs) nil)
        ((null (cdr pairs)) (error "SETF: odd number of arguments: ~S" pairs))
        ((null (cdr (cdr pairs))) (%expand-setf-1 (car pairs) (car (cdr pairs))))
        (t (let ((forms nil))
             (do ((p pairs (cdr (cdr p)))) ((null p))
               (if (null (cdr p)) (error "SETF: odd number of arguments: ~S" pairs))
               (setq forms (cons (%expand-setf-1 (car p) (car (cdr p))) forms)))
             `(progn ,@(nreverse forms))))))

;; Read-modify-write through an expansion: (FN getter) is the new value.
(defun %modify (place make-value)
  (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place)
    `(let* (,@(mapcar #'list temps vals) (,(car stores) ,(funcall make-value getter)))
       ,setter)))

(defmacro incf (place &optional (delta 1))
  (if (symbolp place)
      `(setq ,place (+ ,place ,delta))
      (%modify place (lambda (g) `(+ ,g ,delta)))))

(defmacro decf (place &optional (delta 1))
  (if (symbolp place)
      `(setq ,place (- ,place ,delta))
      (%modify place (lambda (g) `(- ,g ,delta)))))

(defmacro push (item place)
  (if (symbolp place)
      `(setq ,place (cons ,item ,place))
      (let ((i (gensym "ITEM")))
        `(let ((,i ,item)) ,(%modify place (lambda (g) `(cons ,i ,g)))))))

(defmacro pushnew (item place &rest keys)
  (let ((i (gensym "ITEM")))
    `(let ((,i ,item))
       ,(if (symbolp place)
            `(setq ,place (adjoin ,i ,place ,@keys))
            (%modify place (lambda (g) `(adjoin ,i ,g ,@keys)))))))

(defmacro pop (place)
  (if (symbolp place)
      `(prog1 (car ,place) (setq ,place (cdr ,place)))
      (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place)
        (let ((head (gensym "HEAD")))
          `(let* (,@(mapcar #'list temps vals) (,head ,getter) (,(car stores) (cdr ,head)))
             ,setter
             (car ,head))))))

(defmacro psetf (&rest pairs)
  (let ((lets nil) (sets nil))
    (do ((p pairs (cdr (cdr p)))) ((null p))
      (let ((g (gensym "V")))
        (setq lets (cons (list g (car (cdr p))) lets))
        (setq sets (cons `(setf ,(car p) ,g) sets))))
    `(let ,(nreverse lets) ,@(nreverse sets) nil)))

(defmacro shiftf (&rest places-and-value)
  (let* ((places (butlast places-and-value))
         (value (car (last places-and-value)))
         (gs (mapcar (lambda (p) (declare (ignore p)) (gensym "V")) places)))
    `(let ,(mapcar #'list gs places)
       ,@(mapcar (lambda (p g2) `(setf ,p ,g2))
                 places (append (cdr gs) (list value)))
       ,(car gs))))

(defmacro rotatef (&rest places)
  (if (null places) nil
      (let ((gs (mapcar (lambda (p) (declare (ignore p)) (gensym "V")) places)))
        `(let ,(mapcar #'list gs places)
           ,@(mapcar (lambda (p g2) `(setf ,p ,g2))
                     places (append (cdr gs) (list (car gs))))
           nil))))

(defmacro defsetf (access-fn &rest rest)
  (if (and rest (symbolp (car rest)))
      `(progn (%define-setf ',access-fn :updater ',(car rest)) ',access-fn)
      ;; long form: (defsetf acc lambda-list (store) body...): BODY computes
      ;; the writer form from the temporaries and the store variable.
      (let ((lambda-list (car rest)) (stores (car (cdr rest))) (body (cdr (cdr rest))))
        `(progn
           (%define-setf ',access-fn :expander
                 (lambda (place)
                   (let* ((args (cdr place))
                          (temps (mapcar (lambda (a) (declare (ignore a)) (gensym "T")) args))
                          (store (gensym "NEW")))
                     (values temps args (list store)
                             (apply (lambda (,@lambda-list ,@stores) ,@body)
                                    (append temps (list store)))
                             (cons ',access-fn temps)))))
           ',access-fn))))

;; c[ad]{2,4}r places that have no %SET- primitive: write through the
;; shorter accessor.
(defmacro %define-cxr-setf (name outer inner)
  `(defsetf ,name (x) (v) (list 'setf (list ',outer (list ',inner x)) v)))
(%define-cxr-setf caar car car)   (%define-cxr-setf cdar cdr car)
(%define-cxr-setf caaar car caar) (%define-cxr-setf caadr car cadr)
(%define-cxr-setf cadar car cdar) (%define-cxr-setf cdaar cdr caar)
(%define-cxr-setf cdadr cdr cadr) (%define-cxr-setf cddar cdr cdar)
(%define-cxr-setf cdddr cdr cddr) (%define-cxr-setf cadddr car cdddr)
(%define-cxr-setf cddddr cdr cdddr)

;; getf as a place: writes a fresh plist back to the underlying place.
(defun %putf (plist indicator value)
  (do ((p plist (cdr (cdr p)))) ((null p) (list* indicator value plist))
    (when (eq (car p) indicator)
      (setf (car (cdr p)) value)
      (return plist))))

(%define-setf 'getf :expander
      (lambda (place)
        (multiple-value-bind (temps vals stores setter getter)
            (get-setf-expansion (car (cdr place)))
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

(defmacro remf (place indicator)
  (multiple-value-bind (temps vals stores setter getter) (get-setf-expansion place)
    (let ((found (gensym "FOUND")))
      `(let* (,@(mapcar #'list temps vals))
         (multiple-value-bind (,(car stores) ,found) (%remf ,getter ,indicator)
           ,setter
           ,found)))))

(defmacro define-setf-expander (access-fn lambda-list &body body)
  ;; BODY, run with LAMBDA-LIST bound to the place's arguments, returns the
  ;; five values of get-setf-expansion (&environment is bound to NIL)
  (let ((place (gensym "PLACE")))
    `(progn
       (%define-setf ',access-fn :expander
                     (lambda (,place)
                       (destructuring-bind ,lambda-list (cdr ,place) ,@body)))
       ',access-fn)))

;; (setf (values place...) form): each place gets the corresponding value
;; of FORM (NIL when FORM has fewer); the values stored are returned.
(%define-setf 'values :expander
      (lambda (form)
        (let ((temps nil) (vals nil) (stores nil) (setters nil) (getters nil))
          (dolist (place (cdr form))
            (multiple-value-bind (ts vs ss setter getter) (get-setf-expansion place)
              (setq temps (append temps ts) vals (append vals vs))
              (setq stores (append stores (list (car ss))))
              (setq setters (append setters (list setter)) getters (append getters (list getter)))))
          (values temps vals stores
                  `(values ,@setters)
                  `(values ,@getters)))))

(defmacro define-modify-macro (name lambda-list function &optional doc)
  (declare (ignore doc))
  (let ((place (gensym "PLACE")) (args (remove '&optional lambda-list)))
    `(defmacro ,name (,place ,@lambda-list)
       (%modify ,place (lambda (g) (list* ',function g (list ,@args)))))))
