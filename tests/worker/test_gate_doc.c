/*
** test_gate_doc.c — docs/transactions.md lists the form gate's rules
** exactly as worker/gate.c's table has them (txn_gate_rules_markdown), so
** the document, and the model's reference that embeds its section, cannot
** drift from what the gate refuses.  Every rule's reason is a sentence that
** names what to do instead.
**
**   test_gate_doc [DOCS/transactions.md]            check (default:
**                                                   $JITI_GATE_DOC, else
**                                                   docs/transactions.md)
**   test_gate_doc DOCS/transactions.md --write      rewrite the list
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "txn.h"

static const char *const BEGIN = "<!-- gate rules: made from worker/gate.c's table (tests/worker/test_gate_doc.c) -->\n";
static const char *const END = "<!-- end of gate rules -->\n";

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
  if (b) b[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return b;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : getenv("JITI_GATE_DOC") ? getenv("JITI_GATE_DOC") : "docs/transactions.md";
  int write = argc > 2 && !strcmp(argv[2], "--write");
  size_t len = 0;
  char *doc = slurp(path, &len), *list = txn_gate_rules_markdown();
  CHECK(doc != NULL && list != NULL);
  if (!doc || !list) return 1;
  char *b = strstr(doc, BEGIN), *e = b ? strstr(b, END) : NULL;
  CHECK(b && e);
  if (!b || !e) {
    fprintf(stderr, "%s has no gate-rules block (%s ... %s)\n", path, BEGIN, END);
    return 1;
  }
  b += strlen(BEGIN);
  int same = (size_t)(e - b) == strlen(list) && !memcmp(b, list, strlen(list));
  if (write && !same) {
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    fwrite(doc, 1, (size_t)(b - doc), f);
    fputs(list, f);
    fputs(e, f);
    fclose(f);
    printf("rewrote the gate's rules in %s\n", path);
    same = 1;
  }
  if (!same)
    fprintf(stderr, "%s lists the gate's rules differently from worker/gate.c; rewrite it with\n"
            "  build/tests/worker/test_gate_doc %s --write\nthe table says:\n%s", path, path, list);
  CHECK(same);
  /* every rule has a name, a description and a reason that names the way
  ** forward or the cause */
  for (int i = 0; i < TXN_GATE_RULE_COUNT; i++) {
    const txn_GateRule *r = txn_gate_rule((txn_GateRuleId)i);
    CHECK(r && r->name && r->what && r->reason && *r->name && *r->what && *r->reason);
    CHECK(strstr(list, r->what) != NULL);
  }
  CHECK(txn_gate_rule(TXN_GATE_RULE_COUNT) == NULL);
  free(list);
  free(doc);
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed != 0;
}
