;;;; binary-files.lisp -- files of integers: OPEN with (unsigned-byte N),
;;;; (signed-byte N) and other integer element types, written and read back
;;;; (read-byte, write-byte, read-sequence, write-sequence), the element type
;;;; a stream answers, file-length and file-position counted in elements,
;;;; the octets an element takes, and the errors: a byte outside the element
;;;; type, an element type that is not a finite integer type, file-length of
;;;; a stream that is not a file's.  Under jiti the files are the world's
;;;; own; under SBCL they are in /tmp/jiti-binary-files-suite/, removed at
;;;; the end.
(suite "binary-files")

(defvar *dir* #p"/tmp/jiti-binary-files-suite/")
(defun f (name) (merge-pathnames name *dir*))
(ensure-directories-exist (f "x"))
(dolist (p (directory (f "*.*"))) (delete-file p))

(defun write-elements (name etype elements)
  (with-open-file (s (f name) :direction :output :if-exists :supersede :element-type etype)
    (dolist (e elements) (write-byte e s))))

(defun read-elements (name etype)
  (with-open-file (s (f name) :element-type etype)
    (loop for e = (read-byte s nil :eof) until (eq e :eof) collect e)))

;;; widths from 1 to 200 bits (each up to 17, then those around whole
;;; octets), unsigned and signed: the extremes and a small value come back
(defvar *widths* (append (loop for n from 1 to 17 collect n)
                         '(23 24 25 31 32 33 40 56 57 63 64 65 72 100 127 128 129 199 200)))
(defun extremes (kind n)
  (if (eq kind 'unsigned-byte)
      (list 0 (1- (ash 1 n)) 1 (ash 1 (1- n)))
      (list (- (ash 1 (1- n))) (1- (ash 1 (1- n))) 0 -1)))

(is-equal (loop for kind in '(unsigned-byte signed-byte)
                nconc (loop for n in *widths*
                            for etype = (list kind n)
                            for elements = (extremes kind n)
                            do (write-elements "w.bin" etype elements)
                            unless (equal (read-elements "w.bin" etype) elements)
                              collect etype))
          nil)

;;; the element type a stream answers holds the one asked for
(is-equal (loop for n in *widths*
                for etype = (list 'unsigned-byte n)
                unless (with-open-file (s (f "t.bin") :direction :output :if-exists :supersede
                                                      :element-type etype)
                         (subtypep etype (stream-element-type s)))
                  collect n)
          nil)
(defun element-type-of (etype)
  (with-open-file (s (f "t.bin") :direction :output :if-exists :supersede :element-type etype)
    (stream-element-type s)))
(is-equal (element-type-of '(unsigned-byte 8)) '(unsigned-byte 8))
(is-equal (element-type-of '(unsigned-byte 9)) '(unsigned-byte 16))
(is-equal (element-type-of '(signed-byte 12)) '(signed-byte 16))
(is-equal (element-type-of '(unsigned-byte 200)) '(unsigned-byte 200))
(is-equal (element-type-of 'unsigned-byte) '(unsigned-byte 8))
(is-equal (element-type-of 'signed-byte) '(signed-byte 8))
(is-equal (element-type-of 'bit) '(unsigned-byte 8))
(is-equal (element-type-of '(mod 300)) '(unsigned-byte 16))
(is-equal (element-type-of '(integer -1002 13112)) '(signed-byte 16))
;; jiti rounds up to whole octets (SBCL to 8, 16, 32, 64 bits, then octets)
#+jiti (is-equal (element-type-of '(unsigned-byte 17)) '(unsigned-byte 24))
#+jiti (is-equal (element-type-of '(signed-byte 33)) '(signed-byte 40))
(is-equal (with-open-file (s (f "t.bin") :direction :probe :element-type '(unsigned-byte 16))
            (list (typep s 'file-stream) (open-stream-p s)))
          '(t nil))

;;; the octets: least significant first, signed in two's complement; an
;;; element cut short at the end is not read
(write-elements "o.bin" '(unsigned-byte 16) '(258 1))
(is-equal (read-elements "o.bin" '(unsigned-byte 8)) '(2 1 1 0))
(write-elements "o.bin" '(signed-byte 16) '(-2 -32768))
(is-equal (read-elements "o.bin" '(unsigned-byte 8)) '(254 255 0 128))
(is-equal (read-elements "o.bin" '(signed-byte 8)) '(-2 -1 0 -128))
(write-elements "o.bin" '(unsigned-byte 64) (list (1- (ash 1 64))))
(is-equal (read-elements "o.bin" '(unsigned-byte 8)) '(255 255 255 255 255 255 255 255))
(is-equal (read-elements "o.bin" '(signed-byte 64)) '(-1))
(is-equal (read-elements "o.bin" '(unsigned-byte 32)) (list (1- (ash 1 32)) (1- (ash 1 32))))
(write-elements "o.bin" '(unsigned-byte 8) '(1 2 3))
(is-equal (read-elements "o.bin" '(unsigned-byte 16)) '(513))
(is-eql (with-open-file (s (f "o.bin") :element-type '(unsigned-byte 16)) (file-length s)) 1)

;;; file-length and file-position count elements
(is-equal (with-open-file (s (f "p.bin") :direction :output :if-exists :supersede
                                         :element-type '(unsigned-byte 16))
            (list (file-position s)
                  (progn (dotimes (i 17) (write-byte i s)) (file-position s))
                  (progn (finish-output s) (file-length s))))
          '(0 17 17))
(is-equal (with-open-file (s (f "p.bin") :element-type '(unsigned-byte 16))
            (list (file-length s) (read-byte s) (read-byte s) (file-position s)
                  (file-position s 10) (read-byte s) (file-position s)
                  (file-position s :start) (read-byte s)
                  (file-position s :end) (read-byte s nil :eof) (file-position s)))
          '(17 0 1 2 t 10 11 t 0 t :eof 17))
(is-equal (with-open-file (s (f "p.bin") :element-type '(unsigned-byte 8)) (file-length s)) 34)
(write-elements "p.bin" '(signed-byte 100) (list (- (ash 1 99)) 5))
(is-equal (with-open-file (s (f "p.bin") :element-type '(signed-byte 100))
            (list (file-length s) (read-byte s) (file-position s) (read-byte s)))
          (list 2 (- (ash 1 99)) 1 5))

;;; read-sequence and write-sequence
(with-open-file (s (f "q.bin") :direction :output :if-exists :supersede :element-type '(signed-byte 24))
  (write-sequence #(-8388608 0 8388607) s)
  (write-sequence '(1 2 3) s :start 1))
(is-equalp (with-open-file (s (f "q.bin") :element-type '(signed-byte 24))
             (let ((v (make-array 6 :initial-element nil)))
               (list (read-sequence v s) v)))
           '(5 #(-8388608 0 8388607 2 3 nil)))

;;; a byte outside the element type, or not an integer: a type-error, and
;;; nothing written
(signals type-error (write-elements "e.bin" '(unsigned-byte 16) '(65536)))
(signals type-error (write-elements "e.bin" '(unsigned-byte 16) '(-1)))
(signals type-error (write-elements "e.bin" '(signed-byte 16) '(32768)))
(signals type-error (write-elements "e.bin" '(signed-byte 16) '(-32769)))
(signals type-error (write-elements "e.bin" '(unsigned-byte 64) (list (ash 1 64))))
#+jiti (signals type-error (write-elements "e.bin" '(signed-byte 200) (list (ash 1 199))))
(signals type-error (write-elements "e.bin" '(unsigned-byte 16) '(1.5)))
(signals type-error (write-elements "e.bin" '(unsigned-byte 16) '(:a)))
(is-equal (let ((s (open (f "e.bin") :direction :output :if-exists :supersede :element-type '(signed-byte 16))))
            (write-byte 7 s)
            (list (handler-case (write-byte 40000 s) (type-error (c) (type-error-datum c)))
                  (progn (close s) (read-elements "e.bin" '(signed-byte 16)))))
          '(40000 (7)))
(signals type-error (with-open-file (s (f "e.bin") :direction :output :if-exists :supersede
                                                   :element-type '(unsigned-byte 16))
                      (write-sequence #(1 70000) s)))
;; an element type that is not a finite integer (or character) type
(signals error (open (f "e.bin") :direction :output :if-exists :supersede :element-type 'integer))
(signals error (open (f "e.bin") :direction :output :if-exists :supersede :element-type '(integer 0 *)))
(signals error (open (f "e.bin") :direction :output :if-exists :supersede :element-type 'float))
#+jiti (signals error (open (f "e.bin") :direction :output :if-exists :supersede
                                        :element-type '(unsigned-byte 2000)))
;; bytes to a character stream
(signals error (with-open-file (s (f "e.bin") :direction :output :if-exists :supersede) (write-byte 1 s)))

;;; file-length: a file stream's, through a synonym stream, a broadcast
;;; stream's last stream (0 for none); a type-error for other streams
(write-elements "l.bin" '(unsigned-byte 32) '(1 2 3))
(defvar *file-stream* nil)
(is-equal (with-open-file (s (f "l.bin") :element-type '(unsigned-byte 32))
            (setf *file-stream* s)
            (list (file-length s) (file-length (make-synonym-stream '*file-stream*))))
          '(3 3))
(is-eql (file-length (make-broadcast-stream)) 0)
(is-equal (with-open-file (s (f "m.bin") :direction :output :if-exists :supersede
                                         :element-type '(unsigned-byte 16))
            (write-byte 1 s) (write-byte 2 s) (finish-output s)
            (list (file-length (make-broadcast-stream s)) (file-length s)))
          '(2 2))
(signals type-error (file-length (make-string-input-stream "abc")))
(signals type-error (file-length (make-string-output-stream)))
(signals type-error (with-open-file (s (f "l.bin") :element-type '(unsigned-byte 32))
                      (file-length (make-two-way-stream s (make-broadcast-stream)))))
(signals type-error (with-open-file (s (f "l.bin") :element-type '(unsigned-byte 32))
                      (file-length (make-echo-stream s (make-broadcast-stream)))))
(signals type-error (with-open-file (s (f "l.bin") :element-type '(unsigned-byte 32))
                      (file-length (make-concatenated-stream s))))
(signals type-error (file-length 'not-a-stream))
#+jiti (defvar *ring* nil)
#+jiti (signals error (let ((s (make-synonym-stream '*ring*))) (setf *ring* s) (file-length s)))

;;; file-string-length of a character file stream: the octets (UTF-8) the
;;; characters take, as file-length counts them
(is-equal (with-open-file (s (f "s.txt") :direction :output :if-exists :supersede)
            (list (file-string-length s #\a) (file-string-length s (code-char 233))
                  (file-string-length s "naïve ∑")
                  (progn (write-string "naïve ∑" s) (finish-output s) (file-length s))))
          '(1 2 10 10))

;;; open :direction :probe of a file that does not exist: NIL
(is (null (open (f "missing.bin") :direction :probe)))
(is (null (open (f "missing.bin") :direction :probe :element-type '(unsigned-byte 16))))
(signals file-error (open (f "missing.bin") :direction :probe :if-does-not-exist :error))

;;; listen: true before the end of a file, false at it
(with-open-file (s (f "c.txt") :direction :output :if-exists :supersede) (write-string "ab" s))
(is-equal (with-open-file (s (f "c.txt"))
            (list (not (null (listen s))) (read-char s) (read-char s) (listen s)))
          '(t #\a #\b nil))

(dolist (p (directory (f "*.*"))) (delete-file p))
(done)
