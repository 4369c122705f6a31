;;; A JSON-ish tokenizer and parser with a printer.
(defpackage :tiny-json (:use :cl) (:export #:parse-json #:to-json))
(in-package :tiny-json)

(define-condition json-parse-error (error)
  ((position :initarg :position :reader error-position)
   (message :initarg :message :reader error-message))
  (:report (lambda (c stream)
             (format stream "JSON error at ~d: ~a" (error-position c) (error-message c)))))

(defstruct (lexer (:constructor make-lexer (text)))
  (text "" :type string)
  (pos 0 :type fixnum))

(defun peek (lx)
  (when (< (lexer-pos lx) (length (lexer-text lx)))
    (char (lexer-text lx) (lexer-pos lx))))

(defun next (lx)
  (prog1 (peek lx) (incf (lexer-pos lx))))

(defun skip-ws (lx)
  (loop while (and (peek lx) (member (peek lx) '(#\Space #\Tab #\Newline #\Return)))
        do (next lx)))

(defun fail (lx fmt &rest args)
  (error 'json-parse-error :position (lexer-pos lx) :message (apply #'format nil fmt args)))

(defun read-string-token (lx)
  (next lx)
  (with-output-to-string (out)
    (loop for ch = (next lx)
          do (case ch
               ((nil) (fail lx "unterminated string"))
               (#\" (return))
               (#\\ (let ((e (next lx)))
                      (case e
                        (#\n (write-char #\Newline out))
                        (#\t (write-char #\Tab out))
                        (#\u (let ((code (parse-integer (lexer-text lx) :start (lexer-pos lx)
                                                        :end (+ 4 (lexer-pos lx)) :radix 16)))
                               (incf (lexer-pos lx) 4)
                               (write-char (code-char code) out)))
                        (t (write-char e out)))))
               (t (write-char ch out))))))

(defun read-number-token (lx)
  (let* ((start (lexer-pos lx))
         (end (or (position-if-not (lambda (c) (or (digit-char-p c) (find c "+-.eE")))
                                   (lexer-text lx) :start start)
                  (length (lexer-text lx))))
         (text (subseq (lexer-text lx) start end)))
    (setf (lexer-pos lx) end)
    (if (find-if (lambda (c) (find c ".eE")) text)
        (let ((*read-default-float-format* 'double-float))
          (coerce (read-from-string text) 'double-float))
        (multiple-value-bind (n used) (parse-integer text :junk-allowed t)
          (unless (= used (length text)) (fail lx "bad number ~s" text))
          n))))

(defun expect-word (lx word value)
  (let ((end (+ (lexer-pos lx) (length word))))
    (if (and (<= end (length (lexer-text lx)))
             (string= word (lexer-text lx) :start2 (lexer-pos lx) :end2 end))
        (progn (setf (lexer-pos lx) end) value)
        (fail lx "expected ~a" word))))

(defun parse-value (lx)
  (skip-ws lx)
  (let ((ch (peek lx)))
    (cond ((null ch) (fail lx "unexpected end"))
          ((char= ch #\{) (parse-object lx))
          ((char= ch #\[) (parse-array lx))
          ((char= ch #\") (read-string-token lx))
          ((or (digit-char-p ch) (char= ch #\-)) (read-number-token lx))
          ((char= ch #\t) (expect-word lx "true" :true))
          ((char= ch #\f) (expect-word lx "false" :false))
          ((char= ch #\n) (expect-word lx "null" :null))
          (t (fail lx "unexpected character ~s" ch)))))

(defun parse-array (lx)
  (next lx)
  (skip-ws lx)
  (if (eql (peek lx) #\])
      (progn (next lx) (vector))
      (let ((items '()))
        (loop
          (push (parse-value lx) items)
          (skip-ws lx)
          (case (next lx)
            (#\, nil)
            (#\] (return (coerce (nreverse items) 'vector)))
            (t (fail lx "expected , or ]")))))))

(defun parse-object (lx)
  (next lx)
  (let ((table (make-hash-table :test #'equal)) (keys '()))
    (skip-ws lx)
    (when (eql (peek lx) #\}) (next lx) (return-from parse-object (values table keys)))
    (loop
      (skip-ws lx)
      (let ((key (read-string-token lx)))
        (skip-ws lx)
        (unless (eql (next lx) #\:) (fail lx "expected :"))
        (setf (gethash key table) (parse-value lx))
        (push key keys))
      (skip-ws lx)
      (case (next lx)
        (#\, nil)
        (#\} (return table))
        (t (fail lx "expected , or }"))))))

(defun parse-json (text) (parse-value (make-lexer text)))

(defun to-json (value &optional (stream nil))
  (typecase value
    (null (format stream "[]"))
    ((member :true) (format stream "true"))
    ((member :false) (format stream "false"))
    ((member :null) (format stream "null"))
    (string (format stream "~s" value))
    (integer (format stream "~d" value))
    (float (format stream "~,3f" value))
    (hash-table
     (let ((keys (sort (loop for k being the hash-keys of value collect k) #'string<)))
       (format stream "{~{~a~^,~}}"
               (mapcar (lambda (k) (format nil "~s:~a" k (to-json (gethash k value)))) keys))))
    (vector (format stream "[~{~a~^,~}]" (map 'list #'to-json value)))
    (t (error "cannot encode ~s" value))))

(defparameter *samples*
  '("{\"name\": \"Widget\", \"price\": 12.5, \"tags\": [\"a\", \"b\"], \"stock\": 40}"
    "[1, 2, 3, [4, 5], {}]"
    "{\"ok\": true, \"missing\": null, \"off\": false, \"neg\": -17, \"exp\": 1.5e3}"
    "\"esc\\\"aped\\n\\u0041\""
    "[1, 2,"
    "{\"a\" 1}"
    "[1, @]"
    "[12x]"))

(dolist (s *samples*)
  (handler-case
      (let ((v (parse-json s)))
        (format t "~a~%  => ~a~%" s (to-json v)))
    (json-parse-error (e)
      (format t "~a~%  !! ~a~%" s e))))

(let ((obj (parse-json "{\"items\": [{\"id\": 1, \"qty\": 3}, {\"id\": 2, \"qty\": 7}, {\"id\": 3, \"qty\": 1}]}")))
  (let ((items (gethash "items" obj)))
    (format t "~d items, total qty ~d, max id ~d~%"
            (length items)
            (reduce #'+ items :key (lambda (h) (gethash "qty" h)))
            (loop for h across items maximize (gethash "id" h)))))
