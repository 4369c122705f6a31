/*
** ekv.c — keys and transactions (etcd.h): range, put, delete, compact,
** and transactions built compare by compare, operation by operation.
*/
#include <stdlib.h>
#include <string.h>
#include "etcd_int.h"

size_t etcd_prefix_end(const void *prefix, size_t len, void *end) {
  const unsigned char *p = prefix;
  unsigned char *o = end;
  for (size_t i = len; i-- > 0;)
    if (p[i] != 0xff) {
      memcpy(o, p, i);
      o[i] = (unsigned char)(p[i] + 1);
      return i + 1;
    }
  o[0] = 0;
  return 1;
}

/* A RangeRequest, PutRequest or DeleteRangeRequest's body; NULL without
** memory. */
static json_t *range_body(const void *key, size_t key_len, const void *end, size_t end_len) {
  json_t *o = json_object();
  if (!o || ejson_set(o, "key", ejson_bytes(key, key_len)) ||
      (end && ejson_set(o, "range_end", ejson_bytes(end, end_len)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *put_body(const void *key, size_t key_len, const void *value, size_t value_len, int64_t lease) {
  json_t *o = range_body(key, key_len, NULL, 0);
  if (o &&
      (ejson_set(o, "value", ejson_bytes(value, value_len)) ||
       (lease && ejson_set(o, "lease", ejson_i64_new(lease))))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

etcd_Error etcd_range(etcd *e, const void *key, size_t key_len, const void *end, size_t end_len, int64_t revision,
                      int64_t limit, int keys_only, etcd_Range *out) {
  memset(out, 0, sizeof *out);
  json_t *b = range_body(key, key_len, end, end_len);
  if (b &&
      ((revision && ejson_set(b, "revision", ejson_i64_new(revision))) ||
       (limit && ejson_set(b, "limit", ejson_i64_new(limit))) ||
       (keys_only && ejson_set(b, "keys_only", json_true())))) {
    json_decref(b);
    b = NULL;
  }
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/kv/range", b, ECALL_READ, &reply);
  if (err) return err;
  if (ejson_range(reply, out))
    err = eclient_fail(e, ETCD_EPROTO, "etcd %s: a range reply that does not parse", etcd_member(e));
  json_decref(reply);
  return err;
}

etcd_Error etcd_put(etcd *e, const void *key, size_t key_len, const void *value, size_t value_len, int64_t lease,
                    int64_t *revision) {
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/kv/put", put_body(key, key_len, value, value_len, lease), ECALL_WRITE, &reply);
  if (err) return err;
  int64_t rev = 0;
  if (ejson_i64(json_object_get(reply, "header"), "revision", &rev) || !rev)
    err = eclient_fail(e, ETCD_EPROTO, "etcd %s: a put reply without its revision", etcd_member(e));
  else if (revision) *revision = rev;
  json_decref(reply);
  return err;
}

etcd_Error etcd_delete(etcd *e, const void *key, size_t key_len, const void *end, size_t end_len, int64_t *deleted) {
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/kv/deleterange", range_body(key, key_len, end, end_len), ECALL_WRITE, &reply);
  if (err) return err;
  int64_t n = 0;
  if (ejson_i64(reply, "deleted", &n))
    err = eclient_fail(e, ETCD_EPROTO, "etcd %s: a delete reply that does not parse", etcd_member(e));
  else if (deleted) *deleted = n;
  json_decref(reply);
  return err;
}

etcd_Error etcd_compact(etcd *e, int64_t revision) {
  json_t *b = json_object();
  if (b && (ejson_set(b, "revision", ejson_i64_new(revision)) || ejson_set(b, "physical", json_true()))) {
    json_decref(b);
    b = NULL;
  }
  json_t *reply;
  /* compacting twice to the same revision is refused, never harmful: a read */
  etcd_Error err = eclient_call(e, "/v3/kv/compaction", b, ECALL_READ, &reply);
  if (!err) json_decref(reply);
  return err;
}

/* ------------------------------------------------------------ transactions */

struct etcd_txn {
  json_t *compare, *branch[2];
  size_t ops;
  int nomem, invalid;
};

etcd_txn *etcd_txn_new(void) {
  etcd_txn *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->compare = json_array();
  t->branch[ETCD_SUCCESS] = json_array();
  t->branch[ETCD_FAILURE] = json_array();
  if (!t->compare || !t->branch[0] || !t->branch[1]) {
    etcd_txn_free(t);
    return NULL;
  }
  return t;
}

void etcd_txn_free(etcd_txn *t) {
  if (!t) return;
  json_decref(t->compare);
  json_decref(t->branch[0]);
  json_decref(t->branch[1]);
  free(t);
}

static const char *const target_names[] = {"VERSION", "CREATE", "MOD", "VALUE", "LEASE"};
static const char *const target_fields[] = {"version", "create_revision", "mod_revision", "value", "lease"};
static const char *const cmp_names[] = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};

static json_t *compare_body(const void *key, size_t key_len, etcd_Target target, etcd_Cmp cmp, json_t *v) {
  json_t *o = range_body(key, key_len, NULL, 0);
  if (!o || ejson_set(o, "target", json_string(target_names[target])) ||
      ejson_set(o, "result", json_string(cmp_names[cmp])) || ejson_set(o, target_fields[target], v)) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static int add(etcd_txn *t, json_t *arr, json_t *item) {
  if (!item || json_array_append_new(arr, item)) {
    t->nomem = 1;
    return -1;
  }
  return 0;
}

int etcd_txn_compare(etcd_txn *t, const void *key, size_t key_len, etcd_Target target, etcd_Cmp cmp, int64_t value) {
  if (target == ETCD_VALUE || (unsigned)target > ETCD_LEASE || (unsigned)cmp > ETCD_NOT_EQUAL) {
    t->invalid = 1;
    return -1;
  }
  return add(t, t->compare, compare_body(key, key_len, target, cmp, ejson_i64_new(value)));
}

int etcd_txn_compare_value(etcd_txn *t, const void *key, size_t key_len, etcd_Cmp cmp, const void *value,
                           size_t value_len) {
  if ((unsigned)cmp > ETCD_NOT_EQUAL) {
    t->invalid = 1;
    return -1;
  }
  return add(t, t->compare, compare_body(key, key_len, ETCD_VALUE, cmp, ejson_bytes(value, value_len)));
}

static int add_op(etcd_txn *t, etcd_Branch b, const char *kind, json_t *body) {
  if ((unsigned)b > ETCD_FAILURE) {
    json_decref(body);
    t->invalid = 1;
    return -1;
  }
  json_t *op = body ? json_object() : NULL;
  if (op && json_object_set_new(op, kind, body)) {
    json_decref(op);
    op = NULL;
  } else if (!op) {
    json_decref(body);
  }
  if (add(t, t->branch[b], op)) return -1;
  t->ops++;
  return 0;
}

int etcd_txn_put(etcd_txn *t, etcd_Branch b, const void *key, size_t key_len, const void *value, size_t value_len,
                 int64_t lease) {
  return add_op(t, b, "request_put", put_body(key, key_len, value, value_len, lease));
}

int etcd_txn_delete(etcd_txn *t, etcd_Branch b, const void *key, size_t key_len, const void *end, size_t end_len) {
  return add_op(t, b, "request_delete_range", range_body(key, key_len, end, end_len));
}

int etcd_txn_range(etcd_txn *t, etcd_Branch b, const void *key, size_t key_len, const void *end, size_t end_len) {
  return add_op(t, b, "request_range", range_body(key, key_len, end, end_len));
}

size_t etcd_txn_ops(const etcd_txn *t) { return t->ops; }

static json_t *txn_body(const etcd_txn *t) {
  json_t *o = json_object();
  if (!o || json_object_set(o, "compare", t->compare) || json_object_set(o, "success", t->branch[ETCD_SUCCESS]) ||
      json_object_set(o, "failure", t->branch[ETCD_FAILURE])) {
    json_decref(o);
    return NULL;
  }
  return o;
}

size_t etcd_txn_size(const etcd_txn *t) {
  json_t *o = txn_body(t);
  size_t n = o ? json_dumpb(o, NULL, 0, JSON_COMPACT) : 0;
  json_decref(o);
  return n;
}

void etcd_txn_result_free(etcd_TxnResult *r) {
  if (!r) return;
  for (size_t i = 0; i < r->nranges; i++) etcd_range_free(&r->ranges[i]);
  free(r->ranges);
  memset(r, 0, sizeof *r);
}

etcd_Error etcd_txn_commit(etcd *e, const etcd_txn *t, etcd_TxnResult *out) {
  memset(out, 0, sizeof *out);
  if (t->invalid)
    return eclient_fail(e, ETCD_EINVAL, "an etcd transaction with a bad compare target, result or branch");
  if (t->nomem) return eclient_fail(e, ETCD_ENOMEM, "out of memory building an etcd transaction");
  json_t *reply;
  etcd_Error err = eclient_call(e, "/v3/kv/txn", txn_body(t), ECALL_WRITE, &reply);
  if (err) return err;
  out->succeeded = json_is_true(json_object_get(reply, "succeeded"));
  json_t *rs = json_object_get(reply, "responses");
  if (ejson_i64(json_object_get(reply, "header"), "revision", &out->revision) || (rs && !json_is_array(rs))) {
    json_decref(reply);
    return eclient_fail(e, ETCD_EPROTO, "etcd %s: a transaction reply that does not parse", etcd_member(e));
  }
  size_t n = json_array_size(rs), nr = 0;
  for (size_t i = 0; i < n; i++) nr += json_object_get(json_array_get(rs, i), "response_range") != NULL;
  if (nr && !(out->ranges = calloc(nr, sizeof *out->ranges))) {
    json_decref(reply);
    return eclient_fail(e, ETCD_ENOMEM, "out of memory reading an etcd transaction's reply");
  }
  for (size_t i = 0; i < n; i++) {
    json_t *r = json_object_get(json_array_get(rs, i), "response_range");
    if (!r) continue;
    if (ejson_range(r, &out->ranges[out->nranges])) {
      etcd_txn_result_free(out);
      json_decref(reply);
      return eclient_fail(e, ETCD_EPROTO, "etcd %s: a transaction's range reply that does not parse", etcd_member(e));
    }
    out->ranges[out->nranges++].revision = out->revision; /* a nested header holds only the revision, if anything */
  }
  json_decref(reply);
  return ETCD_OK;
}
