;;;; 30-conditions.lisp — the condition system's macros, on top of the C
;;;; primitives %handler-bind, %restart-bind and %make-restart (cond.c).
;;;;
;;;; handler-case and restart-case transfer control with a non-local GO out
;;;; of a closure, so unwind-protect cleanups run on the way.

(defmacro handler-bind (bindings &body body)
  `(%handler-bind (list ,@(mapcar (lambda (b) `(cons ',(car b) ,(car (cdr b)))) bindings))
                  (lambda () ,@body)))

(defmacro handler-case (form &rest clauses)
  ;; the :no-error clause runs outside the handlers, with FORM's values
  (let* ((no-error (find :no-error clauses :key #'car))
         (clauses (remove :no-error clauses :key #'car))
         (block (gensym "HANDLER-CASE"))
         (normal (gensym "NORMAL"))
         (cvar (gensym "CONDITION"))
         (tags (mapcar (lambda (c) (declare (ignore c)) (gensym "CLAUSE")) clauses)))
    (let ((handled
            (if (null clauses)
                form
                `(let ((,cvar nil))
                   (declare (ignorable ,cvar))
                   (tagbody
                      (return-from ,normal
                        (%handler-bind
                         (list ,@(mapcar (lambda (c tag)
                                           `(cons ',(car c) (lambda (c) (setq ,cvar c) (go ,tag))))
                                         clauses tags))
                         (lambda () ,form)))
                      ,@(mapcan (lambda (c tag)
                                  (let ((var (car (car (cdr c)))) (body (cdr (cdr c))))
                                    (list tag
                                          `(return-from ,block
                                             ,(if var
                                                  `(let ((,var ,cvar)) ,@body)
                                                  `(locally ,@body))))))
                                clauses tags))))))
      `(block ,block
         ,(if no-error
              `(multiple-value-call (lambda ,(car (cdr no-error)) ,@(cdr (cdr no-error)))
                 (block ,normal ,handled))
              `(block ,normal ,handled))))))

(defmacro ignore-errors (&body body)
  `(handler-case (progn ,@body) (error (c) (values nil c))))

(defun %restart-options (body)
  ;; (values report interactive test body)
  (let ((report nil) (interactive nil) (test nil))
    (do () ((not (member (car body) '(:report :interactive :test))))
      (case (car body)
        (:report (setq report (car (cdr body))))
        (:interactive (setq interactive (car (cdr body))))
        (:test (setq test (car (cdr body)))))
      (setq body (cdr (cdr body))))
    (values report interactive test body)))

(defun %report-form (report)
  (cond ((null report) nil)
        ((stringp report) report)
        ((symbolp report) `(function ,report))
        (t `(function ,report))))

;; (with-condition-restarts condition restarts &body body): within BODY the
;; RESTARTS are associated with CONDITION (compute-restarts and
;; find-restart given another condition skip them).
(defmacro with-condition-restarts (condition-form restarts-form &body body)
  (let ((c (gensym "CONDITION")) (rs (gensym "RESTARTS")))
    (multiple-value-bind (decls forms) (%parse-body body)
      `(let ((,c ,condition-form) (,rs ,restarts-form))
         ,@decls
         (unwind-protect (progn (%restart-associate ,rs ,c t) ,@forms)
           (%restart-associate ,rs ,c nil))))))

;; When restart-case's form is a call of signal, error, cerror or warn, or a
;; macro form (or symbol macro) that expands into one, the condition it
;; signals is associated with the restarts.
(defun %restart-case-form (form restarts env)
  (let* ((expansion (macroexpand form env))
         (op (and (consp expansion) (car expansion))))
    (if (member op '(signal error cerror warn))
        (let* ((c (gensym "CONDITION"))
               (args (if (eq op 'cerror) (cdr (cdr expansion)) (cdr expansion)))
               (default (case op (signal 'simple-condition) (warn 'simple-warning) (t 'simple-error))))
          `(let ((,c (%coerce-to-condition ',default ,@args)))
             (with-condition-restarts ,c ,restarts
               ,(if (eq op 'cerror) `(cerror ,(car (cdr expansion)) ,c) `(,op ,c)))))
        form)))

(defmacro restart-case (&environment env form &rest clauses)
  (let* ((block (gensym "RESTART-CASE"))
         (args (gensym "ARGS"))
         (restarts (gensym "RESTARTS"))
         (tags (mapcar (lambda (c) (declare (ignore c)) (gensym "RESTART")) clauses)))
    `(block ,block
       (let ((,args nil) (,restarts nil))
         (tagbody
            (return-from ,block
              (%restart-bind
               (setq ,restarts
                (list ,@(mapcar
                        (lambda (c tag)
                          (multiple-value-bind (report interactive test)
                              (%restart-options (cdr (cdr c)))
                            `(%make-restart ',(car c)
                                            (lambda (&rest a) (setq ,args a) (go ,tag))
                                            ,(%report-form report)
                                            ,(if test `(function ,test) nil)
                                            ,(if interactive `(function ,interactive) nil)
                                            ',(car (cdr c)))))
                        clauses tags)))
               (lambda () ,(%restart-case-form form restarts env))))
            ,@(mapcan (lambda (c tag)
                        (multiple-value-bind (report interactive test body)
                            (%restart-options (cdr (cdr c)))
                          (declare (ignore report interactive test))
                          (list tag
                                `(return-from ,block
                                   (apply (lambda ,(car (cdr c)) ,@body) ,args)))))
                      clauses tags))))))

(defmacro restart-bind (bindings &body body)
  `(%restart-bind
    (list ,@(mapcar (lambda (b)
                      (let ((name (car b)) (fn (car (cdr b))) (opts (cdr (cdr b))))
                        `(%make-restart ',name ,fn
                                        ,(getf opts :report-function)
                                        ,(getf opts :test-function)
                                        ,(getf opts :interactive-function))))
                    bindings))
    (lambda () ,@body)))

(defmacro with-simple-restart (spec &body body)
  (let ((name (car spec)) (fmt (cdr spec)) (s (gensym "S")))
    `(restart-case (progn ,@body)
       (,name () :report (lambda (,s) (format ,s ,@fmt)) (values nil t)))))

(defun abort (&optional condition)
  (invoke-restart (or (find-restart 'abort condition)
                      (error 'control-error :format-control "no ABORT restart is active"))))

(defun continue (&optional condition)
  (let ((r (find-restart 'continue condition))) (if r (invoke-restart r) nil)))

(defun muffle-warning (&optional condition)
  (invoke-restart (or (find-restart 'muffle-warning condition)
                      (error 'control-error :format-control "no MUFFLE-WARNING restart is active"))))

(defun store-value (value &optional condition)
  (let ((r (find-restart 'store-value condition))) (if r (invoke-restart r value) nil)))

(defun use-value (value &optional condition)
  (let ((r (find-restart 'use-value condition))) (if r (invoke-restart r value) nil)))

(defun warn (datum &rest arguments)
  (let ((c (apply #'%coerce-to-condition 'simple-warning datum arguments)))
    (unless (typep c 'warning) (error 'type-error :datum c :expected-type 'warning))
    (restart-case (signal c)
      (muffle-warning () :report "Ignore the warning." (return-from warn nil)))
    (format *error-output* "~&WARNING: ~a~%" c)
    nil))

(defun cerror (continue-format datum &rest arguments)
  (restart-case (apply #'error datum arguments)
    (continue () :report (lambda (s) (apply #'format s continue-format arguments)) nil)))

;; Like DEFSTRUCT (40-struct.lisp): the expansion calls
;; %DEFINE-CONDITION-FORM with the whole form, which makes the initforms and
;; the report into functions (in the null lexical environment, while
;; definitions are recorded), then defines the type and its readers.  A
;; report naming a function is looked up when a report is made, so the
;; function may be defined later (as an imported world defines it).
(defun %condition-slot-specs (whole)
  (mapcar (lambda (s)
            (let ((opts (if (consp s) (cdr s) nil)))
              (unless (and (symbolp (if (consp s) (car s) s)) (listp opts))
                (error "DEFINE-CONDITION: bad slot description ~S" s))
              (list (if (consp s) (car s) s) opts (member :initform opts))))
          (car (cdr (cdr (cdr whole))))))

(defmacro define-condition (&whole whole name parents slots &rest options)
  (declare (ignore name parents slots options))
  `(%define-condition-form ',whole))

;; The :initarg options of a slot's options: NIL, one, or the list of them
;; (the layout's initarg entry for the slot).
(defun %slot-initargs (options)
  (let ((all nil))
    (do ((o options (cdr (cdr o)))) ((null o))
      (when (eq (car o) :initarg) (push (car (cdr o)) all)))
    (if (cdr all) (nreverse all) (car all))))

(defun %define-condition-form (whole)
  (unless (and (consp whole) (eq (car whole) 'define-condition) (consp (cdr whole))
               (symbolp (car (cdr whole))) (consp (cdr (cdr whole))) (listp (car (cdr (cdr whole))))
               (consp (cdr (cdr (cdr whole)))) (listp (car (cdr (cdr (cdr whole)))))
               (listp (cdr (cdr (cdr (cdr whole))))))
    (error "~S is not a DEFINE-CONDITION form" whole))
  (let* ((name (car (cdr whole)))
         (parents (car (cdr (cdr whole))))
         (options (cdr (cdr (cdr (cdr whole)))))
         (report-option (car (cdr (assoc :report options))))
         (specs (%condition-slot-specs whole))
         (readers nil))
    (dolist (spec specs)
      (do ((o (car (cdr spec)) (cdr (cdr o)))) ((null o))
        (when (member (car o) '(:reader :accessor))
          (push (list (car (cdr o)) (car spec) (eq (car o) :accessor)) readers))))
    (let ((thunks (mapcar (lambda (spec)
                            (if (car (cdr (cdr spec))) (eval `(lambda () ,(car (cdr (car (cdr (cdr spec))))))) nil))
                          specs))
          (report (cond ((null report-option) nil)
                        ((stringp report-option) report-option)
                        ((symbolp report-option)
                         (lambda (c s) (funcall report-option c s)))
                        (t (eval `(function ,report-option))))))
      (%define-condition name parents
                         (mapcar (lambda (spec thunk) (list (car spec) (%slot-initargs (car (cdr spec))) thunk))
                                 specs thunks)
                         report
                         ;; (:default-initargs key form ...): (key . thunk) pairs
                         (let ((pairs nil))
                           (do ((d (cdr (assoc :default-initargs options)) (cdr (cdr d)))) ((null d))
                             (push (cons (car d) (eval `(lambda () ,(car (cdr d))))) pairs))
                           (nreverse pairs)))
      (let ((%defining-type (append (mapcar #'car readers)
                                    (mapcan (lambda (r) (if (car (cdr (cdr r))) (list (list 'setf (car r))) nil))
                                            readers))))
        (dolist (r readers)
          (eval `(defun ,(car r) (c) (slot-value c ',(car (cdr r)))))
          (when (car (cdr (cdr r)))
            (eval `(defun (setf ,(car r)) (v c) (%set-slot-value c ',(car (cdr r)) v)))))))
    (%record-type name whole)
    name))

(defmacro check-type (place type &optional type-string)
  (let ((v (gensym "V")))
    `(do ((,v ,place ,place)) ((typep ,v ',type) nil)
       ;; worded as SBCL words it: programs print the report
       (restart-case (error 'type-error :datum ,v :expected-type ',type
                            :format-control "The value of ~S is ~S, which is not ~A."
                            :format-arguments (list ',place ,v
                                                    ,(or type-string
                                                         `(format nil "of type ~S" ',type))))
         (store-value (new)
           :report (lambda (s) (format s "Supply a new value for ~S." ',place))
           (setf ,place new))))))

(defun %assert-call-p (test)
  ;; a test that is a function call: its arguments are shown in the report
  (and (consp test) (symbolp (car test)) (listp (cdr test))
       (not (macro-function (car test))) (not (special-operator-p (car test)))))

(defun %assert-report (test values)
  ;; "The assertion (> X 2) failed with X = 1.", as SBCL words it: the
  ;; arguments of a function call that are not constants, with their values
  (let ((pairs (mapcan (lambda (arg value) (if (constantp arg) nil (list arg value)))
                       (if (%assert-call-p test) (cdr test) nil) values)))
    (if pairs
        (format nil "The assertion ~S failed with ~{~S = ~S~^, ~}." test pairs)
        (format nil "The assertion ~S failed." test))))

(defmacro assert (test &optional places datum &rest arguments)
  ;; A function call's arguments are evaluated once, before the call, so
  ;; the report can show their values.  CHECK is NIL when the test holds,
  ;; else (:failed . argument-values).
  (let* ((call (%assert-call-p test))
         (temps (if call (mapcar (lambda (a) (declare (ignore a)) (gensym "ARG")) (cdr test)) nil))
         (check (if call
                    `(let ,(mapcar #'list temps (cdr test))
                       (if (,(car test) ,@temps) nil (list :failed ,@temps)))
                    `(if ,test nil (list :failed))))
         (failed (gensym "FAILED")))
    `(do ((,failed ,check ,check)) ((not ,failed) nil)
       (restart-case ,(if datum
                          `(error ,datum ,@arguments)
                          `(error "~A" (%assert-report ',test (cdr ,failed))))
       (continue ()
         :report "Retry the assertion."
         ,@(mapcar (lambda (p) `(setf ,p ,p)) places)
         nil)))))

;;; The restarts of the errors the evaluator signals from C (cond.c calls
;;; these on the slow path only: a read of an unbound variable, a call of an
;;; undefined function, a slot-value of an unbound slot).  Each returns what
;;; the signalling site goes on with; the names, order and reports follow
;;; SBCL's, so that a program written against one finds the same restarts.

;; The function NAME names now, or NIL (a macro or special operator is none).
(defun %current-function (name)
  (and (fboundp name)
       (not (and (symbolp name) (or (macro-function name) (special-operator-p name))))
       (fdefinition name)))

;; A call of NAME, undefined: the function the call site calls instead, with
;; the call's arguments.  CONTINUE retries with NAME's definition then
;; (signalling again while there is none); RETURN-VALUE and RETURN-NOTHING
;; give one that ignores the arguments.
(defun %undefined-function-callee (name)
  (do () (nil)
    (let ((f (%current-function name)))
      (when f (return f)))
    (restart-case (error 'undefined-function :name name)
      (continue ()
        :report (lambda (s) (format s "Retry calling ~S." name))
        nil)
      (use-value (function)
        :report "Call specified function."
        ;; a function designator: a symbol is called through apply
        (return (if (functionp function)
                    function
                    (lambda (&rest args) (apply function args)))))
      (return-value (&rest values)
        :report "Return specified values."
        (return (lambda (&rest args) (declare (ignore args)) (values-list values))))
      (return-nothing ()
        :report "Return zero values."
        (return (lambda (&rest args) (declare (ignore args)) (values)))))))

;; The function NAME names, for fdefinition, symbol-function and #'NAME.
(defun %undefined-function-value (name)
  (do () (nil)
    (let ((f (%current-function name)))
      (when f (return f)))
    (restart-case (error 'undefined-function :name name)
      (continue ()
        :report (lambda (s) (format s "Retry using ~S." name))
        nil)
      (use-value (function)
        :report "Use specified function"
        (return function)))))

;; The value of the global variable NAME, unbound.
(defun %unbound-variable-value (name)
  (do () (nil)
    (when (boundp name) (return (symbol-value name)))
    (restart-case (error 'unbound-variable :name name)
      (continue ()
        :report (lambda (s) (format s "Retry using ~S." name))
        nil)
      (use-value (value)
        :report "Use specified value."
        (return value))
      (store-value (value)
        :report "Set specified value and use it."
        (setf (symbol-value name) value)
        (return value)))))

;; The default slot-unbound method signals CONDITION (an unbound-slot for
;; INSTANCE's slot NAME); its value is slot-value's.
(defun %unbound-slot-value (condition instance name)
  (restart-case (error condition)
    (use-value (value)
      :report "Return a value as the slot-value."
      value)
    (store-value (value)
      :report "Store and return a value as the slot-value."
      (setf (slot-value instance name) value))))

;; A pause's frame (frames.c): a repair evaluated in it sees the frame's
;; locals as symbol macros expanding into (%frame-local serial frame k), so
;; that a setq of one writes the frame's variable.
(defsetf %frame-local %set-frame-local)

;; jiti_eval_in_frame: one form of SRC evaluated in a pause's FRAME.
(defun %frame-eval (src frame)
  (eval (%frame-form (%read-source-from-string src) frame)))

;;; An interactive interrupt (jiti interrupt; Ctrl-C in jiti eval and jiti
;;; repl): the evaluator calls %interactive-interrupt at the step where it
;;; finds one (state.c, jt_take_interrupt).  It goes to the debugger as
;;; BREAK does, no handler seeing it, with CONTINUE going on exactly where
;;; the computation stopped.  A serious condition, not an error.
(define-condition interactive-interrupt (serious-condition) ()
  (:report "Interactive interrupt."))

;;; Written with the primitives, not WITH-SIMPLE-RESTART: its first call
;;; is analysed then, and the expansion of RESTART-CASE would make the
;;; first interrupt of a world wait for it (a tenth of a second).
(defun %interactive-interrupt ()
  (block interrupted
    (%restart-bind
     (list (%make-restart 'continue (lambda () (return-from interrupted nil))
                          "Continue the interrupted computation." nil nil nil))
     (lambda () (invoke-debugger (make-condition 'interactive-interrupt))))))

;; (break &optional format-control &rest format-arguments) => NIL: the
;; host's debugger (a pause in a world) with a continue restart that
;; returns NIL, past the handlers and *debugger-hook*.  With no debugger
;; (jiti run) the break is reported on *error-output* and returns NIL.
(defun break (&optional (format-control "Break") &rest format-arguments)
  (let ((*debugger-hook* nil)
        (c (make-condition 'simple-condition :format-control format-control
                                             :format-arguments format-arguments)))
    (with-simple-restart (continue "Return from BREAK.")
      (%break c))
    nil))
