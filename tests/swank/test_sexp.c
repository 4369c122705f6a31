/*
** test_sexp.c — the strict reader and the writer of SLIME's wire
** (controller/swank/sexp.h): what Emacs sends reads back as itself, and
** malformed, oversized and deeply nested messages are refused with a
** reason, never a crash (run under the sanitizers in CI).
*/
#include <stdlib.h>
#include <string.h>
#include "../c/check.h"
#include "sexp.h"

static sx *rd(const char *s, char *err) { return sx_read(s, strlen(s), err, 256); }

static void refused(const char *s, const char *why) {
  char err[256];
  sx *x = rd(s, err);
  CHECK(x == NULL);
  if (x || !strstr(err, why)) fprintf(stderr, "  for %s: '%s' (want '%s')\n", s, err, why);
  CHECK(strstr(err, why) != NULL);
  sx_free(x);
}

static char *nested(int depth) {
  char *s = malloc((size_t)depth * 2 + 1);
  for (int i = 0; i < depth; i++) s[i] = '(', s[depth * 2 - 1 - i] = ')';
  s[depth * 2] = 0;
  return s;
}

int main(void) {
  char err[256];
  /* a message as SLIME 2.27 sends it */
  sx *x = rd("(:emacs-rex (swank:compile-string-for-emacs \"(defun f (x) \\\"doc\\\" x)\n\" \"a.lisp\" "
             "'((:position 12) (:line 2 1)) nil 'nil) \"COMMON-LISP-USER\" t 7)\n", err);
  CHECK(x != NULL);
  CHECK(sx_is(sx_at(x, 0), ":EMACS-REX"));
  sx *form = sx_at(x, 1);
  CHECK_STR(sx_str(sx_at(form, 0)), "swank:compile-string-for-emacs");
  CHECK_STR(sx_str(sx_at(form, 1)), "(defun f (x) \"doc\" x)\n");
  CHECK(sx_is(sx_at(sx_at(form, 3), 0), "quote"));
  CHECK(sx_at(sx_at(sx_at(sx_at(form, 3), 1), 0), 1)->num == 12);
  CHECK(sx_nil(sx_at(form, 4)));
  CHECK(sx_at(x, 4)->type == SX_INT && sx_at(x, 4)->num == 7);
  CHECK(sx_plist(sx_at(sx_at(sx_at(form, 3), 1), 1), 0, ":line") != NULL);
  sx_free(x);
  /* integers and symbols, UTF-8 and escapes */
  x = rd("(-12 +3 1- swank::%cursor-marker% \"λ \\\\ \\\"\" a\\ b)", err);
  CHECK(x && x->len == 6);
  CHECK(x && sx_at(x, 0)->type == SX_INT && sx_at(x, 0)->num == -12);
  CHECK(x && sx_at(x, 1)->num == 3);
  CHECK(x && sx_at(x, 2)->type == SX_SYMBOL);
  CHECK_STR(sx_str(sx_at(x, 4)), "λ \\ \"");
  CHECK_STR(sx_str(sx_at(x, 5)), "a b");
  sx_free(x);
  x = rd("\"a\\0b\"", err);  /* a string holding any byte: its length counts */
  CHECK(x && x->len == 3);
  sx_free(x);
  /* malformed */
  refused("", "expected an expression");
  refused("(a b", "end of message inside a list");
  refused("(a))", "more than one expression");
  refused(")", "unmatched close parenthesis");
  refused("\"abc", "inside a string");
  refused("(a . b)", "dotted pairs");
  refused("#.(run)", "not part of the wire");
  refused("(a `b)", "not part of the wire");
  refused("(a ,b)", "not part of the wire");
  refused("(a |b|)", "not part of the wire");
  refused("(a) (b)", "more than one expression");
  refused("99999999999999999999999", "out of range");
  refused("\"\xff\xfe\"", "not UTF-8");
  refused("'", "expected an expression");
  /* deep nesting: SX_DEPTH_MAX reads, one more is refused; far more never
  ** reaches the stack's end */
  char *ok = nested(SX_DEPTH_MAX + 1), *deep = nested(SX_DEPTH_MAX + 2), *huge = nested(1000000);
  x = rd(ok, err);
  CHECK(x != NULL);
  sx_free(x);
  refused(deep, "nested deeper");
  refused(huge, "nested deeper");
  free(ok), free(deep), free(huge);
  char *quotes = malloc(200001);  /* ''''...x: quote nests too */
  memset(quotes, '\'', 200000), quotes[200000] = 0;
  refused(quotes, "nested deeper");
  free(quotes);
  /* too many nodes */
  size_t n = (SX_NODES_MAX + 10) * 2 + 3;
  char *many = malloc(n);
  size_t k = 0;
  many[k++] = '(';
  for (int i = 0; i < SX_NODES_MAX + 10; i++) many[k++] = 'a', many[k++] = ' ';
  many[k++] = ')', many[k] = 0;
  refused(many, "nodes");
  free(many);
  /* the writer: Emacs's read gives back the same text */
  sxw w;
  sxw_init(&w);
  sxw_open(&w), sxw_sym(&w, ":return"), sxw_open(&w), sxw_sym(&w, ":ok"), sxw_str(&w, "a \"q\" \\ λ\n");
  sxw_str_or_nil(&w, NULL), sxw_int(&w, -5), sxw_close(&w), sxw_int(&w, 3), sxw_close(&w);
  CHECK_STR(w.buf, "(:return (:ok \"a \\\"q\\\" \\\\ λ\n\" nil -5) 3)");
  x = rd(w.buf, err);
  CHECK(x && !strcmp(sx_str(sx_at(sx_at(x, 1), 1)), "a \"q\" \\ λ\n"));
  sx_free(x);
  sxw_free(&w);
  return CHECK_DONE();
}
