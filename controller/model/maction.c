/*
** maction.c — the action table and everything derived from it: the
** function tools, the structured-output schema, the validator and the
** human-readable reference (maction.h).
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maction.h"

typedef enum FType {
  F_SOURCE,        /* a string of Lisp source, at most MACTION_MAX_SOURCE bytes */
  F_TEXT,          /* a string, at most MACTION_MAX_STRING bytes */
  F_TEXT_NULL,     /* a string or null */
  F_REVISION,      /* an integer >= 1 */
  F_ENTRY_KIND_NULL, /* one of entry_kinds, or null */
  F_FRAME_NULL     /* a pause's frame number (0 .. MACTION_FRAME_MAX), or null */
} FType;

typedef struct Field {
  const char *name;
  FType type;
  const char *desc;
} Field;

typedef struct Kind {
  const char *name;
  const char *desc;
  Field fields[4];   /* up to three, then a NULL name */
} Kind;

/* The kinds of entry `inspect` can name (the kernel's inspect op): the
** kernel's names (jiti_entry_kind_name), which this library, linking
** nothing of jiti, repeats; tests/operate.sh checks they agree. */
static const char *const entry_kinds[] = {"function", "macro", "variable", "structure", "data", "invariant",
                                          "class", "generic", "method", "foreign", "package", "type",
                                          "symbol-macro", "setf-expander", "compiler-macro", "documentation",
                                          "plist", "method-combination", "file", NULL};

/* The one source of truth: order = maction_Kind. */
static const Kind kinds[MA_KIND_COUNT] = {
  [MA_EVALUATE] = {"evaluate",
    "Evaluate one Lisp form on the live world as a checked transaction: it passes the form "
    "gate, runs inside a checkpoint under limits, and is kept as a new revision only if every "
    "invariant still holds; otherwise everything it did is restored. An unhandled error pauses "
    "it: answer the pause with resume, abort, or evaluate (a repair inside the paused "
    "transaction; with a frame, in that paused frame's lexical environment: it reads and setqs the frame's "
    "local variables).",
    {{"source", F_SOURCE, "Exactly one Lisp form, e.g. (defun f (x) (* 2 x))."},
     {"frame", F_FRAME_NULL,
      "While paused: the number of a frame of the pause to evaluate in (its locals are visible), or null."}}},
  [MA_PREVIEW] = {"preview",
    "Evaluate one form like evaluate and report its value and the entries it would change, "
    "then restore everything: nothing is kept.",
    {{"source", F_SOURCE, "Exactly one Lisp form."}}},
  [MA_RESUME] = {"resume",
    "Continue the paused transaction through one restart of its menu.",
    {{"restart_id", F_TEXT,
      "The id of a restart in the pause's menu, e.g. p1-0, or its name, e.g. CONTINUE (the first "
      "of that name, innermost level first)."},
     {"arguments", F_TEXT_NULL,
      "Lisp source of one expression returning the list of arguments for the restart, "
      "e.g. (list 42); null for none."}}},
  [MA_ABORT] = {"abort",
    "Abandon the paused transaction: everything it did is restored.",
    {{NULL, 0, NULL}}},
  [MA_INSPECT] = {"inspect",
    "Show one entry of the world in full: a definition's source or a value.",
    {{"kind", F_ENTRY_KIND_NULL, "The entry's kind, or null to look in every kind."},
     {"name", F_TEXT, "The entry's name as the view prints it, e.g. TOTAL-PRICE or :RATE."}}},
  [MA_CHECK] = {"check",
    "Run the goals against the world now and show their results, with the last invariant check.",
    {{NULL, 0, NULL}}},
  [MA_ROLLBACK] = {"rollback",
    "Publish a new revision equal to an older one; the invariants are checked again.",
    {{"revision", F_REVISION, "The number of the revision to return to (1 or more)."}}},
  [MA_FINISH] = {"finish",
    "Stop working on the request: it is done, or it cannot be done.",
    {{"summary", F_TEXT, "What was done, or why it cannot be done, in a sentence or two."}}},
  [MA_REPAIR] = {"repair",
    "Repair the failing function: replacement definitions, verified on a copy of the live world (the failed call "
    "again, every invariant, and recorded calls replayed) before they are applied.",
    {{"source", F_SOURCE,
      "The replacement definitions as one form: (defun f ...), or (progn (defun f ...) (defun g ...))."},
     {"reason", F_TEXT, "What was wrong and why this fixes it, in a sentence or two."},
     {"intended_changes", F_TEXT_NULL,
      "Results of recorded calls this repair changes on purpose, and why; null when it changes none."}}},
  [MA_EXPECTED] = {"expected",
    "Decline: the failure is what the application means to happen (e.g. an error it signals on purpose).",
    {{"reason", F_TEXT, "Why the failure is intended, in a sentence or two."}}},
  [MA_INSUFFICIENT_EVIDENCE] = {"insufficient_evidence",
    "Decline: the evidence does not show what a correct repair would be.",
    {{"reason", F_TEXT, "What is missing, in a sentence or two."}}},
};

