;;;; 58-files.lisp — the standard's file functions over the world's file
;;;; table (fstream.c): OPEN and WITH-OPEN-FILE, PROBE-FILE, TRUENAME,
;;;; DELETE-FILE, RENAME-FILE, DIRECTORY, LOAD, COMPILE-FILE.
;;
;; A file is named by the namestring of its full physical pathname: the
;; pathname merged with *DEFAULT-PATHNAME-DEFAULTS* (whose directory is
;; "/", the root of the world's files), logical pathnames translated.
;; Directories are not kept: a file's namestring holds its directories, so
;; ENSURE-DIRECTORIES-EXIST has nothing to make.

(define-condition %world-file-error (file-error simple-error) ())

(defun %file-error (pathname control &rest args)
  (error '%world-file-error :pathname pathname :format-control control :format-arguments args))

;; The full physical pathname of PATHSPEC.
(defun %full-pathname (pathspec)
  (let ((p (translate-logical-pathname (merge-pathnames (pathname pathspec)))))
    (let ((dir (%pathname-directory p)))
      (when (and (eq (car dir) :absolute) (member (cadr dir) '(:up :back)))
        (%file-error p "~A goes up from the root directory" (namestring p)))
      (when (loop for (a b) on (cdr dir) thereis (and (eq a :wild-inferiors) (member b '(:up :back))))
        (%file-error p "~A goes up from a wild directory" (namestring p))))
    (if (eq (car (%pathname-directory p)) :absolute)
        p
        (merge-pathnames p (%make-pathname nil nil '(:absolute) nil nil nil)))))

;; A directory exists when it is the root or holds a file.
(defun %directory-exists-p (p)
  (let ((prefix (directory-namestring p)))
    (or (equal prefix "/")
        (some (lambda (key) (and (> (length key) (length prefix)) (string= prefix key :end2 (length prefix))))
              (%file-keys)))))

(defun %directory-pathname-p (p)
  (and (null (%pathname-name p)) (null (%pathname-type p))))

;; The full physical pathname of PATHSPEC, checked to name one file.
(defun %file-pathname (pathspec)
  (let* ((p (translate-logical-pathname (merge-pathnames (pathname pathspec))))
         (p (if (eq (car (%pathname-directory p)) :absolute)
                p
                (merge-pathnames p (%make-pathname nil nil '(:absolute) nil nil nil)))))
    (when (wild-pathname-p p)
      (%file-error p "~A is a wild pathname: name one file (DIRECTORY lists those it matches)" (namestring p)))
    (unless (or (%pathname-name p) (%pathname-type p))
      (%file-error p "~A names a directory, not a file" (namestring p)))
    (%make-pathname nil nil (%pathname-directory p) (%pathname-name p) (%pathname-type p) nil)))

(defun %file-key (pathname) (namestring pathname))

;; The element type OPEN makes a file stream of: NIL for characters, else
;; the integer type rounded up to whole octets, (unsigned-byte 8k) when it
;; has no negative integers, (signed-byte 8k) otherwise.  (SBCL rounds to
;; 8, 16, 32 or 64 bits, then to octets: the two agree on those sizes and
;; past 64 bits.)  fstream.c holds elements of at most 1024 bits.
(defun %file-element-type (element-type)
  (flet ((octets (kind bits) (list kind (* 8 (ceiling bits 8)))))
    (cond ((member element-type '(character base-char standard-char :default)) nil)
          ((member element-type '(unsigned-byte signed-byte)) (list element-type 8))
          ((and (consp element-type) (member (car element-type) '(unsigned-byte signed-byte))
                (typep (cdr element-type) '(cons (integer 1) null)))
           (octets (car element-type) (cadr element-type)))
          ((subtypep element-type 'character) nil)
          ((subtypep element-type 'integer)
           (let ((kind (if (subtypep element-type 'unsigned-byte) 'unsigned-byte 'signed-byte)))
             (or (loop for bits from 8 to 1024 by 8
                       when (subtypep element-type (list kind bits)) return (list kind bits))
                 (error "OPEN: the element type ~S is not a finite integer type of at most 1024 bits: ~
                         give one such as (unsigned-byte 32)" element-type))))
          (t (error "OPEN: the element type ~S is neither a character type nor an integer type" element-type)))))

(defun open (filespec &key (direction :input) (element-type 'character)
                           (if-exists nil if-exists-p) (if-does-not-exist nil if-does-not-exist-p)
                           (external-format :default))
  (declare (ignore external-format))
  (let* ((p (%file-pathname filespec))
         (given (if (streamp filespec) p (merge-pathnames (pathname filespec))))
         (key (%file-key p))
         (etype (%file-element-type element-type))
         (exists (%file-get key)))
    (ecase direction
      ((:input :probe)
       (let ((if-does-not-exist (cond (if-does-not-exist-p if-does-not-exist)
                                      ((eq direction :probe) nil)
                                      (t :error))))
         (unless exists
           (ecase if-does-not-exist
             (:error (%file-error p "there is no file ~A" key))
             (:create (%file-put key ""))
             ((nil) (return-from open nil))))
         (let ((s (%open-file-stream given key :input etype nil)))
           (when (eq direction :probe) (close s))
           s)))
      ((:output :io)
       (let* ((if-exists (if if-exists-p if-exists :supersede))
              (if-does-not-exist (if if-does-not-exist-p if-does-not-exist
                                     (if (member if-exists '(:overwrite :append)) :error :create)))
              (mode :new))
         (if exists
             (ecase if-exists
               (:error (%file-error p "the file ~A exists (open it with :if-exists :supersede to replace it)" key))
               ((nil) (return-from open nil))
               ((:supersede :new-version :rename :rename-and-delete) (setf mode :supersede))
               (:append (setf mode :append))
               (:overwrite (setf mode :overwrite)))
             (ecase if-does-not-exist
               (:error (%file-error p "there is no file ~A" key))
               ((nil) (return-from open nil))
               (:create (%file-put key ""))))
         (%open-file-stream given key direction etype mode))))))

(defmacro with-open-file ((var filespec &rest options) &body body)
  (multiple-value-bind (decls forms) (%parse-body body)
    (let ((done (gensym "DONE")))
      `(let ((,var (open ,filespec ,@options)) (,done nil))
         ,@decls
         (unwind-protect (multiple-value-prog1 (progn ,@forms) (setq ,done t))
           (when ,var (close ,var :abort (not ,done))))))))

(defun probe-file (pathspec)
  (let ((full (%full-pathname pathspec)))
    (if (and (%directory-pathname-p full) (not (wild-pathname-p full)))
        (if (%directory-exists-p full) full nil)
        (let ((p (%file-pathname pathspec)))
          (if (%file-get (%file-key p)) p nil)))))

(defun truename (filespec)
  (or (probe-file filespec)
      (let ((p (%full-pathname filespec)))
        (%file-error p "there is no file ~A" (namestring p)))))

;; NIL for a file that does not exist: its date cannot be determined.
(defun file-write-date (pathspec)
  (nth-value 1 (%file-get (%file-key (%file-pathname pathspec)))))

(defun file-author (pathspec)
  (let ((p (%file-pathname pathspec)))
    (unless (%file-get (%file-key p)) (%file-error p "there is no file ~A" (%file-key p)))
    nil))

(defun delete-file (filespec)
  (let ((p (%file-pathname filespec)))
    (unless (%file-remove (%file-key p)) (%file-error p "there is no file ~A to delete" (%file-key p)))
    t))

(defun rename-file (filespec new-name)
  (let* ((old (%file-pathname filespec))
         (new-name (merge-pathnames new-name (if (streamp filespec) old (pathname filespec))))
         (new (%file-pathname new-name))
         (octets (%file-get (%file-key old))))
    (unless octets (%file-error old "there is no file ~A to rename" (%file-key old)))
    (unless (equal (%file-key old) (%file-key new))
      (%file-put (%file-key new) octets)
      (%file-remove (%file-key old)))
    (values new-name old new)))

(defun directory (pathspec &key)
  (let ((wild (%full-pathname pathspec)))
    (sort (loop for key in (%file-keys)
                for p = (pathname key)
                when (pathname-match-p p wild) collect p)
          #'string< :key #'namestring)))

(defun ensure-directories-exist (pathspec &key verbose)
  (declare (ignore verbose))
  (let ((p (%full-pathname pathspec)))
    (when (wild-pathname-p p :directory)
      (%file-error p "~A has a wild directory" (namestring p)))
    ;; a directory exists once a file is in it: "created" when none is yet
    (values pathspec (not (%directory-exists-p p)))))

(defvar *load-pathname* nil)
(defvar *load-truename* nil)
(defvar *compile-file-pathname* nil)
(defvar *compile-file-truename* nil)

;; LOAD evaluates the forms of a file one by one; while one runs, a
;; CONTINUE restart skips it and loads the rest.
;; LOAD finds "name" as given, else "name.lisp", else "name.lsp".
(defun %load-candidate (pathspec)
  (let ((p (merge-pathnames (pathname pathspec))))
    (or (probe-file p)
        (and (null (pathname-type p))
             (or (probe-file (make-pathname :type "lisp" :defaults p))
                 (probe-file (make-pathname :type "lsp" :defaults p)))))))

(defun %load-stream (stream print)
  (let ((*readtable* *readtable*) (*package* *package*) (eof (list nil)))
    (loop for form = (read stream nil eof)
          until (eq form eof)
          do (restart-case
                 (let ((values (multiple-value-list (eval form))))
                   (when print (format t "~&~{~S~^ ~}~%" values)))
               (continue ()
                 :report "Skip this form and load the rest of the file."
                 nil)))
    t))

(defun load (filespec &key (verbose *load-verbose*) (print *load-print*) (if-does-not-exist t)
                           (external-format :default))
  (declare (ignore external-format))
  (if (streamp filespec)
      (%load-stream filespec print)
      (let ((found (%load-candidate filespec)))
        (cond (found
               (when verbose (format t "~&; loading ~A~%" (namestring found)))
               (with-open-file (s found)
                 (let ((*load-pathname* (merge-pathnames (pathname filespec)))
                       (*load-truename* found))
                   (%load-stream s print))))
              (if-does-not-exist
               (let ((p (merge-pathnames (pathname filespec))))
                 (%file-error p "there is no file ~A to load" (namestring p))))
              (t nil)))))

;; COMPILE-FILE: jiti has no machine code; the compiled file is a copy of
;; the source, and LOAD of it evaluates the source.
(defun compile-file-pathname (input-file &key output-file &allow-other-keys)
  (if output-file
      (merge-pathnames output-file (merge-pathnames input-file))
      (make-pathname :type "fasl" :defaults (merge-pathnames input-file))))

(defun compile-file (input-file &key output-file (verbose *compile-verbose*) (print *compile-print*)
                                  external-format)
  (declare (ignore print external-format))
  (let* ((in (truename input-file))
         (out (%file-pathname (compile-file-pathname in :output-file output-file)))
         (*compile-file-pathname* (merge-pathnames input-file))
         (*compile-file-truename* in))
    (when verbose (format t "~&; compiling ~A~%" (namestring in)))
    (%file-put (%file-key out) (%file-get (%file-key in)))
    (values out nil nil)))
