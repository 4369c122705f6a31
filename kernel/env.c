/*
** env.c — the clock and the environment: universal and internal time,
** sleep, room, apropos, and what the implementation says about itself.
**
** Time.  The clock is the host's: get-universal-time reads it whenever it
** is called, so two evaluations of the same form at different moments see
** different times (a preview, and the evaluation that follows it, each read
** the clock for themselves).  The world's time zone is UTC and has no
** daylight saving time: decoding does not depend on the host's settings,
** which a sandboxed worker cannot read anyway.  Internal time is in
** microseconds.
**
** Sleep waits for real, but is paid for first: one unit of fuel per 0.1
** microsecond, as evaluation steps cost about that much, so a call with a
** fuel budget cannot sleep past it.
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "jt_eval.h"   /* jt_is_macro */

#define UNITS_PER_SECOND 1000000
/* Seconds from 1900-01-01 (universal time 0) to 1970-01-01 (Unix time 0). */
#define UNIX_EPOCH 2208988800LL
#define FUEL_PER_SECOND 10000000.0

static int64_t clock_units(clockid_t id)
{
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return (int64_t)ts.tv_sec * UNITS_PER_SECOND + ts.tv_nsec / (1000000000 / UNITS_PER_SECOND);
}

/* (get-universal-time) */
JT_FN(f_get_universal_time)
{
  JT_UNUSED_ARGS;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return jt_make_integer(S, (int64_t)ts.tv_sec + UNIX_EPOCH);
}

JT_FN(f_get_internal_real_time)
{
  JT_UNUSED_ARGS;
  return jt_make_integer(S, clock_units(CLOCK_MONOTONIC));
}

JT_FN(f_get_internal_run_time)
{
  JT_UNUSED_ARGS;
  return jt_make_integer(S, clock_units(CLOCK_PROCESS_CPUTIME_ID));
}

/* Days since 1970-01-01 of a civil date (proleptic Gregorian), and back:
** the usual era arithmetic, exact for any year. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2);
}

/* A time zone argument: hours west of Greenwich, a rational multiple of
** 1/3600 between -24 and 24; returned in seconds. */
static int64_t zone_seconds(jt_State *S, jt_V tz)
{
  if (!jt_isrational(tz) || jt_num_cmp(S, tz, jt_mkfix(-24)) < 0 || jt_num_cmp(S, tz, jt_mkfix(24)) > 0)
    jt_type_error(S, tz, jt_list(S, 3, JT_SYM(S, RATIONAL), jt_mkfix(-24), jt_mkfix(24)));
  jt_V secs = jt_num_mul(S, tz, jt_mkfix(3600));
  if (!jt_isfix(secs)) jt_type_error(S, tz, JT_SYM(S, RATIONAL));
  return jt_fixval(secs);
}

/* The nine values of decode-universal-time for universal time ut in the
** zone zone (seconds west). */
static jt_V decode(jt_State *S, int64_t ut, jt_V zone, int64_t zsecs)
{
  int64_t t = ut - UNIX_EPOCH - zsecs;
  int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  int64_t secs = t - days * 86400, y, m, d;
  civil_from_days(days, &y, &m, &d);
  int64_t dow = ((days % 7) + 7 + 3) % 7;   /* 1970-01-01 was a Thursday; Monday is 0 */
  jt_V vals[9] = {jt_mkfix(secs % 60), jt_mkfix(secs / 60 % 60), jt_mkfix(secs / 3600),
                  jt_mkfix(d), jt_mkfix(m), jt_mkfix(y), jt_mkfix(dow), JT_NIL, zone};
  return jt_values(S, 9, vals);
}

/* (decode-universal-time universal-time &optional time-zone) */
JT_FN(f_decode_universal_time)
{
  jt_V ut = argv[0];
  if (!jt_isinteger(ut) || jt_num_cmp(S, ut, jt_mkfix(0)) < 0)
    jt_type_error(S, ut, JT_SYM(S, UNSIGNED_BYTE));
  if (!jt_isfix(ut)) jt_error(S, "DECODE-UNIVERSAL-TIME: the time is too large");
  jt_V zone = argc > 1 ? argv[1] : jt_mkfix(0);
  return decode(S, jt_fixval(ut), zone, zone_seconds(S, zone));
}