int maction_set_size(maction_Set set) {
  int n = 0;
  for (int k = 0; k < MA_KIND_COUNT; k++) n += (set & MACTION_BIT(k)) != 0;
  return n;
}

static int in_set(maction_Set set, int k) { return k >= 0 && k < MA_KIND_COUNT && (set & MACTION_BIT(k)); }

const char *maction_name(maction_Kind k) {
  return (unsigned)k < MA_KIND_COUNT ? kinds[k].name : NULL;
}

int maction_kind(const char *s) {
  if (!s) return -1;
  for (int i = 0; i < MA_KIND_COUNT; i++)
    if (!strcmp(s, kinds[i].name)) return i;
  return -1;
}

int maction_kind_of(json_t *action) {
  return maction_kind(json_string_value(json_object_get(action, "type")));
}

/* ------------------------------------------------------------ schemas */

static json_t *field_schema(const Field *f) {
  json_t *s = NULL;
  switch (f->type) {
  case F_SOURCE:
  case F_TEXT:
    s = json_pack("{s:s}", "type", "string");
    break;
  case F_TEXT_NULL:
    s = json_pack("{s:[s,s]}", "type", "string", "null");
    break;
  case F_REVISION:
    /* no "minimum": not every strict-schema implementation accepts it;
       the validator checks the range */
    s = json_pack("{s:s}", "type", "integer");
    break;
  case F_FRAME_NULL:
    s = json_pack("{s:[s,s]}", "type", "integer", "null");
    break;
  case F_ENTRY_KIND_NULL: {
    json_t *e = json_array();
    for (int i = 0; entry_kinds[i]; i++) json_array_append_new(e, json_string(entry_kinds[i]));
    json_array_append_new(e, json_null());
    s = json_pack("{s:[s,s], s:o}", "type", "string", "null", "enum", e);
    break;
  }
  }
  if (s) json_object_set_new(s, "description", json_string(f->desc));
  return s;
}

/* The object schema of kind k; with_type: a first property "type" fixed to
** the kind's name (the structured-output variant). */
static json_t *kind_schema(int k, int with_type) {
  json_t *props = json_object(), *req = json_array();
  if (with_type) {
    json_object_set_new(props, "type", json_pack("{s:s, s:[s]}", "type", "string", "enum", kinds[k].name));
    json_array_append_new(req, json_string("type"));
  }
  for (const Field *f = kinds[k].fields; f->name; f++) {
    json_object_set_new(props, f->name, field_schema(f));
    json_array_append_new(req, json_string(f->name));
  }
  return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required", req,
                   "additionalProperties", 0);
}

json_t *maction_tools(int flavor, maction_Set set) {
  json_t *tools = json_array();
  for (int k = 0; k < MA_KIND_COUNT; k++) {
    if (!in_set(set, k)) continue;
    json_t *fn = json_pack("{s:s, s:s, s:o, s:b}", "name", kinds[k].name, "description", kinds[k].desc,
                           "parameters", kind_schema(k, 0), "strict", 1);
    if (flavor == MACTION_CHAT) {
      json_array_append_new(tools, json_pack("{s:s, s:o}", "type", "function", "function", fn));
    } else {
      json_object_set_new(fn, "type", json_string("function"));
      json_array_append_new(tools, fn);
    }
  }
  return tools;
}

json_t *maction_output_schema(maction_Set set) {
  json_t *any = json_array();
  for (int k = 0; k < MA_KIND_COUNT; k++) {
    if (!in_set(set, k)) continue;
    json_t *s = kind_schema(k, 1);
    json_object_set_new(s, "description", json_string(kinds[k].desc));
    json_array_append_new(any, s);
  }
  return json_pack("{s:s, s:{s:{s:o, s:s}}, s:[s], s:b}", "type", "object", "properties", "action", "anyOf", any,
                   "description", "The one action to take next.", "required", "action",
                   "additionalProperties", 0);
}

/* ----------------------------------------------------------- validation */

static int fail(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return -1;
}

/* What a field of type t holds, in words (into buf for the entry kinds,
** listed from entry_kinds). */
typedef struct Words {
  char text[512];
} Words;

