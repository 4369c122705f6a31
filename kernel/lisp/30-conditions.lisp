;;;; 30-conditions.lisp — the condition system's macros, on top of the C
;;;; primitives %handler-bind, %restart-bind and %make-restart (cond.c).
;;;;
;;;; handler-case and restart-case transfer control with a non-local GO out
;;;; of a closure, so unwind-protect cleanups run on the way.

(defmacro handler-bind (bindings &body body)
  `(%handler-bind (list ,@(mapcar (lambda (b) `(cons ',(car b) ,(car (cdr b)))) bindings))
                  (lambda () ,@body)))

(defmacro handler-case (form &rest clauses)
  (let* ((no-error (find :no-error clauses :key #'car))
         (clauses (remove :no-error clauses :key #'car))
         (block (gensym "HANDLER-CASE"))
         (cvar (gensym "CONDITION"))
         (tags (mapcar (lambda (c) (declare (ignore c)) (gensym "CLAUSE")) clauses)))
    (let ((protected
            (if no-error
                `(multiple-value-call (lambda ,(car (cdr no-error)) ,@(cdr (cdr no-error)))
                   ,form)
                form)))
      (if (null clauses)
          protected
          `(block ,block
             (let ((,cvar nil))
               (declare (ignorable ,cvar))
               (tagbody
                  (return-from ,block
                    (%handler-bind
                     (list ,@(mapcar (lambda (c tag)
                                       `(cons ',(car c) (lambda (c) (setq ,cvar c) (go ,tag))))
                                     clauses tags))
                     (lambda () ,protected)))
                  ,@(mapcan (lambda (c tag)
                              (let ((var (car (car (cdr c)))) (body (cdr (cdr c))))
                                (list tag
                                      `(return-from ,block
                                         ,(if var
                                              `(let ((,var ,cvar)) ,@body)
                                              `(locally ,@body))))))
                            clauses tags))))))))

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

(defmacro restart-case (form &rest clauses)
  (let* ((block (gensym "RESTART-CASE"))
         (args (gensym "ARGS"))
         (tags (mapcar (lambda (c) (declare (ignore c)) (gensym "RESTART")) clauses)))
    `(block ,block
       (let ((,args nil))
         (tagbody
            (return-from ,block
              (%restart-bind
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
                        clauses tags))
               (lambda () ,form)))
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
                                        ,(%report-form (getf opts :report-function))
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
    (restart-case (signal c)
      (muffle-warning () :report "Ignore the warning." (return-from warn nil)))
    (format *error-output* "~&WARNING: ~a~%" c)
    nil))

(defun cerror (continue-format datum &rest arguments)
  (restart-case (apply #'error datum arguments)
    (continue () :report (lambda (s) (apply #'format s continue-format arguments)) nil)))

(defmacro define-condition (&whole whole name parents slots &rest options)
  (let ((report (car (cdr (assoc :report options))))
        (readers nil))
    (dolist (s slots)
      (let ((sname (if (consp s) (car s) s)) (opts (if (consp s) (cdr s) nil)))
        (do ((o opts (cdr (cdr o)))) ((null o))
          (when (member (car o) '(:reader :accessor))
            (push (list (car (cdr o)) sname (eq (car o) :accessor)) readers)))))
    `(progn
       (%define-condition
        ',name ',parents
        (list ,@(mapcar (lambda (s)
                          (let* ((sname (if (consp s) (car s) s))
                                 (opts (if (consp s) (cdr s) nil))
                                 (initform (member :initform opts)))
                            `(list ',sname ',(getf opts :initarg)
                                   ,(if initform `(lambda () ,(car (cdr initform))) nil))))
                        slots))
        ,(cond ((null report) nil)
               ((stringp report) report)
               (t `(function ,report))))
       (let ((%defining-type ',name))
         ,@(mapcan (lambda (r)
                     (cons `(defun ,(car r) (c) (slot-value c ',(car (cdr r))))
                           (if (car (cdr (cdr r)))
                               (list `(defun (setf ,(car r)) (v c) (%set-slot-value c ',(car (cdr r)) v)))
                               nil)))
                   readers))
       (%record-type ',name ',whole)
       ',name)))

(defmacro check-type (place type &optional type-string)
  (let ((v (gensym "V")))
    `(do ((,v ,place ,place)) ((typep ,v ',type) nil)
       (restart-case (error 'type-error :datum ,v :expected-type ',type
                            ,@(if type-string
                                  `(:format-control "The value ~S is not ~A."
                                    :format-arguments (list ,v ,type-string))
                                  nil))
         (store-value (new)
           :report (lambda (s) (format s "Supply a new value for ~S." ',place))
           (setf ,place new))))))

(defmacro assert (test &optional places datum &rest arguments)
  `(do () (,test nil)
     (restart-case ,(if datum
                        `(error ,datum ,@arguments)
                        `(error "The assertion ~S failed." ',test))
       (continue ()
         :report "Retry the assertion."
         ,@(mapcar (lambda (p) `(setf ,p ,p)) places)
         nil))))