/* (get-decoded-time) = (decode-universal-time (get-universal-time)) */
JT_FN(f_get_decoded_time)
{
  JT_UNUSED_ARGS;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return decode(S, (int64_t)ts.tv_sec + UNIX_EPOCH, jt_mkfix(0), 0);
}

static int64_t field(jt_State *S, jt_V v, int64_t lo, int64_t hi)
{
  if (!jt_isfix(v) || jt_fixval(v) < lo || jt_fixval(v) > hi)
    jt_type_error(S, v, jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(lo), jt_mkfix(hi)));
  return jt_fixval(v);
}

/* (encode-universal-time second minute hour date month year &optional
** time-zone).  A year below 100 is the one within 50 years of this year. */
JT_FN(f_encode_universal_time)
{
  int64_t sec = field(S, argv[0], 0, 59), min = field(S, argv[1], 0, 59);
  int64_t hour = field(S, argv[2], 0, 23), date = field(S, argv[3], 1, 31);
  int64_t month = field(S, argv[4], 1, 12), year = field(S, argv[5], 0, 1000000000);
  int64_t zsecs = argc > 6 ? zone_seconds(S, argv[6]) : 0;
  if (year < 100) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t y, m, d;
    civil_from_days((int64_t)ts.tv_sec / 86400, &y, &m, &d);
    int64_t guess = y - y % 100 + year;
    if (guess > y + 50) guess -= 100;
    else if (guess <= y - 50) guess += 100;
    year = guess;
  }
  int64_t days = days_from_civil(year, month, date);
  int64_t ut = days * 86400 + hour * 3600 + min * 60 + sec + zsecs + UNIX_EPOCH;
  if (ut < 0) jt_error(S, "ENCODE-UNIVERSAL-TIME: the date is before 1900");
  return jt_make_integer(S, ut);
}

/* (sleep seconds) => NIL */
JT_FN(f_sleep)
{
  jt_V x = argv[0];
  if (!jt_isreal(x) || jt_num_cmp(S, x, jt_mkfix(0)) < 0)
    jt_type_error(S, x, jt_list(S, 2, JT_SYM(S, REAL), jt_mkfix(0)));
  double secs = jt_to_double(S, x);
  if (S->limits.fuel != 0) {
    double fuel = secs * FUEL_PER_SECOND;
    jt_fuel_charge(S, fuel >= 1e18 ? (uint64_t)1e18 : (uint64_t)fuel);
  }
  struct timespec ts;
  ts.tv_sec = secs >= 1e9 ? (time_t)1000000000 : (time_t)secs;
  ts.tv_nsec = (long)((secs - floor(secs)) * 1e9);
  if (ts.tv_nsec > 999999999) ts.tv_nsec = 999999999;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
  return JT_NIL;
}

/* (room &optional x): the heap's size and the collector's work. */
JT_FN(f_room)
{
  if (argc > 0 && argv[0] != JT_NIL && argv[0] != JT_T &&
      argv[0] != jt_intern_keyword(S, "DEFAULT"))
    jt_type_error(S, argv[0], jt_list(S, 4, JT_SYM(S, MEMBER), JT_NIL, JT_T,
                                      jt_intern_keyword(S, "DEFAULT")));
  char buf[256];
  snprintf(buf, sizeof buf,
           "Heap: %zu bytes in live objects, %zu allocated since the last collection.\n"
           "Collections so far: %zu.\n",
           S->bytes_live, S->bytes_since_gc, S->gc_count);
  jt_stream_puts(S, jt_output_stream(S, JT_NIL), buf);
  return jt_values(S, 0, NULL);
}

/* Does `sub` occur in the name of sym (case-insensitively)? */
static bool name_contains(jt_State *S, jt_V sym, jt_String *sub)
{
  jt_String *n = jt_str_(jt_symobj(S, sym)->name);
  if (sub->len == 0) return true;
  for (size_t k = 0; k + sub->len <= n->len; k++) {
    size_t j = 0;
    while (j < sub->len && jt_char_upcase(n->chars[k + j]) == jt_char_upcase(sub->chars[j])) j++;
    if (j == sub->len) return true;
  }
  return false;
}

