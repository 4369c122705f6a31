;;;; 45-packages.lisp — defpackage and the macros that walk packages.

(defun %string-name (x)
  (cond ((stringp x) x)
        ((symbolp x) (symbol-name x))
        ((characterp x) (string x))
        (t (error 'type-error :datum x :expected-type 'string-designator))))

;; (defpackage name option*): options :nicknames :use :shadow
;; :shadowing-import-from :import-from :intern :export :documentation
;; (:size is accepted and ignored).  Without :use the package uses
;; COMMON-LISP.
(defmacro defpackage (name &rest options)
  (let ((nicknames nil) (use nil) (use-p nil) (shadow nil) (shadowing nil)
        (import nil) (intern nil) (export nil) (doc nil) (doc-p nil) (size-p nil))
    (dolist (opt options)
      (unless (and (consp opt) (keywordp (car opt)))
        (error 'program-error :format-control "DEFPACKAGE ~A: malformed option ~S"
                              :format-arguments (list name opt)))
      (let ((args (cdr opt)))
        (case (car opt)
          (:nicknames (setq nicknames (append nicknames (mapcar #'%string-name args))))
          (:use (setq use-p t use (append use (mapcar #'%string-name args))))
          (:shadow (setq shadow (append shadow (mapcar #'%string-name args))))
          (:shadowing-import-from
           (setq shadowing (append shadowing (list (mapcar #'%string-name args)))))
          (:import-from (setq import (append import (list (mapcar #'%string-name args)))))
          (:intern (setq intern (append intern (mapcar #'%string-name args))))
          (:export (setq export (append export (mapcar #'%string-name args))))
          (:documentation
           (when doc-p (%defpackage-error name "~S is given twice" :documentation))
           (setq doc (car args) doc-p t))
          (:size
           (when size-p (%defpackage-error name "~S is given twice" :size))
           (setq size-p t))
          (t (error 'program-error :format-control "DEFPACKAGE ~A: unknown option ~S"
                                   :format-arguments (list name (car opt)))))))
    ;; CLHS: the names of :shadow, :shadowing-import-from, :import-from and
    ;; :intern are disjoint, and so are those of :export and :intern
    (let ((groups (list (cons :shadow shadow)
                        (cons :shadowing-import-from (mapcan (lambda (l) (copy-list (cdr l))) shadowing))
                        (cons :import-from (mapcan (lambda (l) (copy-list (cdr l))) import))
                        (cons :intern intern))))
      (do ((g groups (cdr g))) ((null g))
        (dolist (h (cdr g))
          (let ((common (intersection (cdr (car g)) (cdr h) :test #'string=)))
            (when common
              (%defpackage-error name "~A is named by both ~S and ~S" (car common) (car (car g)) (car h))))))
      (let ((common (intersection export intern :test #'string=)))
        (when common
          (%defpackage-error name "~A is named by both ~S and ~S" (car common) :export :intern))))
    `(eval-when (:compile-toplevel :load-toplevel :execute)
       (%defpackage ,(%string-name name) ',nicknames ',(if use-p use '("COMMON-LISP"))
                    ',shadow (%defpackage-accessible ',shadowing) (%defpackage-accessible ',import)
                    ',intern ',export ,doc nil))))

(defun %defpackage-error (name control &rest args)
  (error 'program-error :format-control "DEFPACKAGE ~A: ~?"
                        :format-arguments (list name control args)))

;; The (package-name symbol-name...) lists of :import-from and
;; :shadowing-import-from, less the names their package does not have:
;; each is a correctable package-error, whose continue restart leaves it out.
(defun %defpackage-accessible (lists)
  (mapcar (lambda (l)
            (let ((pkg (find-package (car l))))
              (if (null pkg)
                  l
                  (cons (car l)
                        (remove-if-not
                         (lambda (n)
                           (or (nth-value 1 (find-symbol n pkg))
                               (progn
                                 (cerror "Leave ~*~A out." 'package-error :package pkg
                                         :format-control "DEFPACKAGE: no symbol named ~A is accessible in ~A"
                                         :format-arguments (list n (package-name pkg)))
                                 nil)))
                         (cdr l))))))
          lists))

;; do-symbols, do-external-symbols, do-all-symbols: VAR takes each symbol
;; in turn (the symbols of the moment the loop starts); RESULT is evaluated
;; with VAR bound to NIL.
(defmacro %do-symbol-list ((var list result) &body body)
  `(dolist (,var ,list ,result) ,@body))

(defmacro do-symbols ((var &optional (package '*package*) result) &body body)
  `(%do-symbol-list (,var (mapcar #'car (%package-symbols ,package 3)) ,result) ,@body))

(defmacro do-external-symbols ((var &optional (package '*package*) result) &body body)
  `(%do-symbol-list (,var (mapcar #'car (%package-symbols ,package 2)) ,result) ,@body))

(defun %all-present-symbols ()
  (let ((all nil))
    (dolist (p (list-all-packages) all)
      (setq all (nconc (mapcar #'car (%package-symbols p 1)) all)))))

(defmacro do-all-symbols ((var &optional result) &body body)
  `(%do-symbol-list (,var (%all-present-symbols) ,result) ,@body))

;; The (symbol status package) entries with-package-iterator goes through.
(defun %package-iterator-entries (packages types)
  (when (null types)
    (error 'program-error :format-control "WITH-PACKAGE-ITERATOR needs a symbol type"))
  (dolist (ty types)
    (unless (member ty '(:internal :external :inherited))
      (error 'program-error :format-control "WITH-PACKAGE-ITERATOR: unknown symbol type ~S"
                            :format-arguments (list ty))))
  (let ((entries nil))
    (dolist (p (if (listp packages) packages (list packages)) (nreverse entries))
      (let ((pkg (find-package p)))
        (unless pkg
          (error 'package-error :package p :format-control "package ~A does not exist"
                                :format-arguments (list p)))
        (dolist (e (%package-symbols pkg (if (member :inherited types) 3 1)))
          (when (member (cdr e) types)
            (setq entries (cons (list (car e) (cdr e) pkg) entries))))))))

;; (with-package-iterator (name package-list symbol-type+) body): (name)
;; returns (values t symbol status package), or NIL when done.
(defmacro with-package-iterator ((name package-list &rest symbol-types) &body body)
  (let ((entries (gensym "ENTRIES")))
    `(let ((,entries (%package-iterator-entries ,package-list ',symbol-types)))
       (macrolet ((,name ()
                    '(if ,entries
                         (let ((e (car ,entries)))
                           (setq ,entries (cdr ,entries))
                           (values t (car e) (car (cdr e)) (car (cdr (cdr e)))))
                         nil)))
         ,@body))))
