;;;; restarts.lisp -- the restarts the system establishes around the errors
;;;; it signals itself: an undefined function called or looked up, an
;;;; unbound variable read, an unbound slot read.  Asserts the restarts'
;;;; names (as SBCL names them, compared by symbol name: RETURN-VALUE and
;;;; RETURN-NOTHING are implementation symbols), their order and reports, and
;;;; what invoking each one does.  Portable: must pass under SBCL too.
(suite "restarts")

;;; ------------------------------------------------------------ helpers

;; The restarts established for the error THUNK signals: those active when
;; it is signalled less those active around the call (SBCL has top-level
;; ones), innermost first, each as (NAME-STRING REPORT).
(defun rs-offered (thunk)
  (let ((outer (compute-restarts)))
    (block offered
      (handler-bind ((error (lambda (c)
                              (return-from offered
                                (mapcar (lambda (r)
                                          (list (symbol-name (restart-name r))
                                                (let ((*print-pretty* nil)) (princ-to-string r))))
                                        (remove-if (lambda (r) (member r outer))
                                                   (compute-restarts c)))))))
        (funcall thunk)
        :no-error))))

(defun rs-find (name condition)
  (or (find name (compute-restarts condition)
            :key (lambda (r) (symbol-name (restart-name r))) :test #'string=)
      (error "no restart named ~A" name)))

;; Evaluate BODY; each error it signals invokes the restart named NAME (a
;; string) with ARGS.  The values of BODY.
(defmacro rs-with-restart ((name &rest args) &body body)
  `(handler-bind ((error (lambda (c) (invoke-restart (rs-find ,name c) ,@args))))
     ,@body))

(defun rs-names (offered) (mapcar #'car offered))

;;; ------------------------------------------------- undefined function

;; (SBCL's evaluator, which the harness selects, looks the function up as
;; fdefinition does; its compiler offers the call's restarts, as jiti does:
;; so the direct calls are compiled.)
(defun rs-compiled (form) (compile nil `(lambda () ,form)))