/* Is the package of index pi one apropos looks in: a named package, and
** with a package argument that one or one it uses (for its externals)? */
static bool searched(jt_State *S, int pi, bool external, jt_V only)
{
  jt_V p = jt_package_of_index(S, pi);
  if (p == JT_NIL || jt_find_package(S, p) != p || pi == JT_PKG_INTERNAL) return false;
  if (only == JT_NIL || p == only) return true;
  if (!external) return false;
  for (jt_V u = jt_pkg_(only)->use_list; jt_iscons(u); u = jt_cdr(u))
    if (jt_car(u) == p) return true;
  return false;
}

/* The symbols whose name contains `sub`, each once: of every package, or
** those accessible in `only`.  The kernel's internal ones are never seen. */
static jt_V apropos_symbols(jt_State *S, jt_V sub, jt_V only)
{
  jt_V result = JT_NIL, seen = jt_make_hash(S, JT_HASH_EQ, 64);
  JT_ROOT(S, result);
  JT_ROOT(S, seen);
  for (size_t i = 0; i < S->symcap; i++) {
    jt_SymEntry *e = &S->symtab[i];
    if (e->sym == 0 || e->sym == JT_UNBOUND || !searched(S, e->pkg, e->flags & JT_SE_EXTERNAL, only))
      continue;
    if (!name_contains(S, e->sym, jt_str_(sub))) continue;
    jt_V sym = e->sym == S->nil_sym ? JT_NIL : e->sym == S->t_sym ? JT_T : e->sym;
    bool dup;
    jt_hash_get(S, seen, sym, &dup);
    if (dup) continue;
    jt_hash_put(S, seen, sym, JT_T);
    result = jt_cons(S, sym, result);
  }
  JT_UNROOT(S, 2);
  return result;
}

static jt_V apropos_package(jt_State *S, int argc, jt_V *argv)
{
  if (argc < 2 || argv[1] == JT_NIL) return JT_NIL;
  jt_V p = jt_find_package(S, argv[1]);
  if (p == JT_NIL) jt_type_error(S, argv[1], JT_SYM(S, PACKAGE));
  return p;
}

/* (apropos-list string &optional package) */
JT_FN(f_apropos_list)
{
  jt_V only = apropos_package(S, argc, argv);
  JT_PUSH(S, only);
  jt_V l = apropos_symbols(S, jt_string_designator(S, argv[0]), only);
  JT_POP(S, 1);
  return l;
}

/* (apropos string &optional package): print each symbol, with what it
** names. */
JT_FN(f_apropos)
{
  jt_V only = apropos_package(S, argc, argv);
  JT_PUSH(S, only);
  jt_V l = apropos_symbols(S, jt_string_designator(S, argv[0]), only);
  JT_PUSH(S, l);
  jt_V out = jt_output_stream(S, JT_NIL);
  JT_PUSH(S, out);
  for (; jt_iscons(l); l = jt_cdr(l)) {
    jt_V sym = jt_car(l);
    jt_Symbol *s = jt_symobj(S, sym);
    jt_print(S, out, sym, true);
    if (s->function != JT_UNBOUND)
      jt_stream_puts(S, out, jt_is_macro(s->function) ? " (macro)" : " (function)");
    if (s->value != JT_UNBOUND && !(s->h.flags & JT_SYM_KEYWORD))
      jt_stream_puts(S, out, (s->h.flags & JT_SYM_CONSTANT) ? " (constant)" : " (variable)");
    jt_stream_putc(S, out, '\n');
  }
  JT_POP(S, 3);
  return jt_values(S, 0, NULL);
}

static jt_V string_or_nil(jt_State *S, const char *s) { return s ? jt_string_from_cstr(S, s) : JT_NIL; }

JT_FN(f_lisp_implementation_type) { JT_UNUSED_ARGS; return string_or_nil(S, "jiti"); }
JT_FN(f_lisp_implementation_version) { JT_UNUSED_ARGS; return string_or_nil(S, JITI_VERSION); }

