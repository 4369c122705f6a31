/*
** seeds.c — writes the seed corpora of the entry and frame fuzzers:
** every entry of a sample world (functions, macros, a structure, a
** condition, variables, data rows of every storable kind, invariants) in
** fuzz_entry's input format, and frames of the messages kernel and worker
** exchange, among them frames a compromised worker forges.  (The evaluator's seeds are the Lisp suites' forms; run.sh
** splits them.)
**   seeds ENTRY-DIR FRAME-DIR
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jiti.h"
#include "jiti_world.h"
#include "wire.h"

static const char *world =
  "(defstruct item name (price 0)) (define-condition low-stock (error) ((item :initarg :item :reader low-item)))"
  "(defmacro twice (x) `(* 2 ,x)) (defun total (items) (reduce #'+ items :key #'item-price))"
  "(defun (setf first-price) (v items) (setf (item-price (first items)) v))"
  "(defvar *items* (list (make-item :name \"a\" :price 1) (make-item :name \"b\" :price 2/3)))"
  "(defparameter *table* (let ((h (make-hash-table :test 'equal))) (setf (gethash \"k\" h) 1.5) h))"
  "(defconstant +limit+ 100) (defvar *vec* (make-array 3 :adjustable t :fill-pointer 1 :initial-element #\\x))"
  "(world-put :answer 42) (world-put \"list\" '(1 (2 . 3) #(4 5) \"six\" #\\7 8.5 -9/10 123456789012345678901234))"
  "(world-put '(a key) (make-item :name \"row\")) (world-put 7 (list :sym 'sym '|odd name| nil t))"
  "(deftype price () '(integer 0 1000)) (define-symbol-macro first-item (first *items*))"
  "(defsetf item-label (item) (v) `(setf (item-name ,item) ,v)) (defsetf first-of total)"
  "(define-compiler-macro total (&whole w items) (declare (ignore items)) w)"
  "(define-modify-macro appendf (&rest lists) append) (setf (documentation 'total 'function) \"Sum.\")"
  "(setf (get 'item 'colour) :red (get 'item 'shelf) (list 1 \"a\"))";

static int nseed;
static const char *entry_dir;

static int write_entry(void *ud, jiti_EntryKind k, const char *name, const unsigned char *b, size_t len) {
  (void)ud;
  char path[4096];
  snprintf(path, sizeof path, "%s/entry-%03d", entry_dir, nseed++);
  FILE *f = fopen(path, "wb");
  if (!f) { perror(path); exit(1); }
  fputc((int)k, f);
  fwrite(name, 1, strlen(name) + 1, f);
  fwrite(b, 1, len, f);
  fclose(f);
  return 0;
}

static void write_frame(const char *dir, int i, const char *json, const char *blob) {
  json_error_t e;
  json_t *m = json_loads(json, 0, &e);
  if (!m) { fprintf(stderr, "bad seed %s\n", json); exit(1); }
  unsigned char *buf = NULL;
  size_t len = 0, cap = 0;
  if (wire_frame(m, blob, blob ? strlen(blob) : 0, &buf, &len, &cap) != 0) exit(1);
  char path[4096];
  snprintf(path, sizeof path, "%s/frame-%03d", dir, i);
  FILE *f = fopen(path, "wb");
  if (!f) { perror(path); exit(1); }
  fputc(0, f);  /* fuzz_frames: where to split the input (0: one read) */
  fwrite(buf, 1, len, f);
  fclose(f);
  free(buf);
  json_decref(m);
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: seeds ENTRY-DIR FRAME-DIR\n"); return 2; }
  entry_dir = argv[1];
  jiti_State *S = jiti_open();
  jiti_world_enable(S);
  jiti_Result r;
  if (jiti_eval_string(S, world, strlen(world), &r) != JITI_OK) {
    fprintf(stderr, "seeds: the sample world failed: %s\n", r.message);
    return 1;
  }
  jiti_result_free(&r);
  char err[256];
  jiti_invariant_add(S, "positive", "(every (lambda (i) (>= (item-price i) 0)) *items*)", err, sizeof err);
  jiti_export_all(S, write_entry, NULL, err, sizeof err);
  jiti_close(S);
  const char *frames[][2] = {
    {"{\"op\":\"attempt\",\"generation\":4,\"kind\":\"action\",\"source\":\"(world-put :a 1)\"}", NULL},
    {"{\"op\":\"import\",\"entries\":[{\"kind\":\"data\",\"name\":\":A\",\"len\":5}]}", "R:A I1"},
    {"{\"event\":\"outcome\",\"outcome\":\"accepted\",\"generation\":5,\"changes\":[{\"kind\":\"data\",\"name\":\":A\",\"len\":3}]}", "abc"},
    {"{\"event\":\"paused\",\"pause\":{\"condition_type\":\"TYPE-ERROR\",\"restarts\":[{\"id\":\"p1-0\",\"name\":\"USE-VALUE\"}]}}", NULL},
    {"{\"op\":\"command\",\"command\":\"resume\",\"restart_id\":\"p1-0\",\"arguments\":\"(list 1)\"}", NULL},
    {"{\"op\":\"commit\",\"revision\":3}", NULL},
    /* what a compromised worker forges (tests/forged_frames.py): an
    ** operator's invariant removed by a call, a foreign declaration, a
    ** function's bytes under another name, a generation far ahead, a pause
    ** for a call; and frames the kernel takes: a data row, a decision */
    {"{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":5,\"status\":\"awaiting-commit\","
     "\"changes\":[{\"kind\":\"invariant\",\"name\":\"POS\",\"removed\":true,\"len\":0}]}", NULL},
    {"{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":5,\"status\":\"awaiting-commit\","
     "\"changes\":[{\"kind\":\"foreign\",\"name\":\"C-COS\",\"removed\":false,\"len\":66}]}",
     "FL\006Y\001\016DEFINE-FOREIGNY\001\005C-COSS\011libm.so.6S\003cosY\002\006DOUBLEL\001Y\002\006DOUBLENN"},
    {"{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":5,\"status\":\"awaiting-commit\","
     "\"changes\":[{\"kind\":\"function\",\"name\":\"F\",\"removed\":false,\"len\":20}]}",
     "FL\004Y\001\005DEFUNY\001\001GNI\0011N"},
    {"{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":5,\"status\":\"awaiting-commit\","
     "\"changes\":[{\"kind\":\"data\",\"name\":\":X\",\"removed\":false,\"len\":8,"
     "\"hash\":\"0000000000000000000000000000000000000000000000000000000000000000\"}]}", "RY\002\001XI\0011"},
    {"{\"event\":\"outcome\",\"reason\":\"accepted\",\"generation\":9223372036854775807,\"status\":\"idle\","
     "\"changes\":[],\"committed\":true}", NULL},
    {"{\"event\":\"paused\",\"pause\":{\"generation\":6,\"pause\":1,\"level\":1,\"condition_type\":\"ERROR\","
     "\"report\":\"x\",\"backtrace\":\"0: (F 1)\\n\",\"frames\":[{\"frame\":0,\"function\":\"F\",\"args\":[\"1\"],"
     "\"locals\":[{\"name\":\"X\",\"value\":\"1\"}]}],\"restarts\":[{\"id\":\"p1-0\",\"name\":\"ABORT\",\"report\":\"\",\"lambda_list\":\"\"}],"
     "\"steps_used\":0,\"step_budget\":20}}", NULL},
    {"{\"event\":\"committed\",\"generation\":6,\"status\":\"idle\"}", NULL},
    /* a shadow forked, and a report (the report socket's JSON) */
    {"{\"event\":\"shadowed\",\"pid\":4242}", NULL},
    {"{\"definitions\":{\"ok\":true},\"changes\":[{\"kind\":\"function\",\"name\":\"F\",\"hash\":\"ab\","
     "\"removed\":false}],\"repro\":{\"ok\":false,\"reason\":\"error\",\"condition\":\"TYPE-ERROR\",\"report\":\"r\"},"
     "\"invariants\":{\"ok\":true,\"failed\":[]},\"replay\":[{\"request\":\"(f 1)\",\"baseline\":{\"ok\":true,"
     "\"value\":\"1\"},\"baseline_again\":{\"ok\":true,\"value\":\"1\"},\"candidate\":{\"ok\":true,\"values\":[]},"
     "\"stable\":true,\"differs\":true}],\"elapsed_ms\":3}", NULL},
    {"{\"event\":\"ready\",\"generation\":5,\"status\":\"idle\",\"message\":\"\",\"foreign\":{\"granted\":"
     "[\"libm.so.6\"],\"unavailable\":[],\"failed\":[]}}", NULL},
  };
  for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++) write_frame(argv[2], (int)i, frames[i][0], frames[i][1]);
  printf("seeds: %d entries, %zu frames\n", nseed, sizeof frames / sizeof frames[0]);
  return 0;
}
