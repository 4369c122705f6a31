;;; Conway's game of life on a bounded board: cells outside the board are
;;; dead (the board does not wrap around).

(defun make-board (rows)
  (make-array (list (length rows) (length (first rows))) :initial-contents rows))

(defvar *board* (make-board '((0 1 0 0)
                              (0 1 0 0)
                              (0 1 0 0)
                              (0 0 0 0))))

(defun live-neighbors (board r c)
  "How many of the eight cells around row R, column C are alive.  Cells
off the board count as dead: the board does not wrap around."
  (let ((n 0))
    (loop for dr from -1 to 1 do
      (loop for dc from -1 to 1 do
        (unless (and (zerop dr) (zerop dc))
          (incf n (aref board (+ r dr) (+ c dc))))))
    n))

(defun next-state (board r c)
  (let ((n (live-neighbors board r c)))
    (if (or (= n 3) (and (= n 2) (= 1 (aref board r c)))) 1 0)))
