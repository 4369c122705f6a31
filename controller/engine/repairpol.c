/*
** repairpol.c — the repair policy request (docs/protocol.md, "Automatic
** repair"; docs/repair.md): which functions may become incidents, read and
** changed the same way by the kernel and by `jiti repair` on a store no
** kernel serves.  The rules themselves are the store's (store.h,
** store_repair_*): this file only turns a request into store calls and the
** rules into a reply.
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "engine.h"

/* The policy's actions: one name table. */
static const char *const actions[REPAIRPOL_ACTION_COUNT] = {"enable", "disable", "list"};

const char *repairpol_action_name(int a) {
  return a >= 0 && a < REPAIRPOL_ACTION_COUNT ? actions[a] : NULL;
}

int repairpol_action_parse(const char *s) {
  for (int i = 0; s && i < REPAIRPOL_ACTION_COUNT; i++)
    if (!strcmp(s, actions[i])) return i;
  return -1;
}

json_t *repairpol_rules_json(const store_repair_rule *rules, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++) {
    json_t *ex = json_array();
    for (size_t k = 0; ex && k < rules[i].nexpected; k++)
      json_array_append_new(ex, json_pack("{s:s, s:s}", "kind", store_expect_kind_name(rules[i].expected[k].kind),
                                          "text", rules[i].expected[k].text));
    json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "selector", rules[i].selector, "mode",
                                       store_repair_mode_name(rules[i].mode), "expected", ex ? ex : json_array()));
  }
  return a;
}

int repairpol_selector(const char *in, char *out, size_t n, char *err, size_t errlen) {
  size_t j = 0;
  int bars = 0, colons = 0;
  for (size_t i = 0; in && in[i]; i++) {
    unsigned char c = (unsigned char)in[i];
    if (j + 3 >= n) {
      snprintf(err, errlen, "the selector is longer than %zu bytes", n - 3);
      return -1;
    }
    if (c == '|') bars = !bars;
    else if (c == '\\' && in[i + 1]) { out[j++] = (char)c; c = (unsigned char)in[++i]; }
    else if (!bars && (c < 0x20 || c == 0x7f || strchr(" ()'\"`,;#", c))) {
      snprintf(err, errlen, "the selector %.200s is no name: give a function (RUN, APP::RUN), a prefix "
               "(APP::PARSE-*) or a package (APP:)", in);
      return -1;
    } else if (!bars && c == ':') {
      /* APP:RUN and APP::RUN are one entry name, APP::RUN; APP: a package */
      if (colons++) {
        snprintf(err, errlen, "the selector %.200s has more than one package marker", in);
        return -1;
      }
      if (in[i + 1] == ':') i++;
      out[j++] = ':';
      if (in[i + 1]) out[j++] = ':';
      continue;
    } else if (!bars) {
      c = (unsigned char)toupper(c);   /* as the reader folds it */
    }
    out[j++] = (char)c;
  }
  out[j] = 0;
  if (!j || bars) {
    snprintf(err, errlen, "%s", !j ? "the selector is empty" : "the selector has an unclosed |");
    return -1;
  }
  /* the entry names of COMMON-LISP-USER's symbols carry no package */
  static const char *const user[] = {"COMMON-LISP-USER::", "CL-USER::"};
  for (int k = 0; k < 2; k++) {
    size_t m = strlen(user[k]);
    if (!strncmp(out, user[k], m) && out[m]) memmove(out, out + m, strlen(out + m) + 1);
  }
  return 0;
}

/* The open incidents, collected while listing (one read transaction: the
** policy is matched and the incidents moved after it). */
#define OPEN_SEEN_MAX 256
typedef struct { uint64_t id[OPEN_SEEN_MAX]; int status[OPEN_SEEN_MAX]; char *function[OPEN_SEEN_MAX]; size_t n; } Open;

static int open_one(void *arg, const store_incident *inc) {
  Open *o = arg;
  if (o->n == OPEN_SEEN_MAX) return 1;
  o->id[o->n] = inc->id;
  o->status[o->n] = inc->status;
  o->function[o->n++] = strdup(inc->function);
  return 0;
}

/* Disabling repair for a function cancels its pending incidents: those of
** the functions no rule selects any more (their ids into cancelled). */
static void cancel_orphans(store_env *s, json_t *cancelled) {
  Open o = {.n = 0};
  if (store_incidents_list(s, STORE_INC_OPEN_MASK, 0, open_one, &o) == STORE_OK)
    for (size_t i = 0; i < o.n; i++) {
      store_repair_rule *r = NULL;
      int rc = o.function[i] ? store_repair_match(s, o.function[i], &r) : STORE_ENOMEM;
      store_free(r);
      if (rc == STORE_ENOENT &&
          store_incident_transition(s, o.id[i], o.status[i], STORE_INC_CANCELLED, 0, NULL) == STORE_OK)
        json_array_append_new(cancelled, json_integer((json_int_t)o.id[i]));
    }
  for (size_t i = 0; i < o.n; i++) free(o.function[i]);
}

/* Disabling repair for a function forgets its traffic sample: those of
** the functions no rule selects any more (their names into forgotten). */
typedef struct { char **name; size_t n, cap; } Names;

