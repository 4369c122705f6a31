;;; A grade book: students in a hash table, averages as floats, letter
;;; grades, rankings, a histogram and a report, as models write them.
(defpackage :grades (:use :cl))
(in-package :grades)

(defstruct student name (scores '()))

(defparameter *book* (make-hash-table :test #'equal))

(defun add-score (name score)
  (let ((s (or (gethash name *book*)
               (setf (gethash name *book*) (make-student :name name)))))
    (push score (student-scores s))))

(loop for (name . scores) in '(("Alice" 92 88 95 79) ("Bob" 75 64 81 70) ("Carmen" 88 91 84 97)
                               ("Dmitri" 55 62 48 70) ("Eve" 100 98 99 97) ("Farid" 81 85 79 88))
      do (dolist (sc scores) (add-score name sc)))

(defun average (s) (/ (reduce #'+ (student-scores s)) (float (length (student-scores s)))))

(defun letter (avg)
  (cond ((>= avg 90) "A") ((>= avg 80) "B") ((>= avg 70) "C") ((>= avg 60) "D") (t "F")))

(defun students () (loop for s being the hash-values of *book* collect s))

(format t "~&~10a ~20a ~7a ~5a~%" "Name" "Scores" "Average" "Grade")
(format t "~a~%" (make-string 45 :initial-element #\-))
(dolist (s (sort (students) #'string< :key #'student-name))
  (let ((avg (average s)))
    (format t "~10a ~20a ~7,2f ~5a~%" (student-name s) (reverse (student-scores s)) avg (letter avg))))

(let* ((avgs (mapcar #'average (students)))
       (n (length avgs))
       (mean (/ (reduce #'+ avgs) n))
       (var (/ (reduce #'+ (mapcar (lambda (a) (expt (- a mean) 2)) avgs)) n)))
  (format t "~%Class mean: ~a (~,1f)~%" mean mean)
  (format t "Std dev: ~a~%" (sqrt var))
  (format t "Best: ~a~%" (student-name (first (sort (students) #'> :key #'average))))
  (format t "Averages: ~a~%" (sort (copy-list avgs) #'>)))

(format t "~%Ranking:~%")
(loop for s in (sort (students) #'> :key #'average)
      for rank from 1
      do (format t "~:r ~12t~a~30t~5,1f~%" rank (student-name s) (average s)))

(format t "~%Histogram of all scores:~%")
(let ((buckets (make-array 5 :initial-element 0)))
  (dolist (s (students))
    (dolist (sc (student-scores s))
      (incf (aref buckets (min 4 (max 0 (- (floor sc 10) 5)))))))
  (loop for i from 0 below 5
        for lo = (+ 50 (* i 10))
        do (format t "~3d-~3d: ~a ~d~%" lo (if (= i 4) 100 (+ lo 9))
                   (make-string (aref buckets i) :initial-element #\#) (aref buckets i))))

(let ((by-grade (make-hash-table :test #'equal)))
  (dolist (s (students)) (push (student-name s) (gethash (letter (average s)) by-grade)))
  (format t "~%~{~a: ~{~a~^, ~}~%~}"
          (loop for g in '("A" "B" "C" "D" "F")
                when (gethash g by-grade) collect g and collect (sort (gethash g by-grade) #'string<))))

(format t "Curve +5%: ~{~,1f~^ ~}~%" (mapcar (lambda (s) (* 1.05 (average s))) (sort (students) #'string< :key #'student-name)))
(format t "Passing: ~d of ~d (~,1f%)~%"
        (count-if (lambda (s) (>= (average s) 60)) (students)) (hash-table-count *book*)
        (* 100.0 (/ (count-if (lambda (s) (>= (average s) 60)) (students)) (hash-table-count *book*))))
(print (mapcar (lambda (s) (list (student-name s) (average s))) (sort (students) #'string< :key #'student-name)))
(terpri)