static const char *type_words(FType t, Words *w) {
  switch (t) {
  case F_SOURCE: return "a string holding one Lisp form";
  case F_TEXT: return "a string";
  case F_TEXT_NULL: return "a string or null";
  case F_REVISION: return "an integer, 1 or more";
  case F_ENTRY_KIND_NULL: {
    size_t n = (size_t)snprintf(w->text, sizeof w->text, "one of ");
    for (int i = 0; entry_kinds[i] && n < sizeof w->text; i++)
      n += (size_t)snprintf(w->text + n, sizeof w->text - n, "%s, ", entry_kinds[i]);
    if (n < sizeof w->text) snprintf(w->text + n, sizeof w->text - n, "or null");
    return w->text;
  }
  case F_FRAME_NULL: return "a frame number of the pause (0 or more), or null";
  }
  return "?";
}

/* Check one field value v (NULL: absent) of kind k; copy it into out. */
static int check_field(int k, const Field *f, json_t *v, json_t *out, char *err, size_t len) {
  const char *kn = kinds[k].name;
  int nullable = f->type == F_TEXT_NULL || f->type == F_ENTRY_KIND_NULL || f->type == F_FRAME_NULL;
  if (!v || json_is_null(v)) {
    if (nullable) return 0;
    return fail(err, len, "action \"%s\" needs \"%s\" (%s)", kn, f->name, type_words(f->type, &(Words){{0}}));
  }
  switch (f->type) {
  case F_SOURCE:
  case F_TEXT:
  case F_TEXT_NULL: {
    if (!json_is_string(v)) break;
    size_t n = json_string_length(v), max = f->type == F_SOURCE ? MACTION_MAX_SOURCE : MACTION_MAX_STRING;
    if (strlen(json_string_value(v)) != n)
      return fail(err, len, "\"%s\" of action \"%s\" contains a NUL character", f->name, kn);
    if (n > max)
      return fail(err, len, "\"%s\" of action \"%s\" is %zu bytes; at most %zu are allowed", f->name, kn, n, max);
    if (f->type == F_SOURCE && strspn(json_string_value(v), " \t\r\n") == n)
      return fail(err, len, "\"%s\" of action \"%s\" is empty; it must hold one Lisp form", f->name, kn);
    json_object_set(out, f->name, v);
    return 0;
  }
  case F_REVISION:
    if (!json_is_integer(v) || json_integer_value(v) < 1) break;
    json_object_set(out, f->name, v);
    return 0;
  case F_FRAME_NULL:
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > MACTION_FRAME_MAX) break;
    json_object_set(out, f->name, v);
    return 0;
  case F_ENTRY_KIND_NULL:
    if (!json_is_string(v)) break;
    for (int i = 0; entry_kinds[i]; i++)
      if (!strcmp(json_string_value(v), entry_kinds[i])) {
        json_object_set(out, f->name, v);
        return 0;
      }
    break;
  }
  return fail(err, len, "\"%s\" of action \"%s\" must be %s", f->name, kn, type_words(f->type, &(Words){{0}}));
}

/* Validate the fields of kind k in obj (skip: a member not to treat as a
** field, e.g. "type"); *out = the canonical action. */
static int check_kind(int k, json_t *obj, const char *skip, json_t **out, char *err, size_t len) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    if (skip && !strcmp(key, skip)) continue;
    const Field *f = kinds[k].fields;
    while (f->name && strcmp(f->name, key)) f++;
    if (!f->name) {
      if (!kinds[k].fields[0].name)
        return fail(err, len, "action \"%s\" takes no fields, but \"%s\" was given", kinds[k].name, key);
      return fail(err, len, "action \"%s\" has no field \"%s\"", kinds[k].name, key);
    }
  }
  json_t *a = json_pack("{s:s}", "type", kinds[k].name);
  if (!a) return fail(err, len, "out of memory");
  for (const Field *f = kinds[k].fields; f->name; f++)
    if (check_field(k, f, json_object_get(obj, f->name), a, err, len)) {
      json_decref(a);
      return -1;
    }
  *out = a;
  return 0;
}

static void kind_list(maction_Set set, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = 0;
  for (int k = 0; k < MA_KIND_COUNT && n < len; k++)
    if (in_set(set, k)) n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", kinds[k].name);
}

