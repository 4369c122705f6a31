;;;; environment.lisp -- the clock and the environment functions.
(suite "environment")

;;; universal time
(is (integerp (get-universal-time)))
(is (> (get-universal-time) (encode-universal-time 0 0 0 1 1 2020 0)))
(is-equal (multiple-value-list (decode-universal-time 0 0)) '(0 0 0 1 1 1900 0 nil 0))
(is-eql (encode-universal-time 0 0 0 1 1 1900 0) 0)
(is-eql (encode-universal-time 0 0 0 1 1 1970 0) 2208988800)
(is-equal (multiple-value-list (decode-universal-time (encode-universal-time 5 4 3 2 1 2026 0) 0))
          '(5 4 3 2 1 2026 4 nil 0))
(is-equal (multiple-value-list (decode-universal-time (encode-universal-time 59 59 23 29 2 2024 0) 0))
          '(59 59 23 29 2 2024 3 nil 0))
(is-eql (- (encode-universal-time 0 0 0 1 1 2000 5) (encode-universal-time 0 0 0 1 1 2000 0)) (* 5 3600))
(is-equal (subseq (multiple-value-list (decode-universal-time (encode-universal-time 0 30 12 15 6 2010 -2) -2)) 0 6)
          '(0 30 12 15 6 2010))
(is-eql (nth 8 (multiple-value-list (decode-universal-time 0 7/2))) 7/2)
(is (let ((u (get-universal-time)))
      (= (length (multiple-value-list (decode-universal-time u))) 9)))
(is (= (length (multiple-value-list (get-decoded-time))) 9))
(signals type-error (decode-universal-time -1))
(signals type-error (encode-universal-time 60 0 0 1 1 2000 0))
(signals type-error (encode-universal-time 0 0 0 1 13 2000 0))

;;; internal time
(is (integerp (get-internal-real-time)))
(is (integerp (get-internal-run-time)))
(is (<= (get-internal-real-time) (get-internal-real-time)))
(is (>= internal-time-units-per-second 1000))
(is-eql (sleep 0) nil)
(is-eql (sleep 1/100) nil)
(signals type-error (sleep -1))
(is-equal (let ((*trace-output* (make-string-output-stream)))
            (multiple-value-list (time (values 1 2))))
          '(1 2))

;;; the implementation and the machine
(is (stringp (lisp-implementation-type)))
(is (stringp (lisp-implementation-version)))
(is (typep (machine-type) '(or null string)))
(is (typep (machine-version) '(or null string)))
(is (typep (machine-instance) '(or null string)))
(is (typep (software-type) '(or null string)))
(is (typep (software-version) '(or null string)))
(is (typep (short-site-name) '(or null string)))
(is (typep (long-site-name) '(or null string)))

;;; room, apropos, describe
(is (plusp (length (with-output-to-string (*standard-output*) (room)))))
(is (member 'make-hash-table (apropos-list "MAKE-HASH-T")))
(is (member 'make-hash-table (apropos-list "make-hash-t")))
(is (search "MAKE-HASH-TABLE" (with-output-to-string (*standard-output*) (apropos "MAKE-HASH-TABLE"))))
(is (search "CAR" (with-output-to-string (s) (describe 'car s))))
(is-equal (multiple-value-list (describe 42 (make-string-output-stream))) '())

;;; trace and untrace
(defun env-traced (x) (if (> x 0) (* 2 (env-traced (1- x))) 1))
(defun (setf env-traced) (v x) (setf (car x) v))
(untrace)
(is-equal (trace env-traced (setf env-traced)) '(env-traced (setf env-traced)))
(is (let ((l (trace))) (and (member 'env-traced l) (member '(setf env-traced) l :test #'equal) (= (length l) 2))))
(is (let ((out (with-output-to-string (*trace-output*) (env-traced 2))))
      (and (search "ENV-TRACED" out) (search "4" out))))
(is-eql (let ((*trace-output* (make-string-output-stream))) (env-traced 3)) 8)
(is (search "SETF" (with-output-to-string (*trace-output*) (setf (env-traced (list 1)) 2))))
(untrace env-traced)
(is-equal (trace) '((setf env-traced)))
(is-equal (with-output-to-string (*trace-output*) (env-traced 2)) "")
(untrace)
(is-equal (trace) '())
(is-equal (with-output-to-string (*trace-output*) (setf (env-traced (list 1)) 2)) "")
(signals warning (trace env-no-such-function))
(is-equal (trace) '())

;;; *debugger-hook* comes before the debugger, bound to NIL while it runs
;;; (SBCL's --non-interactive ends the process before it)
#+jiti
(is-equal (catch :hooked
            (let ((*debugger-hook* (lambda (c h) (throw :hooked (list (princ-to-string c) (functionp h) *debugger-hook*)))))
              (invoke-debugger (make-condition 'simple-error :format-control "env ~a" :format-arguments '(1)))))
          '("env 1" t nil))
#+jiti
(is-equal (catch :hooked
            (let ((*debugger-hook* (lambda (c h) (declare (ignore h)) (throw :hooked (type-of c)))))
              (invoke-debugger (make-condition 'simple-warning :format-control "w"))))
          'simple-warning)

;;; disassemble, step; documentation of objects named by their names
(is-eql (let ((*standard-output* (make-string-output-stream))) (disassemble 'env-traced)) nil)
(is (stringp (with-output-to-string (*standard-output*) (disassemble '(lambda (x) x)))))
(signals type-error (disassemble 42))
(is-eql (step (+ 1 2)) 3)
(defun env-documented () nil)
(is-equal (setf (documentation #'env-documented t) "about it") "about it")
(is-equal (documentation 'env-documented 'function) "about it")
(is-equal (documentation #'env-documented t) "about it")
(defclass env-doc-class () ())
(setf (documentation (find-class 'env-doc-class) t) "a class")
(is-equal (documentation 'env-doc-class 'type) "a class")
(is-equal (setf (documentation (lambda () 1) t) "kept or not") "kept or not")

(done)