/* What the machine and system are, as built: a world asks nothing of the
** host it runs on (and has no host or site name). */
JT_FN(f_machine_type)
{
  JT_UNUSED_ARGS;
#if defined(__x86_64__)
  return string_or_nil(S, "X86-64");
#elif defined(__aarch64__)
  return string_or_nil(S, "ARM64");
#else
  return JT_NIL;
#endif
}

JT_FN(f_software_type)
{
  JT_UNUSED_ARGS;
#if defined(__linux__)
  return string_or_nil(S, "Linux");
#else
  return JT_NIL;
#endif
}

JT_FN(f_nil_answer) { JT_UNUSED_ARGS; return JT_NIL; }

static const jt_Reg env_fns[] = {
  {"GET-UNIVERSAL-TIME", f_get_universal_time, 0, 0,
   "(get-universal-time) The current time: seconds since 1900-01-01 00:00 UTC."},
  {"GET-DECODED-TIME", f_get_decoded_time, 0, 0,
   "(get-decoded-time) The current time decoded (UTC): second minute hour date month year "
   "day daylight-p zone."},
  {"DECODE-UNIVERSAL-TIME", f_decode_universal_time, 1, 2,
   "(decode-universal-time universal-time &optional time-zone) Nine values: second minute "
   "hour date month year day daylight-p zone (default zone: 0, UTC)."},
  {"ENCODE-UNIVERSAL-TIME", f_encode_universal_time, 6, 7,
   "(encode-universal-time second minute hour date month year &optional time-zone) The "
   "universal time of that moment (default zone: 0, UTC)."},
  {"GET-INTERNAL-REAL-TIME", f_get_internal_real_time, 0, 0,
   "(get-internal-real-time) Elapsed real time, in internal time units."},
  {"GET-INTERNAL-RUN-TIME", f_get_internal_run_time, 0, 0,
   "(get-internal-run-time) Processor time used, in internal time units."},
  {"SLEEP", f_sleep, 1, 1,
   "(sleep seconds) Wait SECONDS; paid for in fuel first.  Returns NIL."},
  {"ROOM", f_room, 0, 1, "(room &optional x) Print how much memory is in use."},
  {"APROPOS-LIST", f_apropos_list, 1, 2,
   "(apropos-list string &optional package) The symbols whose name contains STRING."},
  {"APROPOS", f_apropos, 1, 2,
   "(apropos string &optional package) Print the symbols whose name contains STRING."},
  {"LISP-IMPLEMENTATION-TYPE", f_lisp_implementation_type, 0, 0, "(lisp-implementation-type) \"jiti\"."},
  {"LISP-IMPLEMENTATION-VERSION", f_lisp_implementation_version, 0, 0,
   "(lisp-implementation-version) jiti's version."},
  {"MACHINE-TYPE", f_machine_type, 0, 0, "(machine-type) The processor jiti was built for."},
  {"MACHINE-VERSION", f_nil_answer, 0, 0, "(machine-version) NIL."},
  {"MACHINE-INSTANCE", f_nil_answer, 0, 0, "(machine-instance) NIL: a world has no host name."},
  {"SOFTWARE-TYPE", f_software_type, 0, 0, "(software-type) The system jiti was built for."},
  {"SOFTWARE-VERSION", f_nil_answer, 0, 0, "(software-version) NIL."},
  {"SHORT-SITE-NAME", f_nil_answer, 0, 0, "(short-site-name) NIL."},
  {"LONG-SITE-NAME", f_nil_answer, 0, 0, "(long-site-name) NIL."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_env(jt_State *S)
{
  jt_register(S, env_fns);
  jt_V units = jt_intern(S, "INTERNAL-TIME-UNITS-PER-SECOND");
  jt_defglobal(S, "INTERNAL-TIME-UNITS-PER-SECOND", jt_mkfix(UNITS_PER_SECOND));
  jt_symobj(S, units)->h.flags |= JT_SYM_CONSTANT | JT_SYM_LOCKED;
}
