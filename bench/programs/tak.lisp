;;; tak: Takeuchi function, (tak 18 12 6) repeated 65 times (results summed).
;;; Measures: deep non-tail recursion with three arguments.
(defun tak (x y z)
  (if (not (< y x))
      z
      (tak (tak (- x 1) y z)
           (tak (- y 1) z x)
           (tak (- z 1) x y))))

(defun run-tak (times)
  (let ((sum 0))
    (dotimes (i times)
      (setq sum (+ sum (tak 18 12 6))))
    sum))

(format t "~d~%" (run-tak 65))
