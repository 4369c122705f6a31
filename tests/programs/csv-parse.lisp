;;; Parse CSV-like text with string streams, as a model would write it.
(defparameter *data* "name,age,city
alice,30,paris
bob,25,berlin
carol,,rome
dave,41,oslo")

(defun split-string (string &optional (separator #\,))
  (loop with start = 0
        for pos = (position separator string :start start)
        collect (subseq string start pos)
        while pos
        do (setf start (1+ pos))))

(defun parse-csv (text)
  (with-input-from-string (in text)
    (let ((header (split-string (read-line in))))
      (loop for line = (read-line in nil nil)
            while line
            collect (mapcar #'cons header (split-string line))))))

(defun field (row name) (cdr (assoc name row :test #'string=)))

(let ((rows (parse-csv *data*)))
  (format t "~d rows~%" (length rows))
  (dolist (row rows)
    (let ((age (parse-integer (field row "age") :junk-allowed t)))
      (format t "~a (~a): ~a~%" (string-capitalize (field row "name"))
              (field row "city") (if age age "unknown"))))
  (let ((ages (remove nil (mapcar (lambda (r) (parse-integer (field r "age") :junk-allowed t)) rows))))
    (format t "mean age: ~,1f~%" (/ (reduce #'+ ages) (length ages)))))

;; tokens with read-from-string and a string input stream
(with-input-from-string (s "(1 2 3) foo \"bar\" 4.5")
  (loop for x = (read s nil :eof)
        until (eq x :eof)
        do (format t "~s " x))
  (terpri))

(let ((pos 0))
  (with-input-from-string (s "hello world" :index pos :start 6)
    (format t "~a~%" (read-line s)))
  (format t "index ~d~%" pos))

(with-input-from-string (s "abc")
  (format t "~a ~a ~a ~a~%" (read-char s) (peek-char nil s) (read-char s) (read-char s nil :end))
  (format t "~a~%" (read-char s nil :end)))

(format t "~s~%" (with-output-to-string (out)
                   (dotimes (i 3) (format out "[~d]" i))))