(is-equal (rs-offered (rs-compiled '(rs-undefined-fn 1)))
          '(("CONTINUE" "Retry calling RS-UNDEFINED-FN.")
            ("USE-VALUE" "Call specified function.")
            ("RETURN-VALUE" "Return specified values.")
            ("RETURN-NOTHING" "Return zero values.")))
;; jiti's evaluator offers the call's restarts too
#+jiti
(is-equal (rs-names (rs-offered (lambda () (rs-undefined-fn 1))))
          '("CONTINUE" "USE-VALUE" "RETURN-VALUE" "RETURN-NOTHING"))
;; funcall and apply of an undefined symbol offer the same
(is-equal (rs-names (rs-offered (lambda () (funcall 'rs-undefined-fn 1))))
          '("CONTINUE" "USE-VALUE" "RETURN-VALUE" "RETURN-NOTHING"))
(is-equal (rs-names (rs-offered (lambda () (apply 'rs-undefined-fn 1 '(2)))))
          '("CONTINUE" "USE-VALUE" "RETURN-VALUE" "RETURN-NOTHING"))
;; the condition is still the undefined-function of the name
(is-equal (block b (handler-bind ((undefined-function
                                    (lambda (c) (return-from b (list (type-of c) (cell-error-name c))))))
                     (rs-undefined-fn 1)))
          '(undefined-function rs-undefined-fn))

;; USE-VALUE calls the given function with the call's arguments
(is-equal (rs-with-restart ("USE-VALUE" #'list) (rs-undefined-fn 1 2)) '(1 2))
(is-equal (rs-with-restart ("USE-VALUE" #'list) (funcall 'rs-undefined-fn 3 4)) '(3 4))
(is-equal (rs-with-restart ("USE-VALUE" 'list) (funcall (rs-compiled '(rs-undefined-fn 5 6)))) '(5 6))
(is-equal (rs-with-restart ("USE-VALUE" #'+) (apply 'rs-undefined-fn 1 '(2 3))) 6)
;; RETURN-VALUE returns the given values, RETURN-NOTHING none
(is-equal (multiple-value-list (rs-with-restart ("RETURN-VALUE" 5 6) (funcall (rs-compiled '(rs-undefined-fn 1)))))
          '(5 6))
(is-equal (multiple-value-list (rs-with-restart ("RETURN-NOTHING") (funcall (rs-compiled '(rs-undefined-fn 1)))))
          '())
(is-equal (multiple-value-list (rs-with-restart ("RETURN-VALUE" 7) (funcall 'rs-undefined-fn 1))) '(7))
;; CONTINUE calls the definition the name has then; while it has none, the
;; error is signalled again, with the restarts again
(is-equal (let ((n 0))
            (handler-bind ((undefined-function
                             (lambda (c)
                               (when (= (incf n) 2) (setf (fdefinition 'rs-later-fn) (lambda (x) (* x 10))))
                               (continue c))))
              (list (rs-later-fn 4) n)))
          '(40 2))
(is-equal (let ((n 0))
            (handler-bind ((undefined-function
                             (lambda (c)
                               (when (= (incf n) 3) (setf (fdefinition 'rs-later-fn2) #'list))
                               (continue c))))
              (list (funcall 'rs-later-fn2 1 2) n)))
          '((1 2) 3))
;; nothing of it stays defined by the restarts that do not define it
(is (not (fboundp 'rs-undefined-fn)))

;; fdefinition and symbol-function of an undefined name
(is-equal (rs-offered (lambda () (fdefinition 'rs-undefined-fn)))
          '(("CONTINUE" "Retry using RS-UNDEFINED-FN.")
            ("USE-VALUE" "Use specified function")))
(is-equal (rs-names (rs-offered (lambda () (symbol-function 'rs-undefined-fn))))
          '("CONTINUE" "USE-VALUE"))
(is-eql (rs-with-restart ("USE-VALUE" #'car) (fdefinition 'rs-undefined-fn)) #'car)
(is-eql (let ((n 0))
          (handler-bind ((undefined-function
                           (lambda (c)
                             (when (= (incf n) 2) (setf (fdefinition 'rs-later-fn3) #'cdr))
                             (continue c))))
            (symbol-function 'rs-later-fn3)))
        #'cdr)

;;; ---------------------------------------------------- unbound variable

(is-equal (rs-offered (lambda () (+ rs-unbound-var 1)))
          '(("CONTINUE" "Retry using RS-UNBOUND-VAR.")
            ("USE-VALUE" "Use specified value.")
            ("STORE-VALUE" "Set specified value and use it.")))
(is-equal (rs-names (rs-offered (lambda () (symbol-value 'rs-unbound-var))))
          '("CONTINUE" "USE-VALUE" "STORE-VALUE"))
;; USE-VALUE uses the value once, leaving the variable unbound
(is-eql (rs-with-restart ("USE-VALUE" 7) (+ rs-unbound-var 1)) 8)
(is (not (boundp 'rs-unbound-var)))
(is-eql (rs-with-restart ("USE-VALUE" 7) (symbol-value 'rs-unbound-var)) 7)
(is (not (boundp 'rs-unbound-var)))
;; STORE-VALUE sets the variable too
(is-eql (rs-with-restart ("STORE-VALUE" 7) (+ rs-stored-var 1)) 8)
(is-eql (symbol-value 'rs-stored-var) 7)
(is-eql (rs-with-restart ("STORE-VALUE" 9) (symbol-value 'rs-stored-var2)) 9)
(is-eql (symbol-value 'rs-stored-var2) 9)
;; CONTINUE reads the variable again
(is-equal (let ((n 0))
            (handler-bind ((unbound-variable
                             (lambda (c)
                               (when (= (incf n) 2) (setf (symbol-value 'rs-later-var) 5))
                               (continue c))))
              (list rs-later-var n)))
          '(5 2))
(is-equal (let ((n 0))
            (handler-bind ((unbound-variable
                             (lambda (c) (if (< (incf n) 3) (continue c) (use-value 9 c)))))
              (list (+ rs-unbound-var 1) n)))
          '(10 3))
;; the standard functions find them by name
(is-eql (handler-bind ((unbound-variable (lambda (c) (store-value 3 c))))
          (* rs-stored-var3 2))
        6)
(is-eql (symbol-value 'rs-stored-var3) 3)

;;; -------------------------------------------------------- unbound slot

(defclass rs-point () ((x :initarg :x)))

(is-equal (rs-offered (lambda () (slot-value (make-instance 'rs-point) 'x)))
          '(("USE-VALUE" "Return a value as the slot-value.")
            ("STORE-VALUE" "Store and return a value as the slot-value.")))
(is-equal (let ((p (make-instance 'rs-point)))
            (list (rs-with-restart ("USE-VALUE" 3) (slot-value p 'x)) (slot-boundp p 'x)))
          '(3 nil))
(is-equal (let ((p (make-instance 'rs-point)))
            (list (rs-with-restart ("STORE-VALUE" 4) (slot-value p 'x)) (slot-value p 'x)))
          '(4 4))
(is-eql (handler-bind ((unbound-slot (lambda (c) (use-value 5 c))))
          (slot-value (make-instance 'rs-point) 'x))
        5)

;;; ----------------------------- the errors with restarts of their own stay

;; check-type keeps its STORE-VALUE, cerror its CONTINUE
(is-equal (rs-names (rs-offered (lambda () (let ((x 1)) (check-type x string) x))))
          '("STORE-VALUE"))
(is-equal (rs-names (rs-offered (lambda () (cerror "Go on." "bad"))))
          '("CONTINUE"))

;; A restart-case form that is a macro form expanding into ERROR associates
;; the condition with the restarts.
(is-eql (macrolet ((m (&rest args) (cons 'error args)))
          (handler-bind ((error (lambda (c2) (invoke-restart (find-restart 'foo c2)))))
            (handler-bind ((error (lambda (c) (declare (ignore c)) (error "Blah"))))
              (restart-case (restart-case (m "Boo!") (foo () 'bad))
                (foo () 'good)))))
        'good)
;; RESTART-BIND's :report-function is a form, evaluated once, giving a function.
(is-equal (let ((i 0))
            (list (with-output-to-string (s)
                    (restart-bind ((foo (lambda () nil)
                                        :report-function (progn (incf i)
                                                                (lambda (s) (format s "A report")))))
                      (let ((*print-escape* nil)) (format s "~A" (find-restart 'foo)))))
                  i))
          '("A report" 1))

(done)