static int sampled(void *arg, const char *function, uint32_t signatures, uint64_t bytes) {
  Names *l = arg;
  (void)signatures, (void)bytes;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    char **v = realloc(l->name, cap * sizeof *v);
    if (!v) return 1;
    l->name = v;
    l->cap = cap;
  }
  return !(l->name[l->n] = strdup(function)) || (l->n++, 0);
}

static void forget_orphans(store_env *s, json_t *forgotten) {
  Names l = {NULL, 0, 0};
  if (store_traffic_functions(s, sampled, &l) == STORE_OK)
    for (size_t i = 0; i < l.n; i++) {
      store_repair_rule *r = NULL;
      int rc = store_repair_match(s, l.name[i], &r);
      store_free(r);
      if (rc == STORE_ENOENT && store_traffic_forget(s, l.name[i], 0) == STORE_OK)
        json_array_append_new(forgotten, json_string(l.name[i]));
    }
  for (size_t i = 0; i < l.n; i++) free(l.name[i]);
  free(l.name);
}

/* The reply to any action: every rule after it. */
static json_t *listed(store_env *s, char *code, size_t codelen, char *err, size_t errlen) {
  store_repair_rule *rules = NULL;
  size_t n = 0;
  if (store_repair_list(s, &rules, &n) != STORE_OK) {
    snprintf(code, codelen, "store-error");
    snprintf(err, errlen, "%s", store_errmsg(s));
    return NULL;
  }
  json_t *r = json_pack("{s:b, s:o}", "ok", 1, "rules", repairpol_rules_json(rules, n));
  store_free(rules);
  return r;
}

static json_t *refused(char *code, size_t codelen, const char *c, char *err, size_t errlen, const char *why) {
  snprintf(code, codelen, "%s", c);
  snprintf(err, errlen, "%s", why);
  return NULL;
}

json_t *repairpol_apply(store_env *s, json_t *req, char *code, size_t codelen, char *err, size_t errlen) {
  int action = repairpol_action_parse(json_string_value(json_object_get(req, "action")));
  const char *given = json_string_value(json_object_get(req, "selector"));
  char sel[STORE_NAME_MAX + 8];
  if (action < 0)
    return refused(code, codelen, "invalid-request", err, errlen,
                   "repair-policy needs \"action\": \"enable\", \"disable\" or \"list\"");
  if (action == REPAIRPOL_LIST) return listed(s, code, codelen, err, errlen);
  if (!given)
    return refused(code, codelen, "invalid-request", err, errlen,
                   "repair-policy enable and disable need \"selector\": a function (APP::RUN), a prefix "
                   "(APP::PARSE-*) or a package (APP:)");
  if (repairpol_selector(given, sel, sizeof sel, err, errlen)) {
    snprintf(code, codelen, "invalid-arguments");   /* well formed, but no name */
    return NULL;
  }
  int rc;
  if (action == REPAIRPOL_DISABLE) {
    rc = store_repair_delete(s, sel);
    if (rc == STORE_ENOENT) {
      snprintf(code, codelen, "not-found");
      snprintf(err, errlen, "no rule has the selector %.200s ('jiti repair list' shows them)", sel);
      return NULL;
    }
  } else {
    json_t *mode = json_object_get(req, "mode"), *ex = json_object_get(req, "expected");
    int m = mode ? store_repair_mode_parse(json_string_value(mode)) : STORE_REPAIR_FAIL;
    if (!m) return refused(code, codelen, "invalid-request", err, errlen, "\"mode\" must be \"fail\" or \"pause\"");
    if (ex && (!json_is_array(ex) || json_array_size(ex) > STORE_REPAIR_EXPECTED_MAX)) {
      snprintf(code, codelen, "invalid-request");
      snprintf(err, errlen, "\"expected\" must be an array of at most %u {\"kind\", \"text\"}",
               STORE_REPAIR_EXPECTED_MAX);
      return NULL;
    }
    store_expect e[STORE_REPAIR_EXPECTED_MAX];
    size_t i, n = 0;
    json_t *v;
    json_array_foreach(ex, i, v) {
      int k = store_expect_kind_parse(json_string_value(json_object_get(v, "kind")));
      const char *t = json_string_value(json_object_get(v, "text"));
      if (!json_is_object(v) || !k || !t || json_object_size(v) != 2)
        return refused(code, codelen, "invalid-request", err, errlen,
                       "each of \"expected\" is {\"kind\": \"condition\"|\"report\", \"text\": STRING}");
      e[n++] = (store_expect){k, t};
    }
    store_repair_rule rule = {sel, m, n, e};
    rc = store_repair_put(s, &rule);
  }
  if (rc != STORE_OK)
    return refused(code, codelen, rc == STORE_EINVAL ? "invalid-arguments" : "store-error", err, errlen,
                   store_errmsg(s));
  json_t *cancelled = action == REPAIRPOL_DISABLE ? json_array() : NULL;
  json_t *forgotten = action == REPAIRPOL_DISABLE ? json_array() : NULL;
  if (cancelled) cancel_orphans(s, cancelled);
  if (forgotten) forget_orphans(s, forgotten);
  json_t *r = listed(s, code, codelen, err, errlen);
  if (r && cancelled) json_object_set(r, "cancelled", cancelled);
  if (r && forgotten) json_object_set(r, "forgotten", forgotten);
  json_decref(cancelled);
  json_decref(forgotten);
  return r;
}
