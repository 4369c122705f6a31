;;; Tic-tac-toe with a 2-D array board and minimax, printing boards.
(defun make-board () (make-array '(3 3) :initial-element nil))

(defun print-board (b &optional (stream t))
  (dotimes (r 3)
    (format stream "~&~{ ~a ~^|~}~%" (loop for c below 3 collect (or (aref b r c) " ")))
    (when (< r 2) (format stream "---+---+---~%"))))

(defparameter *lines*
  (append (loop for r below 3 collect (loop for c below 3 collect (list r c)))
          (loop for c below 3 collect (loop for r below 3 collect (list r c)))
          (list (loop for i below 3 collect (list i i))
                (loop for i below 3 collect (list i (- 2 i))))))

(defun winner (b)
  (dolist (line *lines* nil)
    (destructuring-bind ((r1 c1) (r2 c2) (r3 c3)) line
      (let ((p (aref b r1 c1)))
        (when (and p (eq p (aref b r2 c2)) (eq p (aref b r3 c3)))
          (return p))))))

(defun moves (b)
  (loop for r below 3 nconc (loop for c below 3 unless (aref b r c) collect (cons r c))))

(defun other (p) (if (eq p 'x) 'o 'x))

(defun minimax (b player)
  "Score for X (1 win, -1 loss, 0 draw) and the best move for PLAYER."
  (let ((w (winner b)))
    (cond ((eq w 'x) (values 1 nil))
          ((eq w 'o) (values -1 nil))
          ((null (moves b)) (values 0 nil))
          (t (let ((best-score nil) (best-move nil))
               (dolist (m (moves b))
                 (setf (aref b (car m) (cdr m)) player)
                 (let ((score (minimax b (other player))))
                   (setf (aref b (car m) (cdr m)) nil)
                   (when (or (null best-score)
                             (if (eq player 'x) (> score best-score) (< score best-score)))
                     (setf best-score score best-move m))))
               (values best-score best-move))))))

(let ((b (make-board)) (player 'x) (turn 0))
  (setf (aref b 0 0) 'x (aref b 1 1) 'o)
  (setf player 'x)
  (loop
    (when (or (winner b) (null (moves b))) (return))
    (multiple-value-bind (score move) (minimax b player)
      (format t "~&Turn ~d: ~a plays ~a (expects ~[a loss~;a draw~;a win~])~%"
              (incf turn) player move (1+ (if (eq player 'x) score (- score))))
      (setf (aref b (car move) (cdr move)) player)
      (setf player (other player))))
  (print-board b)
  (format t "Result: ~a~%" (or (winner b) "draw"))
  (print b)
  (terpri)
  (format t "~s~%" (array-dimensions b))
  (format t "Empty cells: ~d, rows: ~s~%" (count nil (make-array 9 :displaced-to b))
          (loop for r below 3 collect (loop for c below 3 collect (aref b r c)))))

(let ((b (make-board)))
  (loop for (r c p) in '((0 0 o) (0 1 o) (1 1 x) (2 2 x) (2 0 x)) do (setf (aref b r c) p))
  (print-board b)
  (multiple-value-bind (score move) (minimax b 'o)
    (format t "O to move: best ~a, score ~d~%" move score)))

(let ((b (make-board)))
  (dolist (pos '((1 1) (3 0) (0 3) (2 2)))
    (handler-case (progn (setf (aref b (first pos) (second pos)) 'x)
                         (format t "placed at ~a~%" pos))
      (error (e) (format t "cannot place at ~a: ~a~%" pos e))))
  (handler-case (format t "~a~%" (elt (moves b) 20))
    (error (e) (format t "no such move: ~a~%" e))))
