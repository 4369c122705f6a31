;;; Club election: each ballot names one person.  Write-in names count
;;; like any other.

(defparameter *candidates* '("Ada" "Alan" "Grace"))

(defun tally (ballots)
  "Votes per name, most votes first (ties in alphabetical order), every
candidate listed even without votes, write-in names included."
  (let ((counts (make-hash-table :test #'equal)))
    (dolist (c *candidates*)
      (setf (gethash c counts) 0))
    (dolist (b ballots)
      (incf (gethash b counts)))
    (let ((result '()))
      (maphash (lambda (name n) (push (cons name n) result)) counts)
      (sort result (lambda (x y)
                     (or (> (cdr x) (cdr y))
                         (and (= (cdr x) (cdr y)) (string< (car x) (car y)))))))))

(defun winner (ballots)
  (car (first (tally ballots))))
