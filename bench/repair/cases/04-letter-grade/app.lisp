;;; Course gradebook.

(defvar *scores* (make-hash-table :test #'equal))

(defun record-score (student score)
  (setf (gethash student *scores*) score))

(defun letter-grade (score)
  "The letter for a score from 0 to 100: A from 90, B from 80, C from 70,
D from 60, F below 60."
  (ecase (floor score 10)
    ((9 10) "A")
    (8 "B")
    (7 "C")
    (6 "D")))

(defun report-card (student)
  (format nil "~a: ~a" student (letter-grade (gethash student *scores*))))

(record-score "ada" 97)
(record-score "alan" 84)
(record-score "kurt" 51)
