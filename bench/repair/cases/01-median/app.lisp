;;; Sensor dashboard: summary statistics of a batch of readings.

(defstruct reading-stats count low high median)

(defun median (values)
  "The median of a non-empty vector of numbers: the middle element when
there is an odd number of them, the mean of the two middle elements when
there is an even number."
  (let* ((sorted (sort (copy-seq values) #'<))
         (n (length sorted))
         (mid (floor n 2)))
    (if (oddp n)
        (aref sorted mid)
        (/ (+ (aref sorted mid) (aref sorted (1+ mid))) 2))))

(defun summarize (values)
  (make-reading-stats :count (length values)
                      :low (reduce #'min values)
                      :high (reduce #'max values)
                      :median (median values)))

(defun stats-line (values)
  (let ((s (summarize values)))
    (format nil "n=~d low=~a high=~a median=~a"
            (reading-stats-count s) (reading-stats-low s)
            (reading-stats-high s) (reading-stats-median s))))
