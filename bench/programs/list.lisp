;;; list: build a 1,000,000-element list, map 1+ over it, sum it; 5 times.
;;; Measures: consing, mapcar with a built-in function, list traversal, GC.
(defun build-list (n)
  (let ((l nil))
    (dotimes (i n)
      (push i l))
    l))

(defun sum-list (l)
  (let ((s 0))
    (dolist (x l)
      (setq s (+ s x)))
    s))

(defun run-list (reps n)
  (let ((total 0))
    (dotimes (r reps)
      (setq total (+ total (sum-list (mapcar #'1+ (build-list n))))))
    total))

(format t "~d~%" (run-list 5 1000000))
