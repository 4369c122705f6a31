;;;; 57-pathnames.lisp — pathnames as ordinary values: parsing and printing
;;;; namestrings, merging, the accessors, wildcards and their translation,
;;;; logical pathnames.
;;
;; A pathname names a file of the world's file table (the files are
;; fstream.c's); as a value it is a structure of six components that a
;; world may keep (a data row, a variable).  Physical namestrings have the
;; POSIX syntax: "/dir/sub/name.type"; a directory component "*" is :WILD,
;; "**" :WILD-INFERIORS, ".." :UP.  Physical pathnames have no host (NIL)
;; and no device.  Logical namestrings are "HOST:DIR;DIR;NAME.TYPE.VERSION",
;; upper case, for a host given translations.

(defstruct (pathname (:constructor %make-pathname (host device directory name type version))
                     (:copier nil) (:predicate pathnamep) (:print-function (lambda (p s d) (%print-pathname p s d))))
  host device directory name type version)

;; The components as they are (the standard accessors below take any
;; pathname designator, and pathnames are never changed in place).
(defun %pathname-host (p) (%struct-ref p 'pathname 0))
(defun %pathname-device (p) (%struct-ref p 'pathname 1))
(defun %pathname-directory (p) (%struct-ref p 'pathname 2))
(defun %pathname-name (p) (%struct-ref p 'pathname 3))
(defun %pathname-type (p) (%struct-ref p 'pathname 4))
(defun %pathname-version (p) (%struct-ref p 'pathname 5))

(defstruct (logical-pathname (:include pathname) (:copier nil) (:predicate %logical-pathname-p)
                             (:constructor %make-logical-pathname (host device directory name type version))
                             (:print-function (lambda (p s d) (%print-pathname p s d)))))

(defun %print-pathname (p stream depth)
  (declare (ignore depth))
  (cond ((and *print-readably* (not (equal p (parse-namestring (namestring p)))))
         ;; no namestring reads back as this one (a type without a name)
         (error 'print-not-readable :object p))
        ((or *print-escape* *print-readably*)
         (write-string "#P" stream)
         (prin1 (namestring p) stream))
        (t (write-string (namestring p) stream))))

;; The logical hosts: host name (upper case) -> translations.  Each
;; transaction starts with none (io.c, jt_reset_io_syntax): like a change
;; of syntax, translations are not part of the world.
(defvar *%logical-hosts* (make-hash-table :test 'equal))

(defvar *default-pathname-defaults* (%make-pathname nil nil '(:absolute) nil nil nil))

(defun %logical-host-p (host)
  (and (stringp host) (nth-value 1 (gethash (string-upcase host) *%logical-hosts*))))

;; ------------------------------------------------------------ parsing

(defun %split (string char)
  (let ((parts nil) (start 0))
    (loop for i = (position char string :start start)
          do (push (subseq string start i) parts)
             (if i (setf start (1+ i)) (return)))
    (nreverse parts)))

(defun %wild-word (s &optional inferiors)
  (cond ((string= s "*") :wild)
        ((and inferiors (string= s "**")) :wild-inferiors)
        (t s)))

(defun %parse-physical (s)
  (let* ((slash (position #\/ s :from-end t))
         (file (if slash (subseq s (1+ slash)) s))
         (directory
           (when slash
             (cons (if (char= (char s 0) #\/) :absolute :relative)
                   (mapcar (lambda (d) (if (string= d "..") :up (%wild-word d t)))
                           (remove "" (%split (subseq s 0 slash) #\/) :test #'string=)))))
         (dot (position #\. file :from-end t))
         (name nil) (type nil))
    (cond ((string= file "") nil)
          ((or (null dot) (= dot 0)) (setf name (%wild-word file)))
          (t (setf name (%wild-word (subseq file 0 dot))
                   type (%wild-word (subseq file (1+ dot))))))
    ;; a file's version is the newest (as SBCL parses it)
    (%make-pathname nil nil directory name type (if (or name type) :newest nil))))

(defun %logical-word (s)
  (cond ((string= s "*") :wild)
        ((string= s "**") :wild-inferiors)
        (t (unless (every (lambda (c) (or (alphanumericp c) (char= c #\-) (char= c #\*))) s)
             (error 'parse-error))
           (string-upcase s))))

;; "HOST:DIR;NAME.TYPE.VERSION" (HOST may be left out when HOST is given).
(defun %parse-logical (s host)
  (let* ((colon (position #\: s))
         (host (string-upcase (if colon (subseq s 0 colon) host)))
         (rest (if colon (subseq s (1+ colon)) s))
         (semi (position #\; rest :from-end t))
         (dirs (when semi (%split (subseq rest 0 semi) #\;)))
         (directory (when semi
                      (if (and dirs (string= (car dirs) ""))
                          (cons :relative (mapcar #'%logical-word (cdr dirs)))
                          (cons :absolute (mapcar #'%logical-word dirs)))))
         (file (if semi (subseq rest (1+ semi)) rest))
         (parts (if (string= file "") nil (%split file #\.)))
         (name (and parts (%logical-word (first parts))))
         (type (and (cdr parts) (%logical-word (second parts))))
         (v (third parts))
         (version (cond ((null v) nil)
                        ((string= v "*") :wild)
                        ((string-equal v "NEWEST") :newest)
                        ((and (plusp (length v)) (every #'digit-char-p v)) (parse-integer v))
                        (t (error 'parse-error)))))
    (when (cdddr parts) (error 'parse-error))
    (%make-logical-pathname host :unspecific directory name type version)))

(defun %namestring-host (s)
  ;; the logical host a namestring starts with, or NIL
  (let ((colon (position #\: s)))
    (and colon (%logical-host-p (subseq s 0 colon)) (subseq s 0 colon))))

(defun %parse (s host defaults)
  (cond ((%namestring-host s) (%parse-logical s nil))
        ((%logical-host-p host) (%parse-logical s host))
        ((and (null host) (%logical-pathname-p defaults) (not (find #\/ s)) (find #\; s))
         (%parse-logical s (%pathname-host defaults)))
        (t (%parse-physical s))))

(defun %stream-file-pathname (stream)
  (let ((p (%file-stream-name stream)))
    (unless p
      (error 'type-error :datum stream :expected-type '(or pathname string file-stream)))
    p))

(defun parse-namestring (thing &optional host (default-pathname *default-pathname-defaults*)
                         &key (start 0) end junk-allowed)
  (declare (ignore junk-allowed))
  (when (and host (not (%logical-host-p host)) (not (equal host "")))
    (error "PARSE-NAMESTRING: ~S is not a logical host (set its logical-pathname-translations)" host))
  (cond ((stringp thing)
         (let* ((end (or end (length thing)))
                (p (handler-case (%parse (subseq thing start end) host default-pathname)
                     (parse-error ()
                       (error 'parse-error)))))
           (when (and host (pathname-host p) (not (equal (string-upcase host) (pathname-host p))))
             (error "PARSE-NAMESTRING: ~S names host ~S, not ~S" thing (pathname-host p) host))
           (values p end)))
        ((pathnamep thing)
         (when (and host (not (equal (pathname-host thing) (string-upcase host))))
           (error "PARSE-NAMESTRING: ~S is not on host ~S" thing host))
         (values thing start))
        ((streamp thing) (values (%stream-file-pathname thing) start))
        (t (error 'type-error :datum thing :expected-type '(or pathname string file-stream)))))

(defun pathname (pathspec)
  (cond ((pathnamep pathspec) pathspec)
        ((stringp pathspec) (values (parse-namestring pathspec)))
        ((streamp pathspec) (%stream-file-pathname pathspec))
        (t (error 'type-error :datum pathspec :expected-type '(or pathname string file-stream)))))

;; ------------------------------------------------------------ namestrings

(defun %word (x logical)
  (cond ((eq x :wild) "*")
        ((eq x :wild-inferiors) "**")
        ((eq x :up) "..")
        ((eq x :back) "..")
        ((stringp x) x)
        (logical "")
        (t "")))

(defun directory-namestring (pathname)
  (let* ((p (pathname pathname))
         (dir (%pathname-directory p))
         (logical (%logical-pathname-p p)))
    (with-output-to-string (s)
      (when dir
        (if logical
            (progn (when (eq (car dir) :relative) (write-char #\; s))
                   (dolist (d (cdr dir)) (write-string (%word d t) s) (write-char #\; s)))
            (progn (when (eq (car dir) :absolute) (write-char #\/ s))
                   (dolist (d (cdr dir)) (write-string (%word d nil) s) (write-char #\/ s))))))))

(defun file-namestring (pathname)
  (let* ((p (pathname pathname))
         (name (%pathname-name p)) (type (%pathname-type p)) (version (%pathname-version p)))
    (with-output-to-string (s)
      (when (or (stringp name) (eq name :wild)) (write-string (%word name nil) s))
      (when (or (stringp type) (eq type :wild))
        (write-char #\. s)
        (write-string (%word type nil) s))
      (when (and (%logical-pathname-p p) version (or (stringp type) (eq type :wild)))
        (write-char #\. s)
        (cond ((eq version :wild) (write-char #\* s))
              ((eq version :newest) (write-string "NEWEST" s))
              ((integerp version) (format s "~D" version)))))))

(defun host-namestring (pathname)
  (let ((host (%pathname-host (pathname pathname))))
    (if (stringp host) host "")))

(defun namestring (pathname)
  (let ((p (pathname pathname)))
    (concatenate 'string
                 (if (%logical-pathname-p p) (concatenate 'string (%pathname-host p) ":") "")
                 (directory-namestring p)
                 (file-namestring p))))

(defun enough-namestring (pathname &optional (defaults *default-pathname-defaults*))
  (let* ((p (pathname pathname))
         (d (pathname defaults))
         (pdir (%pathname-directory p))
         (ddir (%pathname-directory d)))
    (if (and (equal (%pathname-host p) (%pathname-host d))
             (eq (car pdir) :absolute) (eq (car ddir) :absolute)
             (<= (length ddir) (length pdir))
             (equal ddir (subseq pdir 0 (length ddir))))
        (namestring (%make-pathname nil nil
                                    (if (= (length ddir) (length pdir)) nil
                                        (cons :relative (nthcdr (length ddir) pdir)))
                                    (%pathname-name p) (%pathname-type p) nil))
        (namestring p))))

;; ------------------------------------------------------------ components

(defun %case (x case logical)
  ;; :common: an all-lower-case physical word is common upper case and the
  ;; other way round; logical pathnames are upper case already
  (if (and (eq case :common) (not logical) (stringp x))
      (cond ((string= x (string-upcase x)) (string-downcase x))
            ((string= x (string-downcase x)) (string-upcase x))
            (t x))
      x))

(defun %case-dir (dir case logical)
  (if (consp dir) (mapcar (lambda (d) (%case d case logical)) dir) dir))

(defun pathname-host (pathname &key (case :local))
  (declare (ignore case))
  (%pathname-host (pathname pathname)))
(defun pathname-device (pathname &key (case :local))
  (declare (ignore case))
  (%pathname-device (pathname pathname)))
(defun pathname-directory (pathname &key (case :local))
  (let ((p (pathname pathname)))
    (%case-dir (%pathname-directory p) case (%logical-pathname-p p))))
(defun pathname-name (pathname &key (case :local))
  (let ((p (pathname pathname)))
    (%case (%pathname-name p) case (%logical-pathname-p p))))
(defun pathname-type (pathname &key (case :local))
  (let ((p (pathname pathname)))
    (%case (%pathname-type p) case (%logical-pathname-p p))))
(defun pathname-version (pathname)
  (%pathname-version (pathname pathname)))

(defun %check-directory (dir)
  (cond ((null dir) nil)
        ((stringp dir) (list :absolute dir))
        ((eq dir :wild) '(:absolute :wild-inferiors))
        ((eq dir :unspecific) :unspecific)
        ((and (consp dir) (member (car dir) '(:absolute :relative)))
         (dolist (d (cdr dir))
           (unless (or (stringp d) (member d '(:wild :wild-inferiors :up :back)))
             (error 'type-error :datum d :expected-type '(or string (member :wild :wild-inferiors :up :back)))))
         dir)
        (t (error 'type-error :datum dir :expected-type 'list))))

(defun make-pathname (&key (host nil host-p) (device nil device-p) (directory nil directory-p)
                        (name nil name-p) (type nil type-p) (version nil version-p)
                        defaults (case :local))
  (let* ((d (if defaults (pathname defaults)
                (%make-pathname (%pathname-host *default-pathname-defaults*) nil nil nil nil nil)))
         (host (if host-p host (%pathname-host d)))
         (logical (%logical-host-p host))
         (up (if logical #'string-upcase #'identity)))
    (flet ((fix (x) (if (stringp x) (funcall up (%case x case logical)) x)))
      (let ((directory (if directory-p (%case-dir (%check-directory directory) case logical) (%pathname-directory d)))
            (name (if name-p (fix name) (%pathname-name d)))
            (type (if type-p (fix type) (%pathname-type d)))
            (version (if version-p version (%pathname-version d)))
            (device (if device-p device (%pathname-device d))))
        (dolist (x (list name type))
          (unless (or (null x) (stringp x) (member x '(:wild :unspecific)))
            (error 'type-error :datum x :expected-type '(or string (member nil :wild :unspecific)))))
        (when (and (stringp name) (not logical) (find #\/ name))
          (error "MAKE-PATHNAME: the name ~S holds a slash" name))
        (if logical
            (%make-logical-pathname (string-upcase host) :unspecific
                                    (if (consp directory) (mapcar (lambda (x) (if (stringp x) (string-upcase x) x)) directory) directory)
                                    name type version)
            (%make-pathname host device directory name type version))))))

(defun merge-pathnames (pathname &optional (defaults *default-pathname-defaults*) (default-version :newest))
  (let* ((d (pathname defaults))
         (p (if (stringp pathname)
                (values (parse-namestring pathname nil d))
                (pathname pathname)))
         (host (or (%pathname-host p) (%pathname-host d)))
         (pdir (%pathname-directory p))
         ;; a pathname of another host takes no directory from the defaults
         (ddir (if (and (%pathname-host p) (not (equal (%pathname-host p) (%pathname-host d))))
                   nil
                   (%pathname-directory d)))
         (directory (cond ((null pdir) ddir)
                          ((and (eq (car pdir) :relative) (consp ddir))
                           (let ((dirs (append ddir (cdr pdir))))
                             ;; "a/b/../" is "a/": a name then :back goes
                             (loop while (position :back dirs :start 1)
                                   do (let ((i (position :back dirs :start 1)))
                                        (if (and (> i 1) (stringp (nth (1- i) dirs)))
                                            (setf dirs (append (subseq dirs 0 (1- i)) (nthcdr (1+ i) dirs)))
                                            (return))))
                             dirs))
                          (t pdir)))
         (name (or (%pathname-name p) (%pathname-name d)))
         (type (or (%pathname-type p) (%pathname-type d)))
         (version (or (%pathname-version p)
                      (if (%pathname-name p) default-version (or (%pathname-version d) default-version)))))
    (if (%logical-host-p host)
        (%make-logical-pathname host :unspecific directory name type version)
        (%make-pathname host (or (%pathname-device p) (%pathname-device d)) directory name type
                        (if (%logical-pathname-p d) (%pathname-version p) version)))))

;; ------------------------------------------------------------ wildcards

(defun %wild-string-p (x) (and (stringp x) (find #\* x)))

(defun wild-pathname-p (pathname &optional field-key)
  (let ((p (pathname pathname)))
    (flet ((wild (x) (and (or (member x '(:wild :wild-inferiors)) (%wild-string-p x)) t)))
      (ecase field-key
        ((nil) (or (some #'wild (if (consp (%pathname-directory p)) (%pathname-directory p) nil))
                   (wild (%pathname-name p)) (wild (%pathname-type p))
                   (wild (%pathname-version p)) (wild (%pathname-host p)) (wild (%pathname-device p))))
        (:host (wild (%pathname-host p)))
        (:device (wild (%pathname-device p)))
        (:directory (some #'wild (if (consp (%pathname-directory p)) (%pathname-directory p) nil)))
        (:name (wild (%pathname-name p)))
        (:type (wild (%pathname-type p)))
        (:version (wild (%pathname-version p)))))))

;; The pieces of STRING that the *s of PATTERN stand for, or :FAIL.
(defun %match-string (pattern string)
  (let ((star (position #\* pattern)))
    (cond ((null star) (if (string= pattern string) nil :fail))
          ((and (<= star (length string)) (string= pattern string :end1 star :end2 star))
           (let ((rest (subseq pattern (1+ star))))
             (loop for i from (length string) downto star
                   do (let ((more (%match-string rest (subseq string i))))
                        (unless (eq more :fail)
                          (return (cons (subseq string star i) more))))
                   finally (return :fail))))
          (t :fail))))

;; The pieces of one component (name, type, a directory word).
(defun %match-word (wild x)
  (cond ((or (null wild) (eq wild :wild)) (list x))
        ((and (stringp wild) (stringp x)) (%match-string wild x))
        ((equal wild x) nil)
        (t :fail)))

;; The pieces of a directory: a list per :wild-inferiors, a string per
;; * or :wild.
(defun %match-directory (wild dir)
  (cond ((null wild) (list dir))
        ((null dir) (if (every (lambda (w) (member w '(:absolute :relative :wild-inferiors))) wild) nil :fail))
        ((and (consp wild) (consp dir))
         (if (eq (car wild) (car dir)) (%match-dirs (cdr wild) (cdr dir)) :fail))
        (t :fail)))

(defun %match-dirs (wild dir)
  (cond ((null wild) (if (null dir) nil :fail))
        ((eq (car wild) :wild-inferiors)
         (loop for i from 0 to (length dir)
               do (let ((more (%match-dirs (cdr wild) (nthcdr i dir))))
                    (unless (eq more :fail) (return (cons (subseq dir 0 i) more))))
               finally (return :fail)))
        ((null dir) :fail)
        (t (let ((here (%match-word (car wild) (car dir))))
             (if (eq here :fail) :fail
                 (let ((more (%match-dirs (cdr wild) (cdr dir))))
                   (if (eq more :fail) :fail (append here more))))))))

(defun pathname-match-p (pathname wildcard)
  (let ((p (pathname pathname)) (w (pathname wildcard)))
    (and (or (null (%pathname-host w)) (equal (%pathname-host p) (%pathname-host w)))
         (not (eq (%match-directory (%pathname-directory w) (%pathname-directory p)) :fail))
         (not (eq (%match-word (%pathname-name w) (%pathname-name p)) :fail))
         (not (eq (%match-word (%pathname-type w) (%pathname-type p)) :fail))
         (let ((v (%pathname-version w)))
           (or (null v) (eq v :wild) (eql v (%pathname-version p))
               (and (eq v :newest) (null (%pathname-version p))))))))

;; TO with its wildcards filled from PIECES (consumed in order).
(defun %fill-word (to pieces source lower)
  (flet ((piece () (let ((x (pop (car pieces)))) (if (and lower (stringp x)) (string-downcase x) x))))
    (cond ((null to) (if (and lower (stringp source)) (string-downcase source) source))
          ((eq to :wild) (piece))
          ((%wild-string-p to)
           (with-output-to-string (s)
             (loop for c across to
                   do (if (char= c #\*)
                          (let ((x (piece))) (when (stringp x) (write-string x s)))
                          (write-char c s)))))
          (t to))))

(defun %fill-directory (to pieces source lower)
  (cond ((null to) source)
        (t (cons (car to)
                 (mapcan (lambda (w)
                           (cond ((eq w :wild-inferiors)
                                  (let ((x (pop (car pieces))))
                                    (mapcar (lambda (d) (if (and lower (stringp d)) (string-downcase d) d))
                                            (if (listp x) (copy-list x) (list x)))))
                                 (t (list (%fill-word w pieces nil lower)))))
                         (cdr to))))))

(defun translate-pathname (source from-wildcard to-wildcard &key)
  (let* ((s (pathname source)) (f (pathname from-wildcard)) (to (pathname to-wildcard))
         (lower (and (%logical-pathname-p s) (not (%logical-pathname-p to)))))
    (unless (pathname-match-p s f)
      (error "TRANSLATE-PATHNAME: ~S does not match ~S" s f))
    (flet ((pieces (m) (list (if (eq m :fail) nil m))))
      (let ((dir (%fill-directory (%pathname-directory to)
                                  (pieces (%match-directory (%pathname-directory f) (%pathname-directory s)))
                                  (%pathname-directory s) lower))
            (name (%fill-word (%pathname-name to) (pieces (%match-word (%pathname-name f) (%pathname-name s)))
                              (%pathname-name s) lower))
            (type (%fill-word (%pathname-type to) (pieces (%match-word (%pathname-type f) (%pathname-type s)))
                              (%pathname-type s) lower))
            (version (let ((v (%pathname-version to)))
                       (if (or (null v) (eq v :wild)) (%pathname-version s) v))))
        (if (%logical-pathname-p to)
            (%make-logical-pathname (%pathname-host to) :unspecific dir name type version)
            (%make-pathname (%pathname-host to) (%pathname-device to) dir name type
                            (if (%logical-pathname-p s) nil version)))))))

;; ------------------------------------------------------------ logical pathnames

(defun %host-name (host)
  (cond ((stringp host) (string-upcase host))
        ((%logical-pathname-p host) (%pathname-host host))
        (t (error 'type-error :datum host :expected-type 'string))))

(defun logical-pathname-translations (host)
  (let ((h (%host-name host)))
    (multiple-value-bind (rules found) (gethash h *%logical-hosts*)
      (unless found
        (error 'type-error :datum host :expected-type '(satisfies %logical-host-p)))
      rules)))

(defun (setf logical-pathname-translations) (translations host)
  (let ((h (%host-name host)))
    (setf (gethash h *%logical-hosts*) nil)   ; the host exists while its rules are parsed
    (setf (gethash h *%logical-hosts*)
          (mapcar (lambda (rule)
                    (cons (let ((from (first rule)))
                            (if (stringp from) (%parse-logical from h) from))
                          (cons (pathname (second rule)) (cddr rule))))
                  translations))
    translations))

(defun load-logical-pathname-translations (host)
  (unless (stringp host) (error 'type-error :datum host :expected-type 'string))
  (if (%logical-host-p host)
      nil
      (error "LOAD-LOGICAL-PATHNAME-TRANSLATIONS: no translations for the logical host ~S (set them with (setf logical-pathname-translations))" host)))

(defun logical-pathname (pathspec)
  (cond ((%logical-pathname-p pathspec) pathspec)
        ((stringp pathspec)
         (let ((colon (position #\: pathspec)))
           (unless (and colon (%logical-host-p (subseq pathspec 0 colon)))
             (error 'type-error :datum pathspec :expected-type 'logical-pathname))
           (%parse-logical pathspec nil)))
        ((streamp pathspec) (logical-pathname (%stream-file-pathname pathspec)))
        (t (error 'type-error :datum pathspec :expected-type 'logical-pathname))))

(defun translate-logical-pathname (pathname &key)
  (let ((p (pathname pathname)))
    (if (%logical-pathname-p p)
        (dolist (rule (logical-pathname-translations (%pathname-host p))
                      (error 'file-error :pathname p))
          (when (pathname-match-p p (car rule))
            (return (translate-logical-pathname (translate-pathname p (car rule) (cadr rule))))))
        p)))

(defun user-homedir-pathname (&optional host)
  (declare (ignore host))
  (%make-pathname nil nil '(:absolute) nil nil nil))