int maction_validate(maction_Set set, const char *tool, json_t *args, json_t **out, char *err, size_t errlen) {
  char names[192];
  *out = NULL;
  kind_list(set, names, sizeof names);
  if (tool) {
    int k = maction_kind(tool);
    if (!in_set(set, k)) return fail(err, errlen, "there is no action \"%.64s\"; the actions are %s", tool, names);
    if (!json_is_object(args))
      return fail(err, errlen, "the arguments of \"%s\" must be a JSON object", tool);
    return check_kind(k, args, NULL, out, err, errlen);
  }
  if (!json_is_object(args)) return fail(err, errlen, "the response must be a JSON object {\"action\": {...}}");
  json_t *a = json_object_get(args, "action");
  if (!a || json_object_size(args) != 1)
    return fail(err, errlen, "the response must be one JSON object with the single member \"action\"");
  if (!json_is_object(a)) return fail(err, errlen, "\"action\" must be a JSON object with a \"type\"");
  const char *t = json_string_value(json_object_get(a, "type"));
  if (!t) return fail(err, errlen, "the action needs \"type\", one of %s", names);
  int k = maction_kind(t);
  if (!in_set(set, k)) return fail(err, errlen, "there is no action \"%.64s\"; the actions are %s", t, names);
  return check_kind(k, a, "type", out, err, errlen);
}

/* -------------------------------------------------------------- for people */

char *maction_doc(maction_Set set) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  for (int k = 0; k < MA_KIND_COUNT; k++) {
    if (!in_set(set, k)) continue;
    fprintf(f, "- %s {", kinds[k].name);
    for (const Field *fl = kinds[k].fields; fl->name; fl++)
      fprintf(f, "%s%s", fl == kinds[k].fields ? "" : ", ", fl->name);
    fprintf(f, "}: %s\n", kinds[k].desc);
    for (const Field *fl = kinds[k].fields; fl->name; fl++)
      fprintf(f, "    %s (%s): %s\n", fl->name, type_words(fl->type, &(Words){{0}}), fl->desc);
  }
  if (fclose(f)) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Copy s into out (len bytes) on one line, shortened to about width. */
static void one_line(const char *s, char *out, size_t len, size_t width) {
  size_t n = 0, i = 0;
  int space = 0;
  if (width + 4 > len) width = len > 4 ? len - 4 : 0;
  for (; s[i] && n < width; i++) {
    if (s[i] == '\n' || s[i] == '\r' || s[i] == '\t' || s[i] == ' ') {
      if (!space && n) out[n++] = ' ';
      space = 1;
    } else {
      out[n++] = s[i];
      space = 0;
    }
  }
  /* don't cut a UTF-8 sequence in two */
  while (s[i] && n && ((unsigned char)out[n - 1] & 0xC0) == 0x80) n--;
  if (s[i] && n && ((unsigned char)out[n - 1] & 0xC0) == 0xC0) n--;
  if (s[i]) n += (size_t)snprintf(out + n, len - n, "...");
  out[n < len ? n : len - 1] = 0;
}

void maction_summary(json_t *action, char *buf, size_t len) {
  int k = maction_kind_of(action);
  if (!len) return;
  if (k < 0) {
    snprintf(buf, len, "?");
    return;
  }
  char arg[256] = "";
  switch (k) {
  case MA_EVALUATE:
  case MA_PREVIEW:
    one_line(json_string_value(json_object_get(action, "source")), arg, sizeof arg, 70);
    break;
  case MA_RESUME: {
    const char *a = json_string_value(json_object_get(action, "arguments"));
    char as[128] = "";
    if (a) one_line(a, as, sizeof as, 50);
    snprintf(arg, sizeof arg, "%s%s%s", json_string_value(json_object_get(action, "restart_id")), a ? " " : "", as);
    break;
  }
  case MA_INSPECT: {
    const char *kind = json_string_value(json_object_get(action, "kind"));
    snprintf(arg, sizeof arg, "%s%s%.128s", kind ? kind : "", kind ? " " : "",
             json_string_value(json_object_get(action, "name")));
    break;
  }
  case MA_ROLLBACK:
    snprintf(arg, sizeof arg, "%lld", (long long)json_integer_value(json_object_get(action, "revision")));
    break;
  case MA_FINISH:
    one_line(json_string_value(json_object_get(action, "summary")), arg, sizeof arg, 70);
    break;
  case MA_REPAIR:
    one_line(json_string_value(json_object_get(action, "source")), arg, sizeof arg, 70);
    break;
  case MA_EXPECTED:
  case MA_INSUFFICIENT_EVIDENCE:
    one_line(json_string_value(json_object_get(action, "reason")), arg, sizeof arg, 70);
    break;
  default:
    break;
  }
  snprintf(buf, len, "%s%s%s", kinds[k].name, arg[0] ? " " : "", arg);
}
