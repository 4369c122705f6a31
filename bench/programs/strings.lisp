;;; strings: 200,000 formatted strings "item-<i>" made with (format nil ...)
;;; and appended to a with-output-to-string stream; print the final length.
;;; Measures: format directive processing, string allocation, string streams.
(defun run-strings (n)
  (let ((out (with-output-to-string (s)
               (dotimes (i n)
                 (write-string (format nil "~a-~d" "item" i) s)))))
    (length out)))

(format t "~d~%" (run-strings 200000))
