/*
** num.c — numbers.
**
** Integers are fixnums (immediates) when they fit and GMP bignums otherwise;
** ratios are canonical GMP rationals; every float is a double.  All results
** are normalised on the way out, so "is it a fixnum?" is a tag test and two
** equal rationals always have the same representation.
**
** Allocation discipline.  GMP results are computed directly into freshly
** allocated heap objects (never into C-side temporaries that a signalled
** error could leak); operands are rooted across that allocation.  C-side
** mpz/mpq temporaries are used only over stretches that cannot signal.
** Fixnum operands are presented to GMP as read-only views over a stack limb,
** so mixed fixnum/bignum arithmetic allocates nothing but the result.
** The long operations (products, powers, divisions, roots, gcds and
** conversions to digits of large integers) are the exception: they run as
** a BigJob, into temporaries a cancel or an interrupt may abandon half-way
** (numstop.c frees their memory), moved into the heap objects the caller
** made and rooted before, once complete.
**
** Floats stay finite: an operation whose float result would be infinite
** signals FLOATING-POINT-OVERFLOW, one whose result would be NaN
** FLOATING-POINT-INVALID-OPERATION; float division by zero signals
** DIVISION-BY-ZERO like its rational counterpart.  Only a foreign function
** can hand the language a NaN or an infinity.  Such a float compares as
** IEEE 754 says, as SBCL compares it: a NaN is = to nothing (not even
** itself) and /= to everything, an infinity lies beyond every rational;
** ordering a NaN (<, >, <=, >=, min, max, plusp, minusp) is an invalid
** operation, as it is in SBCL while the invalid trap is enabled, and so is
** taking the rational value of either (rational, rationalize, an exact
** comparison with a ratio or bignum never reaches GMP with them).
*/
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jt_lib.h"
#include "jt_sequtil.h"   /* jt_lisp_sym_named */
#include "jt_numstop.h"

/* Bignums larger than this are refused before GMP is asked to build them:
** GMP aborts the process when its own size limits are exceeded. */
#define MAX_BITS ((uint64_t)1 << 32)
/* Bignums and ratios with at least this many limbs are charged to the heap. */
#define CHARGE_MIN_LIMBS 4

static const char DIGITS[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/* ------------------------------------------------------------ signalling */

/* Signal an arithmetic error of `type` for the operation named `op` applied
** to `a` and, unless it is JT_NOVALUE, `b`. */
JT_NORETURN static void arith_fail(jt_State *S, jt_V type, const char *op,
                                   jt_V a, jt_V b) {
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  jt_V sym = jt_intern(S, op);
  JT_ROOT(S, sym);
  jt_V operands = b == JT_NOVALUE ? jt_list(S, 1, a) : jt_list(S, 2, a, b);
  jt_arith_error(S, type, sym, operands);
}

JT_NORETURN static void div_zero(jt_State *S, const char *op, jt_V a, jt_V b) {
  arith_fail(S, JT_SYM(S, DIVISION_BY_ZERO), op, a, b);
}

static jt_V float_like(jt_State *S, double d, jt_V x);

/* Division of a by zero in /, floor, ceiling, truncate, round, mod or rem:
** reported, as SBCL reports it, as the division (/ a b) with the operands
** after float contagion, since programs print the report. */
JT_NORETURN static void quotient_by_zero(jt_State *S, jt_V a, jt_V b) {
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  if (jt_isfloat(a) && jt_isrational(b)) b = float_like(S, jt_to_double(S, b), a);
  else if (jt_isfloat(b) && jt_isrational(a)) a = float_like(S, jt_to_double(S, a), b);
  JT_UNROOT(S, 2);
  div_zero(S, "/", a, b);
}

JT_NORETURN static void overflow(jt_State *S, const char *op, jt_V a, jt_V b) {
  arith_fail(S, JT_SYM(S, FLOATING_POINT_OVERFLOW), op, a, b);
}

JT_NORETURN static void invalid(jt_State *S, const char *op, jt_V a, jt_V b) {
  arith_fail(S, jt_intern(S, "FLOATING-POINT-INVALID-OPERATION"), op, a, b);
}

/* The error of a float result d that is not finite: NaN (from a NaN
** operand) is an invalid operation, an infinity an overflow. */
JT_NORETURN static void nonfinite(jt_State *S, double d, const char *op, jt_V a, jt_V b) {
  if (isnan(d)) invalid(S, op, a, b);
  overflow(S, op, a, b);
}

/* Limbs of an integer or ratio, to bound the size of a product. */
static size_t limbs_of(jt_V v) {
  if (jt_isbig(v)) return mpz_size(jt_big_(v)->z);
  if (jt_isratio(v))
    return mpz_size(mpq_numref(jt_ratio_(v)->q)) +
           mpz_size(mpq_denref(jt_ratio_(v)->q));
  return 1;
}

/* GMP cannot be interrupted, so an operation on big numbers is paid for
** in fuel before it starts, in proportion to the time it takes: about
** n log n for a product of n limbs, n log^2 n for a conversion to digits
** (one unit of fuel is about one evaluation step, ~0.1 us).  Small numbers
** cost nothing extra: the step that asked for them paid. */
static uint64_t log2_of(uint64_t n) { return n ? 64 - (uint64_t)__builtin_clzll(n) : 0; }

static void charge_product(jt_State *S, uint64_t limbs) {
  if (limbs >= 256) jt_fuel_charge(S, limbs * log2_of(limbs) / 8);
}

/* gcd (and so every rational result, which is reduced): n log^2 n */
static void charge_gcd(jt_State *S, uint64_t limbs) {
  if (limbs >= 256) jt_fuel_charge(S, limbs * log2_of(limbs) * log2_of(limbs) / 8);
}


uint64_t jt_num_print_cost(jt_V num) {
  uint64_t limbs = jt_isbig(num) ? mpz_size(jt_big_(num)->z)
                 : jt_isratio(num) ? mpz_size(mpq_numref(jt_ratio_(num)->q)) + mpz_size(mpq_denref(jt_ratio_(num)->q))
                 : 0;
  return limbs >= 256 ? limbs * log2_of(limbs) * log2_of(limbs) / 8 : 0;
}

void jt_num_charge_print(jt_State *S, jt_V num) {
  uint64_t cost = jt_num_print_cost(num);
  if (cost) jt_fuel_charge(S, cost);
}

/* Refuse an integer result of about `bits` bits before computing it: past
** MAX_BITS always, and past the heap limit (heap-exhausted) when one is set;
** charge the fuel it costs. */
static void reserve_bits(jt_State *S, uint64_t bits, const char *op) {
  if (bits > MAX_BITS)
    jt_error(S, "%s: the result would need about %llu bits, which is too "
             "large", op, (unsigned long long)bits);
  charge_product(S, bits / GMP_NUMB_BITS);
  size_t bytes = (size_t)(bits / 8);
  if (S->limits.heap != 0 && bytes > ((size_t)1 << 20)) {
    jt_gc_account(S, bytes);   /* signals heap-exhausted when over */
    jt_gc_release(S, bytes);
  }
}

/* ------------------------------------------------------- stoppable GMP */

/* One long GMP operation on integers (numstop.c): its results go into q
** and r (str: a conversion's digits, from GMP's allocator), which the job
** initialises itself; the operands are views the caller keeps alive. */
enum { BJ_MUL, BJ_POW, BJ_SQRT, BJ_FDIV, BJ_CDIV, BJ_TDIV, BJ_GCD, BJ_LCM, BJ_STR };
typedef struct BigJob {
  int what;
  mpz_srcptr a, b;
  unsigned long e;   /* BJ_POW: the exponent; BJ_STR: the base */
  mpz_t q, r;
  char *str;
} BigJob;

static void big_job(void *ud) {
  BigJob *j = ud;
  mpz_init(j->q);
  mpz_init(j->r);
  j->str = NULL;
  switch (j->what) {
  case BJ_MUL: mpz_mul(j->q, j->a, j->b); break;
  case BJ_POW: mpz_pow_ui(j->q, j->a, j->e); break;
  case BJ_SQRT: mpz_sqrt(j->q, j->a); break;
  case BJ_FDIV: mpz_fdiv_qr(j->q, j->r, j->a, j->b); break;
  case BJ_CDIV: mpz_cdiv_qr(j->q, j->r, j->a, j->b); break;
  case BJ_TDIV: mpz_tdiv_qr(j->q, j->r, j->a, j->b); break;
  case BJ_GCD: mpz_gcd(j->q, j->a, j->b); break;
  case BJ_LCM: mpz_lcm(j->q, j->a, j->b); break;
  default: j->str = mpz_get_str(NULL, -(int)j->e, j->a); break;   /* upper-case digits */
  }
}

static bool number_primitive(jt_State *S);

/* Run j, about `limbs` limbs large, where a cancel can stop it and, in a
** number primitive, an interrupt too (its pause taken there, the job run
** again after CONTINUE); then move its results into q (and r), fresh
** bignums the caller made and rooted.  j's operands must stay alive and
** unchanged (rooted numbers, or views on the caller's stack). */
static void big_run(jt_State *S, BigJob *j, size_t limbs, jt_Bignum *q, jt_Bignum *r) {
  jt_numstop_run(S, limbs, limbs >= JT_NUMSTOP_LIMBS && number_primitive(S), big_job, j);
  if (q) mpz_swap(q->z, j->q);
  if (r) mpz_swap(r->z, j->r);
  mpz_clear(j->q);
  mpz_clear(j->r);
}

/* ------------------------------------------------------------- kinds */

enum { NK_FIX, NK_BIG, NK_RATIO, NK_FLOAT };

/* The numeric kind of `v`, or a type-error naming `type`. */
static int kind_of(jt_State *S, jt_V v, jt_V type) {
  if (jt_isfix(v)) return NK_FIX;
  if (jt_isptr(v)) {
    switch (jt_type(v)) {
    case JT_TBIGNUM: return NK_BIG;
    case JT_TRATIO: return NK_RATIO;
    case JT_TFLOAT: return NK_FLOAT;
    default: break;
    }
  }
  jt_type_error(S, v, type);
}

static jt_V check_integer(jt_State *S, jt_V v) {
  if (!jt_isinteger(v)) jt_type_error(S, v, JT_SYM(S, INTEGER));
  return v;
}

static jt_V check_real(jt_State *S, jt_V v) {
  if (!jt_isreal(v)) jt_type_error(S, v, JT_SYM(S, REAL));
  return v;
}

static jt_V check_float(jt_State *S, jt_V v) {
  if (!jt_isfloat(v)) jt_type_error(S, v, JT_SYM(S, FLOAT));
  return v;
}

/* Sign of a real: -1, 0, 1 (-0.0 counts as zero). */
static int sign_of(jt_V v) {
  if (jt_isfix(v)) return (jt_fixval(v) > 0) - (jt_fixval(v) < 0);
  if (jt_isbig(v)) return mpz_sgn(jt_big_(v)->z);
  if (jt_isratio(v)) return mpq_sgn(jt_ratio_(v)->q);
  double d = jt_floatval(v);
  return (d > 0) - (d < 0);
}

/* The sign of a real that is compared with zero (plusp, minusp): a NaN has
** none. */
static int ordered_sign(jt_State *S, jt_V v, const char *op) {
  if (jt_isfloat(v) && isnan(jt_floatval(v))) invalid(S, op, v, JT_NOVALUE);
  return sign_of(v);
}

/* ------------------------------------------------------------ GMP views */

/* A read-only mpz over an integer.  A fixnum borrows limbs on the caller's
** stack, so no GMP memory is allocated and nothing needs clearing. */
typedef struct ZView {
  mpz_t z;
  mp_limb_t limb[2];
} ZView;

static mpz_srcptr zview(ZView *w, jt_V v) {
  if (!jt_isfix(v)) return jt_big_(v)->z;
  intptr_t n = jt_fixval(v);
  uint64_t m = n < 0 ? -(uint64_t)n : (uint64_t)n;
  mp_size_t size;
#if GMP_NUMB_BITS >= 64
  w->limb[0] = (mp_limb_t)m;
  size = m != 0;
#else
  w->limb[0] = (mp_limb_t)(m & 0xffffffffu);
  w->limb[1] = (mp_limb_t)(m >> 32);
  size = w->limb[1] ? 2 : m != 0;
#endif
  return mpz_roinit_n(w->z, w->limb, n < 0 ? -size : size);
}

/* A read-only mpq over a rational; an integer gets denominator one. */
typedef struct QView {
  ZView num;
  mp_limb_t one;
  mpq_t q;
} QView;

static mpq_srcptr qview(QView *w, jt_V v) {
  if (jt_isratio(v)) return jt_ratio_(v)->q;
  *mpq_numref(w->q) = *zview(&w->num, v);
  w->one = 1;
  mpz_roinit_n(mpq_denref(w->q), &w->one, 1);
  return w->q;
}

/* |z| as a read-only view sharing z's limbs. */
static mpz_srcptr zabs(mpz_ptr view, mpz_srcptr z) {
  return mpz_roinit_n(view, mpz_limbs_read(z), (mp_size_t)mpz_size(z));
}

/* ------------------------------------------------------- constructors */

static jt_Bignum *new_big(jt_State *S) {
  jt_Bignum *b = (jt_Bignum *)jt_alloc(S, JT_TBIGNUM, sizeof(jt_Bignum));
  mpz_init(b->z);
  return b;
}

static jt_Ratio *new_ratio(jt_State *S) {
  jt_Ratio *r = (jt_Ratio *)jt_alloc(S, JT_TRATIO, sizeof(jt_Ratio));
  mpq_init(r->q);
  return r;
}

/* Charge a number's limb memory to the heap.  h.aux records the limbs
** charged, so that the collector can give exactly that much back. */
static void charge(jt_State *S, jt_V v, size_t limbs) {
  if (limbs < CHARGE_MIN_LIMBS) return;
  JT_ROOT(S, v);
  jt_gc_account(S, limbs * sizeof(mp_limb_t));
  JT_UNROOT(S, 1);
  jt_o(v)->aux = (uint32_t)limbs;
}

/* The value of a freshly computed bignum object: a fixnum if it fits. */
static jt_V big_norm(jt_State *S, jt_Bignum *b) {
  if (mpz_fits_slong_p(b->z)) {
    long n = mpz_get_si(b->z);
    if (jt_fixfits(n)) return jt_mkfix(n);
  }
  charge(S, (jt_V)b, mpz_size(b->z));
  return (jt_V)b;
}

/* The value of a freshly computed canonical ratio object: an integer if the
** denominator is one (the numerator's limbs move, they are not copied). */
static jt_V ratio_norm(jt_State *S, jt_Ratio *r) {
  if (mpz_cmp_ui(mpq_denref(r->q), 1) == 0) {
    mpz_srcptr n = mpq_numref(r->q);
    if (mpz_fits_slong_p(n) && jt_fixfits(mpz_get_si(n)))
      return jt_mkfix(mpz_get_si(n));
    jt_V rv = (jt_V)r;
    JT_ROOT(S, rv);
    jt_Bignum *b = new_big(S);
    mpz_swap(b->z, mpq_numref(r->q));
    JT_UNROOT(S, 1);
    return big_norm(S, b);
  }
  charge(S, (jt_V)r, mpz_size(mpq_numref(r->q)) + mpz_size(mpq_denref(r->q)));
  return (jt_V)r;
}

jt_V jt_make_integer(jt_State *S, int64_t n) {
  if (n >= JT_FIXMIN && n <= JT_FIXMAX) return jt_mkfix((intptr_t)n);
  jt_Bignum *b = new_big(S);
  mpz_set_si(b->z, (long)n);
  return (jt_V)b;
}

static jt_V make_unsigned(jt_State *S, uint64_t n) {
  if (n <= (uint64_t)JT_FIXMAX) return jt_mkfix((intptr_t)n);
  jt_Bignum *b = new_big(S);
  mpz_set_ui(b->z, (unsigned long)n);
  return (jt_V)b;
}

/* `z` must stay valid across an allocation (it must not belong to an
** unrooted Lisp object). */
jt_V jt_make_integer_mpz(jt_State *S, mpz_srcptr z) {
  if (mpz_fits_slong_p(z) && jt_fixfits(mpz_get_si(z)))
    return jt_mkfix(mpz_get_si(z));
  jt_Bignum *b = new_big(S);
  mpz_set(b->z, z);
  return big_norm(S, b);
}

void jt_to_mpz(jt_V v, mpz_ptr out) {
  if (jt_isfix(v)) mpz_set_si(out, (long)jt_fixval(v));
  else mpz_set(out, jt_big_(v)->z);
}

/* An integer equal to the integral double `d` (finite). */
static jt_V integer_from_double(jt_State *S, double d) {
  if (d > -4.0e18 && d < 4.0e18) return jt_make_integer(S, (int64_t)d);
  jt_Bignum *b = new_big(S);
  mpz_set_d(b->z, d);
  return big_norm(S, b);
}

/* The float format of a result computed from reals a and b (b may be
** JT_NOVALUE): double-float if either is one, else single-float -- the
** contagion rule, under which rationals become single-floats. */
static bool single_of(jt_V a, jt_V b) {
  if (jt_isfloat(a) && !jt_issingle(a)) return false;
  return b == JT_NOVALUE || !jt_isfloat(b) || jt_issingle(b);
}

/* A float result of the format single_of(a, b) gives, which must be
** finite in that format.  Computed in double and rounded once: exact for
** + - * / and sqrt, and SBCL too computes the other functions of a
** single-float in double. */
static jt_V float_result(jt_State *S, double d, const char *op, jt_V a, jt_V b) {
  bool single = single_of(a, b);
  if (!isfinite(single ? (double)(float)d : d)) nonfinite(S, d, op, a, b);
  return jt_make_float_as(S, d, single);
}

/* A real as an operand of an operation on floats of the given format: a
** rational is first converted to that format (CLHS 12.1.4.1), so
** (* 9/5 23.0) multiplies two single-floats. */
static double real_to_format(jt_State *S, jt_V v, bool single);

static double float_operand(jt_State *S, jt_V v, bool single) {
  if (jt_isfloat(v)) return jt_floatval(v);
  double d = real_to_format(S, v, single);
  if (isinf(d)) overflow(S, "FLOAT", v, JT_NOVALUE);
  return d;
}

/* A float of x's format (single for a rational); for results that cannot
** leave the range. */
static jt_V float_like(jt_State *S, double d, jt_V x) {
  return jt_make_float_as(S, d, single_of(x, JT_NOVALUE));
}

/* ------------------------------------------------- conversion to double */

/* The value nearest to n * 2^e for n > 0, ties to even, in the double
** format, or with `single` in the single-float format (the result is then
** exactly a float: rounding once to 24 bits, never twice through a double).
** `sticky` says the exact value lies strictly above n * 2^e (lower bits
** were dropped); it is only meaningful when n has more bits than the format
** keeps.  HUGE_VAL past the format's range. */
static double round_scaled(mpz_srcptr n, long e, bool sticky, bool single) {
  const long bits_fmt = single ? 24 : 53, emin = single ? -126 : -1022, emax = single ? 127 : 1023;
  long bits = (long)mpz_sizeinbase(n, 2);
  long top = bits - 1 + e;          /* exponent of the leading bit */
  if (top > emax) return HUGE_VAL;
  long prec = bits_fmt;
  if (top < emin) prec = bits_fmt - (emin - top);  /* subnormal: fewer bits */
  if (prec < 0) return 0.0;
  if (bits <= prec) return ldexp(mpz_get_d(n), (int)e);
  long drop = bits - prec;
  mpz_t m;
  mpz_init(m);
  mpz_tdiv_q_2exp(m, n, (mp_bitcnt_t)drop);
  uint64_t mant = mpz_get_ui(m);
  mpz_clear(m);
  bool half = mpz_tstbit(n, (mp_bitcnt_t)(drop - 1));
  bool rest = sticky || mpz_scan1(n, 0) < (mp_bitcnt_t)(drop - 1);
  if (half && (rest || (mant & 1))) mant++;
  double d = ldexp((double)mant, (int)(e + drop));
  return single && d > FLT_MAX ? HUGE_VAL : d;
}

/* Correctly rounded, unlike mpz_get_d which truncates. */
static double big_to_format(mpz_srcptr z, bool single) {
  mpz_t a;
  double d = round_scaled(zabs(a, z), 0, false, single);
  return mpz_sgn(z) < 0 ? -d : d;
}

static double ratio_to_format(mpq_srcptr q, bool single) {
  mpz_t na;
  mpz_srcptr num = zabs(na, mpq_numref(q)), den = mpq_denref(q);
  /* Scale so that the integer quotient has 55 or 56 bits: enough for a
  ** 53-bit mantissa, a rounding bit, and the remainder as sticky bit. */
  long k = 55 - ((long)mpz_sizeinbase(num, 2) - (long)mpz_sizeinbase(den, 2));
  mpz_t t, r;
  mpz_init(t);
  mpz_init(r);
  if (k >= 0) {
    mpz_mul_2exp(t, num, (mp_bitcnt_t)k);
    mpz_tdiv_qr(t, r, t, den);
  } else {
    mpz_mul_2exp(t, den, (mp_bitcnt_t)-k);
    mpz_tdiv_qr(t, r, num, t);
  }
  double d = round_scaled(t, -k, mpz_sgn(r) != 0, single);
  mpz_clear(t);
  mpz_clear(r);
  return mpq_sgn(q) < 0 ? -d : d;
}

/* A real in the double format, or with `single` rounded once to the
** single-float format (a float argument is rounded from its own value).
** Infinite past the format's range. */
static double real_to_format(jt_State *S, jt_V v, bool single) {
  switch (kind_of(S, v, JT_SYM(S, REAL))) {
  case NK_FIX: {
    intptr_t i = jt_fixval(v);
    if (!single || (i < ((intptr_t)1 << 53) && i > -((intptr_t)1 << 53))) {
      double d = (double)i;
      return single ? (double)(float)d : d;   /* exact in a double: one rounding */
    }
    mpz_t z;
    mpz_init_set_si(z, (long)i);
    double d = big_to_format(z, true);
    mpz_clear(z);
    return d;
  }
  case NK_FLOAT: return single ? (double)(float)jt_floatval(v) : jt_floatval(v);
  case NK_BIG: return big_to_format(jt_big_(v)->z, single);
  default: return ratio_to_format(jt_ratio_(v)->q, single);
  }
}

double jt_to_double(jt_State *S, jt_V v) {
  double d = real_to_format(S, v, false);
  if (isinf(d) && !jt_isfloat(v)) overflow(S, "FLOAT", v, JT_NOVALUE);
  return d;
}

/* ------------------------------------------------------------ arithmetic */

enum { OP_ADD = JT_OP_ADD, OP_SUB = JT_OP_SUB, OP_MUL = JT_OP_MUL, OP_DIV = JT_OP_DIV };
static const char *const OP_NAMES[] = {"+", "-", "*", "/"};

static bool is_zero(jt_V v) {
  return v == jt_mkfix(0) || (jt_isfloat(v) && jt_floatval(v) == 0.0);
}


/* The general case of the four operations; the fixnum fast paths are in the
** public entry points. */
static jt_V arith(jt_State *S, int op, jt_V a, jt_V b) {
  if (jt_iscomplex(a) || jt_iscomplex(b)) return jt_complex_arith(S, op, a, b);
  int ka = kind_of(S, a, JT_SYM(S, NUMBER));
  int kb = kind_of(S, b, JT_SYM(S, NUMBER));
  if (ka == NK_FLOAT || kb == NK_FLOAT) {
    bool single = single_of(a, b);
    double x = float_operand(S, a, single), y = float_operand(S, b, single), r;
    switch (op) {
    case OP_ADD: r = x + y; break;
    case OP_SUB: r = x - y; break;
    case OP_MUL: r = x * y; break;
    default:
      if (y == 0.0) quotient_by_zero(S, a, b);
      r = x / y;
      break;
    }
    return float_result(S, r, OP_NAMES[op], a, b);
  }
  if (op == OP_DIV && b == jt_mkfix(0)) div_zero(S, "/", a, b);
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  if (op == OP_MUL || op == OP_DIV)
    reserve_bits(S, (uint64_t)(limbs_of(a) + limbs_of(b)) * GMP_NUMB_BITS,
                 OP_NAMES[op]);
  if (op == OP_DIV || ka == NK_RATIO || kb == NK_RATIO) charge_gcd(S, limbs_of(a) + limbs_of(b));
  jt_V result;
  if (ka != NK_RATIO && kb != NK_RATIO && op != OP_DIV) {
    jt_Bignum *r = new_big(S);
    ZView wa, wb;
    mpz_srcptr x = zview(&wa, a), y = zview(&wb, b);
    switch (op) {
    case OP_ADD: mpz_add(r->z, x, y); break;
    case OP_SUB: mpz_sub(r->z, x, y); break;
    default: {
      jt_V rv = (jt_V)r;
      JT_ROOT(S, rv);
      BigJob j = {BJ_MUL, x, y, 0, {{0}}, {{0}}, NULL};
      big_run(S, &j, limbs_of(a) + limbs_of(b), r, NULL);
      JT_UNROOT(S, 1);
      break;
    }
    }
    result = big_norm(S, r);
  } else if (ka != NK_RATIO && kb != NK_RATIO) {
    /* integer / integer: a fraction to reduce */
    jt_Ratio *r = new_ratio(S);
    ZView wa, wb;
    mpz_set(mpq_numref(r->q), zview(&wa, a));
    mpz_set(mpq_denref(r->q), zview(&wb, b));
    mpq_canonicalize(r->q);
    result = ratio_norm(S, r);
  } else {
    jt_Ratio *r = new_ratio(S);
    QView wa, wb;
    mpq_srcptr x = qview(&wa, a), y = qview(&wb, b);
    switch (op) {
    case OP_ADD: mpq_add(r->q, x, y); break;
    case OP_SUB: mpq_sub(r->q, x, y); break;
    case OP_MUL: mpq_mul(r->q, x, y); break;
    default: mpq_div(r->q, x, y); break;
    }
    result = ratio_norm(S, r);
  }
  JT_UNROOT(S, 2);
  return result;
}

jt_V jt_num_add(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b)) {
    /* two 63-bit values cannot overflow a 64-bit word */
    intptr_t r = jt_fixval(a) + jt_fixval(b);
    return jt_fixfits(r) ? jt_mkfix(r) : jt_make_integer(S, r);
  }
  return arith(S, OP_ADD, a, b);
}

jt_V jt_num_sub(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b)) {
    intptr_t r = jt_fixval(a) - jt_fixval(b);
    return jt_fixfits(r) ? jt_mkfix(r) : jt_make_integer(S, r);
  }
  return arith(S, OP_SUB, a, b);
}

jt_V jt_num_mul(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b)) {
    intptr_t r;
    if (!__builtin_mul_overflow(jt_fixval(a), jt_fixval(b), &r))
      return jt_fixfits(r) ? jt_mkfix(r) : jt_make_integer(S, r);
  }
  return arith(S, OP_MUL, a, b);
}

static intptr_t gcd_word(intptr_t a, intptr_t b) {
  uintptr_t x = a < 0 ? -(uintptr_t)a : (uintptr_t)a;
  uintptr_t y = b < 0 ? -(uintptr_t)b : (uintptr_t)b;
  while (y) {
    uintptr_t t = x % y;
    x = y;
    y = t;
  }
  return (intptr_t)x;
}

jt_V jt_num_div(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b) && b != jt_mkfix(0)) {
    intptr_t x = jt_fixval(a), y = jt_fixval(b);
    if (x % y == 0) return jt_make_integer(S, x / y);
    intptr_t g = gcd_word(x, y);
    x /= g;
    y /= g;
    if (y < 0) {
      x = -x;
      y = -y;
    }
    jt_Ratio *r = new_ratio(S);
    mpq_set_si(r->q, (long)x, (unsigned long)y);
    return (jt_V)r;
  }
  return arith(S, OP_DIV, a, b);
}

static jt_V num_neg(jt_State *S, jt_V x) {
  jt_V r;
  if (jt_iscomplex(x)) return jt_complex_negate(S, x);
  switch (kind_of(S, x, JT_SYM(S, NUMBER))) {
  case NK_FIX: return jt_make_integer(S, -jt_fixval(x));
  case NK_FLOAT: return float_like(S, -jt_floatval(x), x);
  case NK_BIG: {
    JT_ROOT(S, x);
    jt_Bignum *b = new_big(S);
    mpz_neg(b->z, jt_big_(x)->z);
    r = big_norm(S, b);
    break;
  }
  default: {
    JT_ROOT(S, x);
    jt_Ratio *q = new_ratio(S);
    mpq_neg(q->q, jt_ratio_(x)->q);
    r = ratio_norm(S, q);
    break;
  }
  }
  JT_UNROOT(S, 1);
  return r;
}

jt_V jt_num_negate(jt_State *S, jt_V x) { return num_neg(S, x); }

static jt_V num_abs(jt_State *S, jt_V x) {
  if (jt_iscomplex(x)) return jt_complex_abs(S, x);
  if (jt_isfloat(x)) {
    double d = jt_floatval(x);
    return signbit(d) ? float_like(S, -d, x) : x;
  }
  check_real(S, x);
  return sign_of(x) < 0 ? num_neg(S, x) : x;
}

/* ------------------------------------------------------------ comparison */

/* cmp_slow's answer when a NaN is compared: no order, equal to nothing. */
#define UNORDERED 2

/* Compare reals exactly: a float meets a rational as the rational it
** denotes, so (< (expt 2 60) (+ (float (expt 2 60)) 1)) is decided right.
** -1, 0, 1, or UNORDERED. */
static int cmp_slow(jt_State *S, jt_V a, jt_V b, jt_V type) {
  int ka = kind_of(S, a, type), kb = kind_of(S, b, type);
  if (ka == NK_FLOAT || kb == NK_FLOAT) {
    if (ka == NK_FLOAT && kb == NK_FLOAT) {
      double x = jt_floatval(a), y = jt_floatval(b);
      if (isnan(x) || isnan(y)) return UNORDERED;
      return (x > y) - (x < y);
    }
    bool flip = kb == NK_FLOAT;
    double d = jt_floatval(flip ? b : a);
    jt_V r = flip ? a : b;
    int c;
    if (isnan(d)) return UNORDERED;
    if (isinf(d)) {
      c = d > 0 ? 1 : -1;   /* beyond every rational (GMP refuses to convert it) */
    } else if (jt_isfix(r) && jt_fixval(r) <= ((intptr_t)1 << 53) &&
        jt_fixval(r) >= -((intptr_t)1 << 53)) {
      double y = (double)jt_fixval(r);   /* exact */
      c = (d > y) - (d < y);
    } else {
      mpq_t q;
      QView w;
      mpq_init(q);
      mpq_set_d(q, d);   /* exact */
      c = mpq_cmp(q, qview(&w, r));
      mpq_clear(q);
      c = (c > 0) - (c < 0);
    }
    return flip ? -c : c;
  }
  int c;
  if (ka != NK_RATIO && kb != NK_RATIO) {
    ZView wa, wb;
    c = mpz_cmp(zview(&wa, a), zview(&wb, b));
  } else {
    QView wa, wb;
    c = mpq_cmp(qview(&wa, a), qview(&wb, b));
  }
  return (c > 0) - (c < 0);
}

int jt_num_cmp(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b))
    return ((intptr_t)a > (intptr_t)b) - ((intptr_t)a < (intptr_t)b);
  int c = cmp_slow(S, a, b, JT_SYM(S, REAL));
  if (c == UNORDERED) invalid(S, "<", a, b);
  return c;
}

bool jt_num_equal(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b)) return a == b;
  if (jt_iscomplex(a) || jt_iscomplex(b)) return jt_complex_equal(S, a, b);
  return cmp_slow(S, a, b, JT_SYM(S, NUMBER)) == 0;
}

bool jt_num_eql(jt_V a, jt_V b) {
  if (a == b) return true;
  if (!jt_isptr(a) || !jt_isptr(b) || jt_type(a) != jt_type(b)) return false;
  switch (jt_type(a)) {
  case JT_TBIGNUM: return mpz_cmp(jt_big_(a)->z, jt_big_(b)->z) == 0;
  case JT_TRATIO: return mpq_equal(jt_ratio_(a)->q, jt_ratio_(b)->q) != 0;
  case JT_TFLOAT: {
    /* representation, not value: 0.0 and -0.0 are not eql, nor 1.0 and 1.0d0 */
    double x = jt_floatval(a), y = jt_floatval(b);
    return jt_issingle(a) == jt_issingle(b) && memcmp(&x, &y, sizeof x) == 0;
  }
  case JT_TCOMPLEX: return jt_complex_eql(a, b);
  default: return false;
  }
}

static uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static uint64_t hash_mpz(mpz_srcptr z) {
  uint64_t h = (uint64_t)mpz_sgn(z) * 0x9e3779b97f4a7c15ull;
  size_t n = mpz_size(z);
  for (size_t i = 0; i < n; i++) h = mix64(h ^ (uint64_t)mpz_getlimbn(z, (mp_size_t)i));
  return h;
}

uint64_t jt_num_hash(jt_V v) {
  if (jt_isfix(v)) return mix64((uint64_t)jt_fixval(v));
  switch (jt_type(v)) {
  case JT_TBIGNUM: return hash_mpz(jt_big_(v)->z);
  case JT_TRATIO:
    return mix64(hash_mpz(mpq_numref(jt_ratio_(v)->q)) * 31 +
                 hash_mpz(mpq_denref(jt_ratio_(v)->q)));
  case JT_TFLOAT: {
    uint64_t bits;
    double d = jt_floatval(v);
    memcpy(&bits, &d, sizeof bits);
    return mix64(bits ^ 0x5bd1e9955bd1e995ull);
  }
  case JT_TCOMPLEX:
    return mix64(jt_num_hash(jt_complex_(v)->re) * 31 + jt_num_hash(jt_complex_(v)->im));
  default: return 0;
  }
}

/* --------------------------------------------------- rounding division */

enum { RND_FLOOR, RND_CEIL, RND_TRUNC, RND_ROUND };
static const char *const RND_NAMES[] = {"FLOOR", "CEILING", "TRUNCATE", "ROUND"};

/* Division with a float involved, computed as SBCL does so results agree to
** the bit: truncate the float quotient, take the remainder, then adjust. */
static void divide_float(jt_State *S, int mode, jt_V x, jt_V y, bool fquot,
                         jt_V *qp, jt_V *rp) {
  bool single = single_of(x, y);
  double xd = float_operand(S, x, single), yd = 1.0;
  if (y != JT_NOVALUE) {
    yd = float_operand(S, y, single);
    if (yd == 0.0) quotient_by_zero(S, x, y);
  }
  double div = xd / yd;
  if (!isfinite(div)) nonfinite(S, div, RND_NAMES[mode], x, y);
  double q = trunc(div), r = xd - q * yd;
  switch (mode) {
  case RND_FLOOR:
    if (r != 0 && (yd < 0 ? r > 0 : r < 0)) { q -= 1; r += yd; }
    break;
  case RND_CEIL:
    if (r != 0 && (yd < 0 ? r < 0 : r > 0)) { q += 1; r -= yd; }
    break;
  case RND_ROUND: {
    /* |r| against |y| - |r| rather than |y| / 2, which underflows for the
    ** smallest subnormal; the subtraction is exact where the two are close */
    double ar = fabs(r), rest = fabs(yd) - ar;
    bool odd = fmod(q, 2.0) != 0;
    if (r != 0 && (ar > rest || (ar == rest && odd))) {
      if ((r > 0) == (yd > 0)) { q += 1; r -= yd; } else { q -= 1; r += yd; }
    }
    q += 0.0;   /* a zero quotient is +0.0, as SBCL's fround gives it */
    break;
  }
  default: break;
  }
  jt_V rv = jt_make_float_as(S, r, single);
  JT_ROOT(S, rv);
  *qp = fquot ? jt_make_float_as(S, q, single) : integer_from_double(S, q);
  *rp = rv;
  JT_UNROOT(S, 1);
}

/* Round the positive-denominator fraction n/d into q per `mode`. */
static void round_mpz(mpz_ptr q, mpz_srcptr n, mpz_srcptr d, int mode) {
  switch (mode) {
  case RND_FLOOR: mpz_fdiv_q(q, n, d); break;
  case RND_CEIL: mpz_cdiv_q(q, n, d); break;
  case RND_TRUNC: mpz_tdiv_q(q, n, d); break;
  default: {
    mpz_t r;
    mpz_init(r);
    mpz_fdiv_qr(q, r, n, d);
    mpz_mul_2exp(r, r, 1);
    int c = mpz_cmp(r, d);
    if (c > 0 || (c == 0 && mpz_odd_p(q))) mpz_add_ui(q, q, 1);
    mpz_clear(r);
    break;
  }
  }
}

/* (floor x [y]) and its siblings: the quotient rounded per `mode` (a float
** when `fquot`) in *qp and the remainder in *rp.  y is JT_NOVALUE for the
** one-argument forms. */
static void divide(jt_State *S, int mode, jt_V x, jt_V y, bool fquot,
                   jt_V *qp, jt_V *rp) {
  int kx = kind_of(S, x, JT_SYM(S, REAL));
  int ky = y == JT_NOVALUE ? NK_FIX : kind_of(S, y, JT_SYM(S, REAL));
  if (kx == NK_FLOAT || ky == NK_FLOAT) {
    divide_float(S, mode, x, y, fquot, qp, rp);
    return;
  }
  if (y == JT_NOVALUE) {
    if (kx != NK_RATIO) {
      *qp = fquot ? float_like(S, jt_to_double(S, x), x) : x;
      *rp = jt_mkfix(0);
      return;
    }
    y = jt_mkfix(1);
  }
  if (y == jt_mkfix(0)) quotient_by_zero(S, x, y);
  jt_V q, r = JT_NIL;
  JT_ROOT(S, x);
  JT_ROOT(S, y);
  JT_ROOT(S, r);
  if (kx == NK_FIX && ky == NK_FIX) {
    /* |x| <= 2^62, so even FIXMIN / -1 is representable in a word */
    intptr_t a = jt_fixval(x), b = jt_fixval(y), qi = a / b, ri = a % b;
    switch (mode) {
    case RND_FLOOR:
      if (ri != 0 && (ri ^ b) < 0) { qi--; ri += b; }
      break;
    case RND_CEIL:
      if (ri != 0 && (ri ^ b) >= 0) { qi++; ri -= b; }
      break;
    case RND_ROUND:
      if (ri != 0) {
        uintptr_t r2 = 2 * (ri < 0 ? -(uintptr_t)ri : (uintptr_t)ri);
        uintptr_t bb = b < 0 ? -(uintptr_t)b : (uintptr_t)b;
        if (r2 > bb || (r2 == bb && (qi & 1))) {
          if ((a ^ b) >= 0) { qi++; ri -= b; } else { qi--; ri += b; }
        }
      }
      break;
    default: break;
    }
    r = jt_mkfix(ri);
    q = jt_make_integer(S, qi);
  } else if (kx != NK_RATIO && ky != NK_RATIO) {
    charge_product(S, limbs_of(x) + limbs_of(y));
    jt_Bignum *qb = new_big(S);
    jt_V qv = (jt_V)qb;
    JT_ROOT(S, qv);
    jt_Bignum *rb = new_big(S);
    r = (jt_V)rb;
    ZView wx, wy;
    mpz_srcptr a = zview(&wx, x), b = zview(&wy, y);
    BigJob j = {mode == RND_FLOOR ? BJ_FDIV : mode == RND_CEIL ? BJ_CDIV : BJ_TDIV, a, b, 0, {{0}}, {{0}}, NULL};
    big_run(S, &j, limbs_of(x) + limbs_of(y), qb, rb);
    switch (mode) {
    case RND_FLOOR: case RND_CEIL: case RND_TRUNC: break;
    default: {
      mpz_t t;
      mpz_init(t);
      mpz_mul_2exp(t, rb->z, 1);
      int c = mpz_cmpabs(t, b);
      mpz_clear(t);
      if (c > 0 || (c == 0 && mpz_odd_p(qb->z))) {
        if (mpz_sgn(a) == mpz_sgn(b)) {
          mpz_add_ui(qb->z, qb->z, 1);
          mpz_sub(rb->z, rb->z, b);
        } else {
          mpz_sub_ui(qb->z, qb->z, 1);
          mpz_add(rb->z, rb->z, b);
        }
      }
      break;
    }
    }
    r = big_norm(S, rb);
    q = big_norm(S, qb);
    JT_UNROOT(S, 1);
  } else {
    /* rationals: round the exact quotient, then r = x - q*y */
    jt_V ratio = jt_num_div(S, x, y);
    if (jt_isinteger(ratio)) {
      q = ratio;
      r = jt_mkfix(0);
    } else {
      JT_ROOT(S, ratio);
      jt_Bignum *qb = new_big(S);
      round_mpz(qb->z, mpq_numref(jt_ratio_(ratio)->q),
                mpq_denref(jt_ratio_(ratio)->q), mode);
      q = big_norm(S, qb);
      JT_ROOT(S, q);
      r = jt_num_sub(S, x, jt_num_mul(S, q, y));
      JT_UNROOT(S, 2);
    }
  }
  if (fquot) q = float_like(S, jt_to_double(S, q), q);
  JT_UNROOT(S, 3);
  *qp = q;
  *rp = r;
}

/* ------------------------------------------------------------- parsing */

static int digit_value(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

/* Digits (all valid in `base`) as an integer.  They come either as bytes
** `s` or as code points `u`, n of them. */
static jt_V parse_digits(jt_State *S, const char *s, const uint32_t *u,
                         size_t n, int base, bool neg) {
  int64_t v = 0;
  size_t i = 0;
  for (; i < n; i++) {
    int d = digit_value(s ? (unsigned char)s[i] : (int)u[i]);
    if (v > (JT_FIXMAX - d) / base) break;
    v = v * base + d;
  }
  if (i == n) return jt_mkfix(neg ? -v : v);
  reserve_bits(S, (uint64_t)n * 6, "PARSE-INTEGER");
  /* allocate the result first: nothing may signal while we own the buffer */
  jt_Bignum *b = new_big(S);
  jt_V bv = (jt_V)b;
  JT_ROOT(S, bv);
  char *buf = jt_malloc(S, n + 1);
  for (i = 0; i < n; i++) buf[i] = s ? s[i] : (char)u[i];
  buf[n] = 0;
  mpz_set_str(b->z, buf, base);
  jt_free(S, buf, n + 1);
  if (neg) mpz_neg(b->z, b->z);
  JT_UNROOT(S, 1);
  return big_norm(S, b);
}

/* A float token: [sign] digits [. digits] [marker [sign] digits], already
** checked for shape by the caller.  The decimal point is removed so that
** strtod sees "<digits>e<exp>", which no locale can misread. */
static jt_V parse_float(jt_State *S, const char *tok, size_t len) {
  size_t i = 0, n = 0;
  bool single = jt_num_default_single(S);
  bool neg = false;
  if (tok[0] == '+' || tok[0] == '-') neg = tok[i++] == '-';
  char small[128];
  size_t cap = len + 32;
  char *buf = cap <= sizeof small ? small : jt_malloc(S, cap);
  long frac = 0, exp = 0;
  bool point = false;
  for (; i < len; i++) {
    if (tok[i] == '.') {
      point = true;
    } else if (tok[i] >= '0' && tok[i] <= '9') {
      buf[n++] = tok[i];
      frac += point;
    } else {
      break;
    }
  }
  if (i < len) {   /* exponent marker: e s f d l, any case */
    char m = (char)(tok[i] | 0x20);
    if (m != 'e') single = m == 's' || m == 'f';
    i++;
    bool eneg = false;
    if (tok[i] == '+' || tok[i] == '-') eneg = tok[i++] == '-';
    for (; i < len; i++)   /* saturate: 1e100000000 is out of range anyway */
      if (exp < 100000000) exp = exp * 10 + (tok[i] - '0');
    if (eneg) exp = -exp;
  }
  snprintf(buf + n, cap - n, "e%ld", exp - frac);
  /* strtof rounds the decimal once, straight to a single-float */
  double d = single ? (double)strtof(buf, NULL) : strtod(buf, NULL);
  if (buf != small) jt_free(S, buf, cap);
  if (isinf(d))
    jt_errorc(S, JT_SYM(S, READER_ERROR),
              "floating-point number out of range: %.*s", (int)(len > 60 ? 60 : len), tok);
  return jt_make_float_as(S, neg ? -d : d, single);
}

bool jt_num_default_single(jt_State *S) {
  jt_V f = jt_symobj(S, JT_SYM(S, READ_DEFAULT_FLOAT_FORMAT))->value;
  if (f == JT_SYM(S, DOUBLE_FLOAT)) return false;
  if (f == JT_SYM(S, SINGLE_FLOAT) || !jt_issymbol(f)) return true;
  return !jt_lisp_sym_named(S, f, "LONG-FLOAT");
}

/* Is tok[i..len) float syntax (after the sign)? */
static bool float_syntax(const char *tok, size_t i, size_t len) {
  size_t before = 0, after = 0;
  while (i < len && tok[i] >= '0' && tok[i] <= '9') { i++; before++; }
  bool point = i < len && tok[i] == '.';
  if (point) {
    i++;
    while (i < len && tok[i] >= '0' && tok[i] <= '9') { i++; after++; }
  }
  if (i == len) return point && after > 0;
  if (!strchr("eEsSfFdDlL", tok[i]) || before + after == 0) return false;
  i++;
  if (i < len && (tok[i] == '+' || tok[i] == '-')) i++;
  if (i == len) return false;
  for (; i < len; i++)
    if (tok[i] < '0' || tok[i] > '9') return false;
  return true;
}

jt_V jt_num_parse(jt_State *S, const char *tok, size_t len, int base) {
  if (base < 2 || base > 36) base = 10;
  size_t i = 0;
  bool neg = false;
  if (len > 0 && (tok[0] == '+' || tok[0] == '-')) neg = tok[i++] == '-';
  if (i == len) return JT_NOVALUE;
  size_t j = i;
  while (j < len && digit_value((unsigned char)tok[j]) < base) j++;
  if (j == len) return parse_digits(S, tok + i, NULL, j - i, base, neg);
  /* decimal integer with a trailing point, whatever the base */
  size_t d = i;
  while (d < len && tok[d] >= '0' && tok[d] <= '9') d++;
  if (d > i && d == len - 1 && tok[d] == '.')
    return parse_digits(S, tok + i, NULL, d - i, 10, neg);
  if (j > i && tok[j] == '/') {
    size_t k = j + 1;
    while (k < len && digit_value((unsigned char)tok[k]) < base) k++;
    if (k == len && k > j + 1) {
      jt_V num = parse_digits(S, tok + i, NULL, j - i, base, neg);
      JT_ROOT(S, num);
      jt_V den = parse_digits(S, tok + j + 1, NULL, k - j - 1, base, false);
      if (den == jt_mkfix(0)) div_zero(S, "/", num, den);
      JT_ROOT(S, den);
      jt_V r = jt_num_div(S, num, den);
      JT_UNROOT(S, 2);
      return r;
    }
  }
  if (float_syntax(tok, i, len)) return parse_float(S, tok, len);
  return JT_NOVALUE;
}

/* ------------------------------------------------------------ printing */

static void put_uint(jt_Buf *out, uint64_t m, int base) {
  char tmp[72];
  int i = sizeof tmp;
  do {
    tmp[--i] = DIGITS[m % (unsigned)base];
    m /= (unsigned)base;
  } while (m);
  jt_buf_put(out, tmp + i, sizeof tmp - i);
}

/* The digits come from GMP's allocator, not jt_malloc: printing must not
** collect under the printer's feet, and the buffer is gone before anything
** can signal.  A cancel stops a long conversion; an interrupt waits for it
** (the printer is no number primitive: its stream is live). */
static void put_mpz(jt_State *S, mpz_srcptr z, int base, jt_Buf *out) {
  BigJob j = {BJ_STR, z, NULL, (unsigned long)base, {{0}}, {{0}}, NULL};
  jt_numstop_run(S, mpz_size(z), false, big_job, &j);
  mpz_clear(j.q);
  mpz_clear(j.r);
  jt_buf_puts(out, j.str);
  jt_numstop_free(j.str, strlen(j.str) + 1);
}

static void put_integer(jt_State *S, jt_V v, int base, jt_Buf *out) {
  if (jt_isfix(v)) {
    intptr_t n = jt_fixval(v);
    if (n < 0) jt_buf_putc(out, '-');
    put_uint(out, n < 0 ? -(uint64_t)n : (uint64_t)n, base);
    return;
  }
  put_mpz(S, jt_big_(v)->z, base, out);
}

static void put_radix(jt_Buf *out, int base) {
  switch (base) {
  case 2: jt_buf_puts(out, "#b"); break;
  case 8: jt_buf_puts(out, "#o"); break;
  case 16: jt_buf_puts(out, "#x"); break;
  default: jt_buf_printf(out, "#%dr", base); break;
  }
}

/* Does d, whose first 41 significant digits are digs (decimal exponent
** exp10), round up when cut to nd digits?  Ties go up, as in SBCL's digit
** generator (printf would send them to even).  The 41 digits settle it
** unless they read exactly 5000...: then compare d with the midpoint
** exactly, since the print may have rounded up from 4999... */
static bool rounds_up(const char *digs, int ndigs, int nd, int exp10, double d) {
  if (digs[nd] != '5') return digs[nd] > '5';
  for (int k = nd + 1; k < ndigs; k++)
    if (digs[k] != '0') return true;
  char mid[24];
  memcpy(mid, digs, nd);
  mid[nd] = '5';
  mid[nd + 1] = 0;
  mpq_t v, m;
  mpz_t p10;
  mpq_init(v);
  mpq_init(m);
  mpz_init(p10);
  mpq_set_d(v, d);
  mpz_set_str(mpq_numref(m), mid, 10);
  long k = (long)exp10 - nd;   /* m = mid * 10^k */
  mpz_ui_pow_ui(p10, 10, (unsigned long)(k < 0 ? -k : k));
  if (k >= 0) mpz_mul(mpq_numref(m), mpq_numref(m), p10);
  else mpz_set(mpq_denref(m), p10);
  mpq_canonicalize(m);
  bool up = mpq_cmp(v, m) >= 0;
  mpq_clear(v);
  mpq_clear(m);
  mpz_clear(p10);
  return up;
}

int jt_float_shortest(double d, bool single, char *digits, int *exp10_out) {
  char text[64], digs[48], probe[48];
  snprintf(text, sizeof text, "%.40e", d);
  char *e = strchr(text, 'e');
  int ndigs = 0, exp10 = atoi(e + 1), nd, dexp = exp10;
  for (char *p = text; p < e; p++)   /* skip the (locale's) point */
    if (*p >= '0' && *p <= '9') digs[ndigs++] = *p;
  int maxd = single ? 9 : 17;   /* digits that always round-trip */
  for (nd = 1; nd <= maxd; nd++) {
    memcpy(digits, digs, nd);
    dexp = exp10;
    if (rounds_up(digs, ndigs, nd, exp10, d)) {   /* carry through nines */
      int k = nd - 1;
      while (k >= 0 && digits[k] == '9') digits[k--] = '0';
      if (k >= 0) {
        digits[k]++;
      } else {
        digits[0] = '1';   /* 9.99... became 10.0... */
        dexp++;
      }
    }
    snprintf(probe, sizeof probe, "%.*se%d", nd, digits, dexp - (nd - 1));
    if ((single ? (double)strtof(probe, NULL) : strtod(probe, NULL)) == d) break;
  }
  if (nd > maxd) nd = maxd;   /* unreachable */
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  *exp10_out = dexp;
  return nd;
}

/* A float as SBCL prints it: the shortest digit string that reads back as
** the same float of its format (single when `single`), in positional
** notation for 1e-3 <= |d| < 1e7 and as d.ddde[-]x otherwise.  A float not
** of the default format carries its exponent marker (`marker`, 'd' or
** 'f'; 0 for none): 1.0d0, 1.5d20. */
static void put_float(jt_Buf *out, double d, bool single, char marker) {
  if (signbit(d)) {
    jt_buf_putc(out, '-');
    d = -d;
  }
  if (d == 0) {
    jt_buf_puts(out, "0.0");
    if (marker) jt_buf_printf(out, "%c0", marker);
    return;
  }
  if (!isfinite(d)) {  /* never made by the language; printed, not crashed on */
    jt_buf_puts(out, isnan(d) ? "#<NaN>" : "#<infinity>");
    return;
  }
  char digits[24];
  int dexp, nd = jt_float_shortest(d, single, digits, &dexp);
  if (d >= 1e-3 && d < 1e7) {
    if (dexp >= 0) {
      for (int k = 0; k <= dexp; k++) jt_buf_putc(out, k < nd ? digits[k] : '0');
      jt_buf_putc(out, '.');
      if (nd > dexp + 1) jt_buf_put(out, digits + dexp + 1, nd - dexp - 1);
      else jt_buf_putc(out, '0');
    } else {
      jt_buf_puts(out, "0.");
      for (int k = 0; k < -dexp - 1; k++) jt_buf_putc(out, '0');
      jt_buf_put(out, digits, nd);
    }
    if (marker) jt_buf_printf(out, "%c0", marker);
  } else {
    jt_buf_putc(out, digits[0]);
    jt_buf_putc(out, '.');
    if (nd > 1) jt_buf_put(out, digits + 1, nd - 1);
    else jt_buf_putc(out, '0');
    jt_buf_printf(out, "%c%d", marker ? marker : 'e', dexp);
  }
}

void jt_num_print(jt_State *S, jt_V num, int base, bool radix, jt_Buf *out) {
  if (base < 2 || base > 36) base = 10;
  if (jt_iscomplex(num)) {
    jt_buf_puts(out, "#C(");
    jt_num_print(S, jt_complex_(num)->re, base, radix, out);
    jt_buf_putc(out, ' ');
    jt_num_print(S, jt_complex_(num)->im, base, radix, out);
    jt_buf_putc(out, ')');
  } else if (jt_isfloat(num)) {
    bool single = jt_issingle(num);
    char marker = single == jt_num_default_single(S) ? 0 : single ? 'f' : 'd';
    put_float(out, jt_floatval(num), single, marker);
  } else if (jt_isratio(num)) {
    if (radix) put_radix(out, base);
    put_mpz(S, mpq_numref(jt_ratio_(num)->q), base, out);
    jt_buf_putc(out, '/');
    put_mpz(S, mpq_denref(jt_ratio_(num)->q), base, out);
  } else if (jt_isinteger(num)) {
    if (radix && base != 10) put_radix(out, base);
    put_integer(S, num, base, out);
    if (radix && base == 10) jt_buf_putc(out, '.');
  }
}

/* ------------------------------------------------------- random numbers */

/* xoshiro256** over the words of a random state: fast, good statistically.
** Random states are objects (jt_Random): *random-state* holds the current
** one, make-random-state copies one, and a state is stored in a world like
** any readable value.  Nothing is seeded from the clock: a new world always
** starts from the same state, and (make-random-state t) derives its seed
** from the current state, so runs stay reproducible. */
static inline uint64_t rotl64(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t *s) {
  uint64_t out = rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return out;
}

/* Fill the state from one seed with splitmix64, as xoshiro's authors
** recommend: it never yields the all-zero state. */
static void rng_seed(uint64_t *s, uint64_t seed) {
  for (int i = 0; i < 4; i++) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    s[i] = z ^ (z >> 31);
  }
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rng_below(uint64_t *s, uint64_t n) {
  uint64_t cut = -n % n;   /* 2^64 mod n: values below it are rejected */
  for (;;) {
    uint64_t r = rng_next(s);
    if (r >= cut) return r % n;
  }
}

jt_V jt_make_random_state(jt_State *S, const uint64_t words[4]) {
  jt_Random *r = (jt_Random *)jt_alloc(S, JT_TRANDOM, sizeof(jt_Random));
  memcpy(r->s, words, sizeof r->s);
  return (jt_V)r;
}

/* The random state argument of RANDOM (or *random-state*), about to be
** drawn from: the barrier sees the change first. */
static uint64_t *state_words(jt_State *S, int argc, jt_V *argv) {
  jt_V st = argc > 1 ? argv[1] : jt_symbol_value(S, JT_SYM(S, RANDOM_STATE));
  if (!jt_is(st, JT_TRANDOM)) jt_type_error(S, st, jt_intern(S, "RANDOM-STATE"));
  JT_TOUCH(S, st);
  return ((jt_Random *)st)->s;
}

/* ----------------------------------------------------------- built-ins */

/* (+ &rest numbers) */
JT_FN(f_add) {
  if (argc == 0) return jt_mkfix(0);
  jt_V acc = argv[0];
  if (argc == 1) {
    if (!jt_iscomplex(acc)) kind_of(S, acc, JT_SYM(S, NUMBER));
    return acc;
  }
  JT_ROOT(S, acc);
  for (int i = 1; i < argc; i++) acc = jt_num_add(S, acc, argv[i]);
  JT_UNROOT(S, 1);
  return acc;
}

JT_FN(f_mul) {
  if (argc == 0) return jt_mkfix(1);
  jt_V acc = argv[0];
  if (argc == 1) {
    if (!jt_iscomplex(acc)) kind_of(S, acc, JT_SYM(S, NUMBER));
    return acc;
  }
  JT_ROOT(S, acc);
  for (int i = 1; i < argc; i++) acc = jt_num_mul(S, acc, argv[i]);
  JT_UNROOT(S, 1);
  return acc;
}

JT_FN(f_sub) {
  if (argc == 1) return num_neg(S, argv[0]);
  jt_V acc = argv[0];
  JT_ROOT(S, acc);
  for (int i = 1; i < argc; i++) acc = jt_num_sub(S, acc, argv[i]);
  JT_UNROOT(S, 1);
  return acc;
}

JT_FN(f_div) {
  if (argc == 1) return jt_num_div(S, jt_mkfix(1), argv[0]);
  jt_V acc = argv[0];
  JT_ROOT(S, acc);
  for (int i = 1; i < argc; i++) acc = jt_num_div(S, acc, argv[i]);
  JT_UNROOT(S, 1);
  return acc;
}

enum { CMP_EQ, CMP_LT, CMP_GT, CMP_LE, CMP_GE };
static const char *const CMP_NAMES[] = {"=", "<", ">", "<=", ">="};

/* The chained comparisons: every argument is checked even once the answer
** is known, as an error in any argument is an error of the call. */
static jt_V compare_chain(jt_State *S, int argc, jt_V *argv, int test) {
  jt_V type = test == CMP_EQ ? JT_SYM(S, NUMBER) : JT_SYM(S, REAL);
  for (int i = 0; i < argc; i++)
    if (!(test == CMP_EQ && jt_iscomplex(argv[i]))) kind_of(S, argv[i], type);
  for (int i = 0; i + 1 < argc; i++) {
    jt_V a = argv[i], b = argv[i + 1];
    if (jt_iscomplex(a) || jt_iscomplex(b)) {
      if (!jt_complex_equal(S, a, b)) return JT_NIL;
      continue;
    }
    int c = jt_isfix(a) && jt_isfix(b)
                ? ((intptr_t)a > (intptr_t)b) - ((intptr_t)a < (intptr_t)b)
                : cmp_slow(S, a, b, type);
    if (c == UNORDERED) {   /* a NaN: = to nothing, in no order */
      if (test == CMP_EQ) return JT_NIL;
      invalid(S, CMP_NAMES[test], a, b);
    }
    bool ok;
    switch (test) {
    case CMP_EQ: ok = c == 0; break;
    case CMP_LT: ok = c < 0; break;
    case CMP_GT: ok = c > 0; break;
    case CMP_LE: ok = c <= 0; break;
    default: ok = c >= 0; break;
    }
    if (!ok) return JT_NIL;
  }
  return JT_T;
}

JT_FN(f_numeq) { return compare_chain(S, argc, argv, CMP_EQ); }
JT_FN(f_lt) { return compare_chain(S, argc, argv, CMP_LT); }
JT_FN(f_gt) { return compare_chain(S, argc, argv, CMP_GT); }
JT_FN(f_le) { return compare_chain(S, argc, argv, CMP_LE); }
JT_FN(f_ge) { return compare_chain(S, argc, argv, CMP_GE); }

JT_FN(f_numne) {
  for (int i = 0; i < argc; i++)
    if (!jt_isnumber(argv[i])) jt_type_error(S, argv[i], JT_SYM(S, NUMBER));
  for (int i = 0; i < argc; i++)
    for (int j = i + 1; j < argc; j++)
      if (jt_num_equal(S, argv[i], argv[j])) return JT_NIL;
  return JT_T;
}

JT_FN(f_zerop) {
  if (jt_iscomplex(argv[0])) return jt_bool(jt_complex_zerop(argv[0]));
  kind_of(S, argv[0], JT_SYM(S, NUMBER));
  return jt_bool(is_zero(argv[0]));
}
JT_FN(f_plusp) { return jt_bool(ordered_sign(S, check_real(S, argv[0]), "PLUSP") > 0); }
JT_FN(f_minusp) { return jt_bool(ordered_sign(S, check_real(S, argv[0]), "MINUSP") < 0); }

static bool is_odd(jt_V v) {
  return jt_isfix(v) ? (jt_fixval(v) & 1) != 0 : mpz_odd_p(jt_big_(v)->z);
}
JT_FN(f_evenp) { return jt_bool(!is_odd(check_integer(S, argv[0]))); }
JT_FN(f_oddp) { return jt_bool(is_odd(check_integer(S, argv[0]))); }

JT_FN(f_oneplus) { return jt_num_add(S, argv[0], jt_mkfix(1)); }
JT_FN(f_oneminus) { return jt_num_sub(S, argv[0], jt_mkfix(1)); }
JT_FN(f_abs) { return num_abs(S, argv[0]); }

JT_FN(f_signum) {
  jt_V x = argv[0];
  if (jt_iscomplex(x)) {   /* z / |z|, or z itself when zero */
    if (jt_complex_zerop(x)) return x;
    return jt_num_div(S, x, jt_complex_abs(S, x));
  }
  if (jt_isfloat(x)) {
    double d = jt_floatval(x);
    return d == 0 ? x : float_like(S, d > 0 ? 1.0 : -1.0, x);
  }
  return jt_mkfix(sign_of(check_real(S, x)));
}

/* min and max return one of their arguments unchanged, as SBCL does. */
static jt_V extremum(jt_State *S, int argc, jt_V *argv, int want) {
  jt_V best = check_real(S, argv[0]);
  for (int i = 1; i < argc; i++) {
    jt_V x = argv[i];
    int c = jt_isfix(x) && jt_isfix(best) ? ((intptr_t)x > (intptr_t)best) - ((intptr_t)x < (intptr_t)best)
                                          : cmp_slow(S, x, best, JT_SYM(S, REAL));
    if (c == UNORDERED) invalid(S, want > 0 ? "MAX" : "MIN", best, x);
    if (c == want) best = x;
  }
  return best;
}
JT_FN(f_max) { return extremum(S, argc, argv, 1); }
JT_FN(f_min) { return extremum(S, argc, argv, -1); }

static jt_V divide_values(jt_State *S, int mode, int argc, jt_V *argv,
                          bool fquot) {
  jt_V q, r;
  divide(S, mode, argv[0], argc > 1 ? argv[1] : JT_NOVALUE, fquot, &q, &r);
  return jt_values2(S, q, r);
}
JT_FN(f_floor) { return divide_values(S, RND_FLOOR, argc, argv, false); }
JT_FN(f_ceiling) { return divide_values(S, RND_CEIL, argc, argv, false); }
JT_FN(f_truncate) { return divide_values(S, RND_TRUNC, argc, argv, false); }
JT_FN(f_round) { return divide_values(S, RND_ROUND, argc, argv, false); }
JT_FN(f_ffloor) { return divide_values(S, RND_FLOOR, argc, argv, true); }
JT_FN(f_fceiling) { return divide_values(S, RND_CEIL, argc, argv, true); }
JT_FN(f_ftruncate) { return divide_values(S, RND_TRUNC, argc, argv, true); }
JT_FN(f_fround) { return divide_values(S, RND_ROUND, argc, argv, true); }

JT_FN(f_mod) {
  jt_V a = argv[0], b = argv[1];
  if (jt_isfix(a) && jt_isfix(b) && b != jt_mkfix(0)) {
    intptr_t x = jt_fixval(a), y = jt_fixval(b), r = x % y;
    if (r != 0 && (r ^ y) < 0) r += y;
    return jt_mkfix(r);
  }
  if (is_zero(check_real(S, b))) quotient_by_zero(S, check_real(S, a), b);
  jt_V q, r;
  divide(S, RND_FLOOR, a, b, false, &q, &r);
  return r;
}

JT_FN(f_rem) {
  jt_V a = argv[0], b = argv[1];
  if (jt_isfix(a) && jt_isfix(b) && b != jt_mkfix(0))
    return jt_mkfix(jt_fixval(a) % jt_fixval(b));
  if (is_zero(check_real(S, b))) quotient_by_zero(S, check_real(S, a), b);
  jt_V q, r;
  divide(S, RND_TRUNC, a, b, false, &q, &r);
  return r;
}

/* gcd and lcm of two integers */
static jt_V gcd2(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b))
    return make_unsigned(S, (uint64_t)gcd_word(jt_fixval(a), jt_fixval(b)));
  charge_gcd(S, limbs_of(a) + limbs_of(b));
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  jt_Bignum *g = new_big(S);
  jt_V gv = (jt_V)g;
  JT_ROOT(S, gv);
  ZView wa, wb;
  BigJob j = {BJ_GCD, zview(&wa, a), zview(&wb, b), 0, {{0}}, {{0}}, NULL};
  big_run(S, &j, limbs_of(a) + limbs_of(b), g, NULL);
  JT_UNROOT(S, 3);
  return big_norm(S, g);
}

static jt_V lcm2(jt_State *S, jt_V a, jt_V b) {
  if (jt_isfix(a) && jt_isfix(b)) {
    intptr_t x = jt_fixval(a), y = jt_fixval(b), r;
    if (x == 0 || y == 0) return jt_mkfix(0);
    intptr_t g = gcd_word(x, y);
    if (!__builtin_mul_overflow(x / g, y, &r) && r != INTPTR_MIN) {
      r = r < 0 ? -r : r;
      if (jt_fixfits(r)) return jt_mkfix(r);
    }
  }
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  reserve_bits(S, (uint64_t)(limbs_of(a) + limbs_of(b)) * GMP_NUMB_BITS, "LCM");
  jt_Bignum *l = new_big(S);
  jt_V lv = (jt_V)l;
  JT_ROOT(S, lv);
  ZView wa, wb;
  BigJob j = {BJ_LCM, zview(&wa, a), zview(&wb, b), 0, {{0}}, {{0}}, NULL};
  big_run(S, &j, limbs_of(a) + limbs_of(b), l, NULL);
  JT_UNROOT(S, 3);
  return big_norm(S, l);
}

JT_FN(f_gcd) {
  for (int i = 0; i < argc; i++) check_integer(S, argv[i]);
  if (argc == 0) return jt_mkfix(0);
  if (argc == 1) return num_abs(S, argv[0]);
  jt_V acc = argv[0];
  JT_ROOT(S, acc);
  for (int i = 1; i < argc; i++) acc = gcd2(S, acc, argv[i]);
  JT_UNROOT(S, 1);
  return acc;
}

JT_FN(f_lcm) {
  for (int i = 0; i < argc; i++) check_integer(S, argv[i]);
  if (argc == 0) return jt_mkfix(1);
  if (argc == 1) return num_abs(S, argv[0]);
  jt_V acc = argv[0];
  JT_ROOT(S, acc);
  for (int i = 1; i < argc; i++) acc = lcm2(S, acc, argv[i]);
  JT_UNROOT(S, 1);
  return acc;
}

/* base^e for a rational base and a fixnum e >= 2: exact. */
static jt_V expt_exact(jt_State *S, jt_V base, unsigned long e) {
  JT_ROOT(S, base);
  jt_V r;
  if (jt_isratio(base)) {
    mpq_srcptr q = jt_ratio_(base)->q;
    reserve_bits(S, (uint64_t)(mpz_sizeinbase(mpq_numref(q), 2) +
                               mpz_sizeinbase(mpq_denref(q), 2)) * e, "EXPT");
    jt_Ratio *p = new_ratio(S);
    /* numerator and denominator stay coprime: no canonicalisation needed */
    mpz_pow_ui(mpq_numref(p->q), mpq_numref(jt_ratio_(base)->q), e);
    mpz_pow_ui(mpq_denref(p->q), mpq_denref(jt_ratio_(base)->q), e);
    r = ratio_norm(S, p);
  } else {
    ZView w;
    reserve_bits(S, (uint64_t)mpz_sizeinbase(zview(&w, base), 2) * e, "EXPT");
    jt_Bignum *p = new_big(S);
    r = (jt_V)p;
    JT_ROOT(S, r);
    mpz_srcptr b = zview(&w, base);
    BigJob j = {BJ_POW, b, NULL, e, {{0}}, {{0}}, NULL};
    big_run(S, &j, (size_t)(mpz_sizeinbase(b, 2) * e / GMP_NUMB_BITS), p, NULL);
    JT_UNROOT(S, 1);
    r = big_norm(S, p);
  }
  JT_UNROOT(S, 1);
  return r;
}

JT_FN(f_expt) {
  jt_V base = argv[0], power = argv[1];
  if (jt_iscomplex(base) || jt_iscomplex(power)) return jt_complex_expt(S, base, power);
  int kb = kind_of(S, base, JT_SYM(S, NUMBER));
  int kp = kind_of(S, power, JT_SYM(S, NUMBER));
  if (kp == NK_FIX || kp == NK_BIG) {
    if (kb == NK_FLOAT) {
      double b = jt_floatval(base), p = jt_to_double(S, power);
      if (b == 0 && p < 0) div_zero(S, "EXPT", base, power);
      return float_result(S, pow(b, p), "EXPT", base, power);
    }
    if (power == jt_mkfix(0)) return jt_mkfix(1);
    int ps = sign_of(power);
    if (base == jt_mkfix(0)) {
      if (ps < 0) div_zero(S, "EXPT", base, power);
      return base;
    }
    if (base == jt_mkfix(1)) return base;
    if (base == jt_mkfix(-1)) return is_odd(power) ? base : jt_mkfix(1);
    if (kp == NK_BIG)
      jt_error(S, "EXPT: the exponent is too large for an exact result");
    intptr_t e = jt_fixval(power);
    jt_V r = e == 1 || e == -1 ? base
                               : expt_exact(S, base, (unsigned long)(e < 0 ? -e : e));
    return e < 0 ? jt_num_div(S, jt_mkfix(1), r) : r;
  }
  /* a ratio or float exponent: the result is a float */
  double b = jt_to_double(S, base), p = jt_to_double(S, power);
  /* a zero power gives one, as a float (of a negative base too) */
  if (kp == NK_FLOAT && p == 0) return jt_make_float_as(S, 1.0, single_of(base, power));
  if (b < 0) return jt_complex_expt(S, base, power);
  if (b == 0 && p < 0) div_zero(S, "EXPT", base, power);
  return float_result(S, pow(b, p), "EXPT", base, power);
}

JT_FN(f_sqrt) {
  jt_V x = argv[0];
  if (jt_iscomplex(x)) return jt_complex_fn(S, JT_CX_SQRT, x);
  double d = jt_to_double(S, x);
  if (d < 0) return jt_complex_fn(S, JT_CX_SQRT, x);
  return float_like(S, sqrt(d), x);
}

JT_FN(f_isqrt) {
  jt_V x = check_integer(S, argv[0]);
  if (sign_of(x) < 0)
    jt_type_error(S, x, jt_list(S, 2, JT_SYM(S, INTEGER), jt_mkfix(0)));
  if (jt_isfix(x)) {
    uint64_t n = (uint64_t)jt_fixval(x), r = (uint64_t)sqrt((double)n);
    while (r * r > n) r--;
    while ((r + 1) * (r + 1) <= n) r++;
    return jt_mkfix((intptr_t)r);
  }
  charge_product(S, limbs_of(x));
  jt_Bignum *r = new_big(S);
  jt_V rv = (jt_V)r;
  JT_ROOT(S, rv);
  BigJob j = {BJ_SQRT, jt_big_(x)->z, NULL, 0, {{0}}, {{0}}, NULL};   /* x is argv[0]: rooted */
  big_run(S, &j, limbs_of(x), r, NULL);
  JT_UNROOT(S, 1);
  return big_norm(S, r);
}

JT_FN(f_exp) {
  if (jt_iscomplex(argv[0])) return jt_complex_fn(S, JT_CX_EXP, argv[0]);
  return float_result(S, exp(jt_to_double(S, argv[0])), "EXP", argv[0], JT_NOVALUE);
}

/* Natural log of a positive real; exact operands too large for a double
** are handled through their binary exponent. */
static double real_log(jt_State *S, jt_V x) {
  int k = kind_of(S, x, JT_SYM(S, REAL));
  int s = sign_of(x);
  if (s == 0) div_zero(S, "LOG", x, JT_NOVALUE);
  if (k == NK_FIX || k == NK_FLOAT) return log(jt_to_double(S, x));
  long e1, e2 = 0;
  double m1, m2 = 1.0;
  if (k == NK_BIG) {
    double d = big_to_format(jt_big_(x)->z, false);
    if (isfinite(d)) return log(d);
    m1 = mpz_get_d_2exp(&e1, jt_big_(x)->z);
  } else {
    m1 = mpz_get_d_2exp(&e1, mpq_numref(jt_ratio_(x)->q));
    m2 = mpz_get_d_2exp(&e2, mpq_denref(jt_ratio_(x)->q));
    double d = ratio_to_format(jt_ratio_(x)->q, false);
    if (d != 0 && isfinite(d)) return log(d);
  }
  return log(m1) - log(m2) + (double)(e1 - e2) * M_LN2;
}

/* Is x a real whose logarithm is real (positive, or an exact zero that
** signals)? */
static bool real_log_p(jt_V x) {
  return jt_isreal(x) && (sign_of(x) > 0 || (sign_of(x) == 0 && !jt_isfloat(x)));
}

JT_FN(f_log) {
  if (!real_log_p(argv[0]) || (argc > 1 && !real_log_p(argv[1]))) {
    /* a complex result: log z, or log z / log b */
    jt_V l = jt_complex_fn(S, JT_CX_LOG, argv[0]);
    if (argc == 1) return l;
    JT_PUSH(S, l);
    jt_V lb = jt_complex_fn(S, JT_CX_LOG, argv[1]);
    jt_V r = jt_num_div(S, S->sp[-1], lb);
    JT_POP(S, 1);
    return r;
  }
  double l = real_log(S, argv[0]);
  if (argc == 1) return float_like(S, l, argv[0]);
  double lb = real_log(S, argv[1]);
  if (lb == 0) div_zero(S, "LOG", argv[0], argv[1]);
  return float_result(S, l / lb, "LOG", argv[0], argv[1]);
}

/* A function of one number with a complex argument goes to complex.c. */
#define COMPLEX_ARG(fn) \
  do { if (jt_iscomplex(argv[0])) return jt_complex_fn(S, fn, argv[0]); } while (0)

JT_FN(f_sin) { COMPLEX_ARG(JT_CX_SIN); return float_like(S, sin(jt_to_double(S, argv[0])), argv[0]); }
JT_FN(f_cos) { COMPLEX_ARG(JT_CX_COS); return float_like(S, cos(jt_to_double(S, argv[0])), argv[0]); }
JT_FN(f_tan) {
  COMPLEX_ARG(JT_CX_TAN);
  return float_result(S, tan(jt_to_double(S, argv[0])), "TAN", argv[0], JT_NOVALUE);
}

JT_FN(f_asin) {
  COMPLEX_ARG(JT_CX_ASIN);
  double d = jt_to_double(S, argv[0]);
  if (d < -1 || d > 1) return jt_complex_fn(S, JT_CX_ASIN, argv[0]);
  return float_like(S, asin(d), argv[0]);
}

JT_FN(f_acos) {
  COMPLEX_ARG(JT_CX_ACOS);
  double d = jt_to_double(S, argv[0]);
  if (d < -1 || d > 1) return jt_complex_fn(S, JT_CX_ACOS, argv[0]);
  return float_like(S, acos(d), argv[0]);
}

JT_FN(f_atan) {
  if (argc == 1) COMPLEX_ARG(JT_CX_ATAN);
  double y = jt_to_double(S, argv[0]);
  if (argc == 1) return float_like(S, atan(y), argv[0]);
  return jt_make_float_as(S, atan2(y, jt_to_double(S, argv[1])), single_of(argv[0], argv[1]));
}

JT_FN(f_sinh) {
  COMPLEX_ARG(JT_CX_SINH);
  return float_result(S, sinh(jt_to_double(S, argv[0])), "SINH", argv[0], JT_NOVALUE);
}
JT_FN(f_cosh) {
  COMPLEX_ARG(JT_CX_COSH);
  return float_result(S, cosh(jt_to_double(S, argv[0])), "COSH", argv[0], JT_NOVALUE);
}
JT_FN(f_tanh) { COMPLEX_ARG(JT_CX_TANH); return float_like(S, tanh(jt_to_double(S, argv[0])), argv[0]); }
JT_FN(f_asinh) { COMPLEX_ARG(JT_CX_ASINH); return float_like(S, asinh(jt_to_double(S, argv[0])), argv[0]); }

JT_FN(f_acosh) {
  COMPLEX_ARG(JT_CX_ACOSH);
  double d = jt_to_double(S, argv[0]);
  if (d < 1) return jt_complex_fn(S, JT_CX_ACOSH, argv[0]);
  return float_like(S, acosh(d), argv[0]);
}

JT_FN(f_atanh) {
  COMPLEX_ARG(JT_CX_ATANH);
  double d = jt_to_double(S, argv[0]);
  if (d == 1 || d == -1) div_zero(S, "ATANH", argv[0], JT_NOVALUE);
  if (d < -1 || d > 1) return jt_complex_fn(S, JT_CX_ATANH, argv[0]);
  return float_like(S, atanh(d), argv[0]);
}

JT_FN(f_numerator) {
  jt_V x = argv[0];
  if (jt_isratio(x)) return jt_make_integer_mpz(S, mpq_numref(jt_ratio_(x)->q));
  return check_integer(S, x);
}

JT_FN(f_denominator) {
  jt_V x = argv[0];
  if (jt_isratio(x)) return jt_make_integer_mpz(S, mpq_denref(jt_ratio_(x)->q));
  check_integer(S, x);
  return jt_mkfix(1);
}

/* (float x [prototype]): x in the prototype's format; without one a float
** stays as it is and a rational becomes a single-float. */
JT_FN(f_float) {
  jt_V x = check_real(S, argv[0]);
  if (argc > 1) return jt_num_to_float(S, x, jt_issingle(check_float(S, argv[1])));
  return jt_isfloat(x) ? x : jt_num_to_float(S, x, true);
}

jt_V jt_num_to_float(jt_State *S, jt_V x, bool single) {
  if (jt_isfloat(x) && jt_issingle(x) == single) return x;
  double d = real_to_format(S, check_real(S, x), single);
  if (!isfinite(d)) nonfinite(S, d, "COERCE", x, JT_NOVALUE);
  return jt_make_float_as(S, d, single);
}

/* The exact rational a float denotes (x, for the report, is the float). */
static jt_V float_to_rational(jt_State *S, double d, jt_V x) {
  if (!isfinite(d)) invalid(S, "RATIONAL", x, JT_NOVALUE);   /* none; GMP would trap */
  if (d == trunc(d)) return integer_from_double(S, d);
  jt_Ratio *r = new_ratio(S);
  mpq_set_d(r->q, d);   /* exact and canonical */
  return ratio_norm(S, r);
}

JT_FN(f_rational) {
  jt_V x = check_real(S, argv[0]);
  return jt_isfloat(x) ? float_to_rational(S, jt_floatval(x), x) : x;
}

/* The simplest rational within half an ulp of the float: continued-fraction
** expansion of the open interval ((2m-1)/2^k, (2m+1)/2^k) around m/2^(k-1),
** stopping at the first integer that falls inside it. */
JT_FN(f_rationalize) {
  jt_V x = check_real(S, argv[0]);
  if (!jt_isfloat(x)) return x;
  double d = jt_floatval(x);
  if (!isfinite(d)) invalid(S, "RATIONALIZE", x, JT_NOVALUE);
  if (d == 0 || d == trunc(d)) return float_to_rational(S, d, x);
  /* the result object first: nothing may signal while GMP temporaries live */
  jt_Ratio *r = new_ratio(S);
  jt_V rv = (jt_V)r;
  JT_ROOT(S, rv);
  int ex;
  double frac = frexp(fabs(d), &ex);
  int digits = jt_issingle(x) ? 24 : 53;   /* half an ulp of the float's own format */
  uint64_t m = (uint64_t)ldexp(frac, digits);
  long e = ex - digits;        /* |d| = m * 2^e, e < 0 here */
  mpz_t an, ad, bn, bd, p0, q0, p1, q1, k, t;
  mpz_inits(an, ad, bn, bd, p0, q0, p1, q1, k, t, NULL);
  mpz_set_ui(an, 2 * m - 1);
  mpz_set_ui(bn, 2 * m + 1);
  mpz_setbit(ad, (mp_bitcnt_t)(1 - e));
  mpz_set(bd, ad);
  mpz_set_ui(p0, 0); mpz_set_ui(q0, 1);   /* convergents p/q, two back... */
  mpz_set_ui(p1, 1); mpz_set_ui(q1, 0);   /* ...and one back */
  for (;;) {
    mpz_fdiv_q(k, an, ad);                 /* k = floor(a); try c = k + 1 */
    mpz_add_ui(t, k, 1);
    mpz_mul(t, t, bd);
    if (mpz_sgn(bd) == 0 || mpz_cmp(t, bn) < 0) {   /* c < b (b may be oo) */
      mpz_add_ui(k, k, 1);
      mpz_addmul(p0, k, p1);               /* final convergent c*p1 + p0 */
      mpz_addmul(q0, k, q1);
      break;
    }
    /* a, b := 1/(b - k), 1/(a - k) */
    mpz_submul(an, k, ad);
    mpz_submul(bn, k, bd);
    mpz_swap(an, bd);
    mpz_swap(ad, bn);
    /* convergents advance by k */
    mpz_addmul(p0, k, p1);
    mpz_addmul(q0, k, q1);
    mpz_swap(p0, p1);
    mpz_swap(q0, q1);
  }
  if (d < 0) mpz_neg(p0, p0);
  mpz_swap(mpq_numref(r->q), p0);
  mpz_swap(mpq_denref(r->q), q0);
  mpz_clears(an, ad, bn, bd, p0, q0, p1, q1, k, t, NULL);
  JT_UNROOT(S, 1);
  return ratio_norm(S, r);
}

JT_FN(f_numberp) { return jt_bool(jt_isnumber(argv[0])); }
JT_FN(f_integerp) { return jt_bool(jt_isinteger(argv[0])); }
JT_FN(f_rationalp) { return jt_bool(jt_isrational(argv[0])); }
JT_FN(f_realp) { return jt_bool(jt_isreal(argv[0])); }
JT_FN(f_floatp) { return jt_bool(jt_isfloat(argv[0])); }

/* ------------------------------------------------------- bit operations */

enum { LOG_AND, LOG_IOR, LOG_XOR, LOG_EQV, LOG_NAND, LOG_NOR,
       LOG_ANDC1, LOG_ANDC2, LOG_ORC1, LOG_ORC2 };

static intptr_t logop_word(int op, intptr_t a, intptr_t b) {
  switch (op) {
  case LOG_AND: return a & b;
  case LOG_IOR: return a | b;
  case LOG_XOR: return a ^ b;
  case LOG_EQV: return ~(a ^ b);
  case LOG_NAND: return ~(a & b);
  case LOG_NOR: return ~(a | b);
  case LOG_ANDC1: return ~a & b;
  case LOG_ANDC2: return a & ~b;
  case LOG_ORC1: return ~a | b;
  default: return a | ~b;
  }
}

/* Two's-complement bit operations; GMP's and/ior/xor/com already behave as
** on infinite two's-complement integers. */
static jt_V logop(jt_State *S, int op, jt_V a, jt_V b) {
  check_integer(S, a);
  check_integer(S, b);
  if (jt_isfix(a) && jt_isfix(b))   /* stays within fixnum range */
    return jt_mkfix(logop_word(op, jt_fixval(a), jt_fixval(b)));
  JT_ROOT(S, a);
  JT_ROOT(S, b);
  jt_Bignum *r = new_big(S);
  ZView wa, wb;
  mpz_srcptr x = zview(&wa, a), y = zview(&wb, b);
  mpz_t t;
  mpz_init(t);
  switch (op) {
  case LOG_AND: mpz_and(r->z, x, y); break;
  case LOG_IOR: mpz_ior(r->z, x, y); break;
  case LOG_XOR: mpz_xor(r->z, x, y); break;
  case LOG_EQV: mpz_xor(r->z, x, y); mpz_com(r->z, r->z); break;
  case LOG_NAND: mpz_and(r->z, x, y); mpz_com(r->z, r->z); break;
  case LOG_NOR: mpz_ior(r->z, x, y); mpz_com(r->z, r->z); break;
  case LOG_ANDC1: mpz_com(t, x); mpz_and(r->z, t, y); break;
  case LOG_ANDC2: mpz_com(t, y); mpz_and(r->z, x, t); break;
  case LOG_ORC1: mpz_com(t, x); mpz_ior(r->z, t, y); break;
  default: mpz_com(t, y); mpz_ior(r->z, x, t); break;
  }
  mpz_clear(t);
  JT_UNROOT(S, 2);
  return big_norm(S, r);
}

static jt_V logop_nary(jt_State *S, int op, int argc, jt_V *argv,
                       intptr_t identity) {
  for (int i = 0; i < argc; i++) check_integer(S, argv[i]);
  jt_V acc = jt_mkfix(identity);
  JT_ROOT(S, acc);
  for (int i = 0; i < argc; i++) acc = logop(S, op, acc, argv[i]);
  JT_UNROOT(S, 1);
  return acc;
}

JT_FN(f_logand) { return logop_nary(S, LOG_AND, argc, argv, -1); }
JT_FN(f_logior) { return logop_nary(S, LOG_IOR, argc, argv, 0); }
JT_FN(f_logxor) { return logop_nary(S, LOG_XOR, argc, argv, 0); }
JT_FN(f_logeqv) { return logop_nary(S, LOG_EQV, argc, argv, -1); }
JT_FN(f_lognand) { return logop(S, LOG_NAND, argv[0], argv[1]); }
JT_FN(f_lognor) { return logop(S, LOG_NOR, argv[0], argv[1]); }
JT_FN(f_logandc1) { return logop(S, LOG_ANDC1, argv[0], argv[1]); }
JT_FN(f_logandc2) { return logop(S, LOG_ANDC2, argv[0], argv[1]); }
JT_FN(f_logorc1) { return logop(S, LOG_ORC1, argv[0], argv[1]); }
JT_FN(f_logorc2) { return logop(S, LOG_ORC2, argv[0], argv[1]); }

JT_FN(f_lognot) {
  jt_V x = check_integer(S, argv[0]);
  if (jt_isfix(x)) return jt_mkfix(~jt_fixval(x));
  jt_Bignum *r = new_big(S);
  mpz_com(r->z, jt_big_(x)->z);
  return big_norm(S, r);
}

JT_FN(f_logtest) {
  return jt_bool(logop(S, LOG_AND, argv[0], argv[1]) != jt_mkfix(0));
}

JT_FN(f_ash) {
  jt_V n = check_integer(S, argv[0]), count = check_integer(S, argv[1]);
  int s = sign_of(n);
  if (s == 0) return n;
  if (jt_isbig(count)) {
    if (mpz_sgn(jt_big_(count)->z) < 0) return jt_mkfix(s < 0 ? -1 : 0);
    jt_error(S, "ASH: the shift count is too large");
  }
  intptr_t c = jt_fixval(count);
  if (c <= 0) {
    if (jt_isfix(n)) {
      intptr_t v = jt_fixval(n);
      /* an arithmetic right shift floors, as ash requires */
      return jt_mkfix(c <= -63 ? (v < 0 ? -1 : 0) : v >> -c);
    }
    jt_Bignum *r = new_big(S);
    mpz_fdiv_q_2exp(r->z, jt_big_(n)->z, (mp_bitcnt_t)-c);
    return big_norm(S, r);
  }
  if (jt_isfix(n) && c < 62) {
    intptr_t r;
    if (!__builtin_mul_overflow(jt_fixval(n), (intptr_t)1 << c, &r) && jt_fixfits(r))
      return jt_mkfix(r);
  }
  ZView w;
  reserve_bits(S, mpz_sizeinbase(zview(&w, n), 2) + (uint64_t)c, "ASH");
  jt_Bignum *r = new_big(S);
  mpz_mul_2exp(r->z, zview(&w, n), (mp_bitcnt_t)c);
  return big_norm(S, r);
}

JT_FN(f_logbitp) {
  jt_V index = check_integer(S, argv[0]), n = check_integer(S, argv[1]);
  if (sign_of(index) < 0)
    jt_type_error(S, index, jt_list(S, 2, JT_SYM(S, INTEGER), jt_mkfix(0)));
  if (jt_isbig(index)) return jt_bool(sign_of(n) < 0);
  intptr_t i = jt_fixval(index);
  if (jt_isfix(n)) {
    intptr_t v = jt_fixval(n);
    return jt_bool(i >= 63 ? v < 0 : ((v >> i) & 1) != 0);
  }
  return jt_bool(mpz_tstbit(jt_big_(n)->z, (mp_bitcnt_t)i));
}

/* For negative integers, logcount and integer-length look at lognot. */
JT_FN(f_logcount) {
  jt_V x = check_integer(S, argv[0]);
  if (jt_isfix(x)) {
    intptr_t v = jt_fixval(x);
    return jt_mkfix(__builtin_popcountll((unsigned long long)(v < 0 ? ~v : v)));
  }
  mpz_srcptr z = jt_big_(x)->z;
  if (mpz_sgn(z) > 0) return make_unsigned(S, mpz_popcount(z));
  mpz_t t;
  mpz_init(t);
  mpz_com(t, z);
  uint64_t c = mpz_popcount(t);
  mpz_clear(t);
  return make_unsigned(S, c);
}

JT_FN(f_integer_length) {
  jt_V x = check_integer(S, argv[0]);
  if (jt_isfix(x)) {
    intptr_t v = jt_fixval(x);
    uint64_t m = (uint64_t)(v < 0 ? ~v : v);
    return jt_mkfix(m ? 64 - __builtin_clzll(m) : 0);
  }
  mpz_srcptr z = jt_big_(x)->z;
  if (mpz_sgn(z) > 0) return make_unsigned(S, mpz_sizeinbase(z, 2));
  mpz_t t;
  mpz_init(t);
  mpz_com(t, z);
  uint64_t n = mpz_sgn(t) ? mpz_sizeinbase(t, 2) : 0;
  mpz_clear(t);
  return make_unsigned(S, n);
}

/* ----------------------------------------------------- float inspection */

JT_FN(f_decode_float) {
  double d = jt_floatval(check_float(S, argv[0]));
  if (!isfinite(d)) invalid(S, "DECODE-FLOAT", argv[0], JT_NOVALUE);
  int e = 0;
  double m = d == 0 ? 0.0 : frexp(fabs(d), &e);
  jt_V vals[3];
  vals[0] = float_like(S, m, argv[0]);
  JT_ROOT(S, vals[0]);
  vals[1] = jt_mkfix(e);
  vals[2] = float_like(S, signbit(d) ? -1.0 : 1.0, argv[0]);
  JT_UNROOT(S, 1);
  return jt_values(S, 3, vals);
}

JT_FN(f_integer_decode_float) {
  double d = jt_floatval(check_float(S, argv[0]));
  if (!isfinite(d)) invalid(S, "INTEGER-DECODE-FLOAT", argv[0], JT_NOVALUE);
  int e = 0;
  int64_t m = 0;
  int digits = jt_issingle(argv[0]) ? 24 : 53;
  if (d != 0) {
    double f = frexp(fabs(d), &e);
    m = (int64_t)ldexp(f, digits);
    e -= digits;
  }
  jt_V vals[3] = {jt_mkfix(m), jt_mkfix(e), jt_mkfix(signbit(d) ? -1 : 1)};
  return jt_values(S, 3, vals);
}

JT_FN(f_scale_float) {
  double d = jt_floatval(check_float(S, argv[0]));
  intptr_t k;
  if (jt_isbig(check_integer(S, argv[1])))
    k = mpz_sgn(jt_big_(argv[1])->z) < 0 ? -100000 : 100000;
  else
    k = jt_fixval(argv[1]);
  if (k > 100000) k = 100000;
  if (k < -100000) k = -100000;
  return float_result(S, ldexp(d, (int)k), "SCALE-FLOAT", argv[0], argv[1]);
}

JT_FN(f_float_sign) {
  double d = jt_floatval(check_float(S, argv[0]));
  double m = argc > 1 ? fabs(jt_floatval(check_float(S, argv[1]))) : 1.0;
  return jt_make_float_as(S, signbit(d) ? -m : m,
                          single_of(argv[0], argc > 1 ? argv[1] : JT_NOVALUE));
}

JT_FN(f_float_digits) {
  return jt_mkfix(jt_issingle(check_float(S, argv[0])) ? 24 : 53);
}

JT_FN(f_float_precision) {
  double d = fabs(jt_floatval(check_float(S, argv[0])));
  bool single = jt_issingle(argv[0]);
  int digits = single ? 24 : 53, emin = single ? -125 : -1021;
  if (d == 0) return jt_mkfix(0);
  if (d >= ldexp(1.0, emin - 1)) return jt_mkfix(digits);
  int e;
  frexp(d, &e);
  return jt_mkfix(digits - (emin - e));   /* subnormal: fewer significant bits */
}

JT_FN(f_float_radix) {
  check_float(S, argv[0]);
  return jt_mkfix(2);
}

/* ---------------------------------------------------------- parse-integer */

static bool is_blank(uint32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
         c == 0x0b;
}

/* parse-integer's parse-error, worded as SBCL words it: programs print
** these reports.  `blank`: the substring holds only whitespace. */
JT_NORETURN static void parse_integer_fail(jt_State *S, jt_V str, bool blank) {
  jt_V *base = S->sp;
  jt_V args[4];
  args[0] = JT_SYM(S, K_FORMAT_CONTROL);
  args[1] = jt_string_from_cstr(S, blank ? "no non-whitespace characters in string ~S."
                                         : "junk in string ~S");
  JT_PUSH(S, args[1]);
  args[2] = JT_SYM(S, K_FORMAT_ARGUMENTS);
  args[3] = jt_list(S, 1, str);
  JT_PUSH(S, args[3]);
  jt_V cond = jt_make_condition(S, JT_SYM(S, PARSE_ERROR), 4, args);
  S->sp = base;
  jt_signal_error(S, cond);
}

JT_FN(f_parse_integer) {
  jt_V str = jt_check_string(S, argv[0]);
  static const int keys[] = {JT_S_K_START, JT_S_K_END, JT_S_K_RADIX,
                             JT_S_K_JUNK_ALLOWED};
  jt_V opt[4];
  jt_parse_keys(S, argc, argv, 1, keys, 4, opt);
  size_t len = jt_str_(str)->len;
  size_t start = opt[0] == JT_NOVALUE ? 0 : jt_check_index(S, opt[0]);
  size_t end = opt[1] == JT_NOVALUE || opt[1] == JT_NIL ? len
                                                        : jt_check_index(S, opt[1]);
  if (end > len)
    jt_type_error(S, opt[1], jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0),
                                     jt_mkfix((intptr_t)len)));
  if (start > end)
    jt_type_error(S, opt[0], jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(0),
                                     jt_mkfix((intptr_t)end)));
  int radix = 10;
  if (opt[2] != JT_NOVALUE) {
    if (!jt_isfix(opt[2]) || jt_fixval(opt[2]) < 2 || jt_fixval(opt[2]) > 36)
      jt_type_error(S, opt[2], jt_list(S, 3, JT_SYM(S, INTEGER), jt_mkfix(2),
                                       jt_mkfix(36)));
    radix = (int)jt_fixval(opt[2]);
  }
  bool junk_ok = opt[3] != JT_NOVALUE && opt[3] != JT_NIL;
  const uint32_t *cs = jt_str_(str)->chars;
  size_t i = start;
  while (i < end && is_blank(cs[i])) i++;
  bool blank = i == end;
  bool neg = false;
  if (i < end && (cs[i] == '+' || cs[i] == '-')) neg = cs[i++] == '-';
  size_t first = i;
  while (i < end && cs[i] < 128 && digit_value((int)cs[i]) < radix) i++;
  size_t ndigits = i - first;
  if (!junk_ok) {
    size_t k = i;
    while (k < end && is_blank(cs[k])) k++;
    if (ndigits == 0 || k < end) parse_integer_fail(S, str, blank);
    i = end;
  }
  if (ndigits == 0) return jt_values2(S, JT_NIL, jt_mkfix((intptr_t)i));
  jt_V n = parse_digits(S, NULL, cs + first, ndigits, radix, neg);
  JT_ROOT(S, n);
  jt_V r = jt_values2(S, n, jt_mkfix((intptr_t)i));
  JT_UNROOT(S, 1);
  return r;
}

/* ------------------------------------------------------------- random */

JT_FN(f_random) {
  jt_V lim = argv[0];
  if (jt_isfix(lim) && jt_fixval(lim) > 0)
    return jt_mkfix((intptr_t)rng_below(state_words(S, argc, argv), (uint64_t)jt_fixval(lim)));
  if (jt_isfloat(lim) && jt_floatval(lim) > 0) {
    uint64_t *w = state_words(S, argc, argv);
    double l = jt_floatval(lim), r;
    bool single = jt_issingle(lim);
    do {  /* u * l can round up to l itself */
      r = (double)(rng_next(w) >> 11) * 0x1p-53 * l;
      if (single) r = (double)(float)r;
    } while (r >= l);
    return jt_make_float_as(S, r, single);
  }
  if (jt_isbig(lim) && mpz_sgn(jt_big_(lim)->z) > 0) {
    mpz_srcptr n = jt_big_(lim)->z;   /* argv[0]: rooted */
    size_t bits = mpz_sizeinbase(n, 2);
    size_t nl = (bits + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS;
    unsigned topbits = (unsigned)(bits - (nl - 1) * GMP_NUMB_BITS);
    jt_Bignum *r = new_big(S);
    uint64_t *w = state_words(S, argc, argv);   /* objects never move */
    do {   /* draw `bits` random bits until below n: under two tries on average */
      mp_limb_t *lp = mpz_limbs_write(r->z, (mp_size_t)nl);
      for (size_t i = 0; i < nl; i++) lp[i] = (mp_limb_t)rng_next(w);
      if (topbits < GMP_NUMB_BITS) lp[nl - 1] &= ((mp_limb_t)1 << topbits) - 1;
      mpz_limbs_finish(r->z, (mp_size_t)nl);
    } while (mpz_cmp(r->z, n) >= 0);
    return big_norm(S, r);
  }
  /* (or (integer 1) (float (0.0))) */
  jt_V zero = jt_make_float_as(S, 0.0, true);
  JT_ROOT(S, zero);
  jt_V ftype = jt_list(S, 2, JT_SYM(S, FLOAT), jt_list(S, 1, zero));
  JT_ROOT(S, ftype);
  jt_V itype = jt_list(S, 2, JT_SYM(S, INTEGER), jt_mkfix(1));
  jt_type_error(S, lim, jt_list(S, 3, JT_SYM(S, OR), itype, ftype));
}

/* (make-random-state &optional state): a copy of STATE (NIL: of
** *random-state*); T: a new state seeded from draws of the current one. */
JT_FN(f_make_random_state) {
  jt_V st = argc > 0 ? argv[0] : JT_NIL;
  uint64_t words[4];
  if (st == JT_T) {
    uint64_t *cur = state_words(S, 0, argv);
    rng_seed(words, rng_next(cur) ^ rotl64(rng_next(cur), 32));
    return jt_make_random_state(S, words);
  }
  if (st == JT_NIL) st = jt_symbol_value(S, JT_SYM(S, RANDOM_STATE));
  if (!jt_is(st, JT_TRANDOM))
    jt_type_error(S, st, jt_list(S, 3, JT_SYM(S, OR), jt_intern(S, "RANDOM-STATE"), JT_SYM(S, BOOLEAN)));
  memcpy(words, ((jt_Random *)st)->s, sizeof words);
  return jt_make_random_state(S, words);
}

JT_FN(f_random_state_p) { return jt_bool(jt_is(argv[0], JT_TRANDOM)); }

/* ----------------------------------------------------------- registration */

static const jt_Reg num_fns[] = {
  {"+", f_add, 0, -1, "(+ &rest numbers) Return the sum of NUMBERS (0 if none)."},
  {"-", f_sub, 1, -1, "(- number &rest more) Subtract MORE from NUMBER, or negate a lone NUMBER."},
  {"*", f_mul, 0, -1, "(* &rest numbers) Return the product of NUMBERS (1 if none)."},
  {"/", f_div, 1, -1, "(/ number &rest more) Divide NUMBER by each of MORE, or return the reciprocal of a lone NUMBER."},
  {"=", f_numeq, 1, -1, "(= number &rest more) True if all the numbers are numerically equal."},
  {"/=", f_numne, 1, -1, "(/= number &rest more) True if no two of the numbers are numerically equal."},
  {"<", f_lt, 1, -1, "(< real &rest more) True if the reals are strictly increasing."},
  {">", f_gt, 1, -1, "(> real &rest more) True if the reals are strictly decreasing."},
  {"<=", f_le, 1, -1, "(<= real &rest more) True if the reals never decrease."},
  {">=", f_ge, 1, -1, "(>= real &rest more) True if the reals never increase."},
  {"ZEROP", f_zerop, 1, 1, "(zerop number) True if NUMBER is zero."},
  {"PLUSP", f_plusp, 1, 1, "(plusp real) True if REAL is greater than zero."},
  {"MINUSP", f_minusp, 1, 1, "(minusp real) True if REAL is less than zero."},
  {"EVENP", f_evenp, 1, 1, "(evenp integer) True if INTEGER is even."},
  {"ODDP", f_oddp, 1, 1, "(oddp integer) True if INTEGER is odd."},
  {"1+", f_oneplus, 1, 1, "(1+ number) Return NUMBER plus one."},
  {"1-", f_oneminus, 1, 1, "(1- number) Return NUMBER minus one."},
  {"ABS", f_abs, 1, 1, "(abs real) Return the absolute value of REAL."},
  {"SIGNUM", f_signum, 1, 1, "(signum real) Return -1, 0 or 1 (as a float for a float) by the sign of REAL."},
  {"MAX", f_max, 1, -1, "(max real &rest more) Return the greatest argument (the argument itself, no contagion)."},
  {"MIN", f_min, 1, -1, "(min real &rest more) Return the least argument (the argument itself, no contagion)."},
  {"FLOOR", f_floor, 1, 2, "(floor number &optional (divisor 1)) Quotient rounded toward negative infinity, and remainder."},
  {"CEILING", f_ceiling, 1, 2, "(ceiling number &optional (divisor 1)) Quotient rounded toward positive infinity, and remainder."},
  {"TRUNCATE", f_truncate, 1, 2, "(truncate number &optional (divisor 1)) Quotient rounded toward zero, and remainder."},
  {"ROUND", f_round, 1, 2, "(round number &optional (divisor 1)) Quotient rounded to nearest (ties to even), and remainder."},
  {"FFLOOR", f_ffloor, 1, 2, "(ffloor number &optional (divisor 1)) Like FLOOR, with the quotient as a float."},
  {"FCEILING", f_fceiling, 1, 2, "(fceiling number &optional (divisor 1)) Like CEILING, with the quotient as a float."},
  {"FTRUNCATE", f_ftruncate, 1, 2, "(ftruncate number &optional (divisor 1)) Like TRUNCATE, with the quotient as a float."},
  {"FROUND", f_fround, 1, 2, "(fround number &optional (divisor 1)) Like ROUND, with the quotient as a float."},
  {"MOD", f_mod, 2, 2, "(mod number divisor) Remainder of FLOOR: has the sign of DIVISOR."},
  {"REM", f_rem, 2, 2, "(rem number divisor) Remainder of TRUNCATE: has the sign of NUMBER."},
  {"GCD", f_gcd, 0, -1, "(gcd &rest integers) Greatest common divisor (0 if none)."},
  {"LCM", f_lcm, 0, -1, "(lcm &rest integers) Least common multiple (1 if none)."},
  {"EXPT", f_expt, 2, 2, "(expt base power) BASE raised to POWER: exact for a rational base and an integer power."},
  {"SQRT", f_sqrt, 1, 1, "(sqrt real) Square root as a float; REAL must not be negative."},
  {"ISQRT", f_isqrt, 1, 1, "(isqrt natural) Greatest integer whose square is at most NATURAL."},
  {"EXP", f_exp, 1, 1, "(exp real) e raised to REAL."},
  {"LOG", f_log, 1, 2, "(log real &optional base) Logarithm of REAL, natural or in BASE."},
  {"SIN", f_sin, 1, 1, "(sin radians) Sine."},
  {"COS", f_cos, 1, 1, "(cos radians) Cosine."},
  {"TAN", f_tan, 1, 1, "(tan radians) Tangent."},
  {"ASIN", f_asin, 1, 1, "(asin real) Arc sine, for REAL in [-1, 1]."},
  {"ACOS", f_acos, 1, 1, "(acos real) Arc cosine, for REAL in [-1, 1]."},
  {"ATAN", f_atan, 1, 2, "(atan y &optional x) Arc tangent of Y, or of Y/X using the signs of both for the quadrant."},
  {"SINH", f_sinh, 1, 1, "(sinh real) Hyperbolic sine."},
  {"COSH", f_cosh, 1, 1, "(cosh real) Hyperbolic cosine."},
  {"TANH", f_tanh, 1, 1, "(tanh real) Hyperbolic tangent."},
  {"ASINH", f_asinh, 1, 1, "(asinh real) Inverse hyperbolic sine."},
  {"ACOSH", f_acosh, 1, 1, "(acosh real) Inverse hyperbolic cosine, for REAL >= 1."},
  {"ATANH", f_atanh, 1, 1, "(atanh real) Inverse hyperbolic tangent, for REAL in (-1, 1)."},
  {"NUMERATOR", f_numerator, 1, 1, "(numerator rational) Numerator of RATIONAL in lowest terms."},
  {"DENOMINATOR", f_denominator, 1, 1, "(denominator rational) Positive denominator of RATIONAL in lowest terms."},
  {"FLOAT", f_float, 1, 2, "(float real &optional prototype) REAL converted to a (double) float."},
  {"RATIONAL", f_rational, 1, 1, "(rational real) The exact rational equal to REAL."},
  {"RATIONALIZE", f_rationalize, 1, 1, "(rationalize real) The simplest rational that converts to the same float as REAL."},
  {"NUMBERP", f_numberp, 1, 1, "(numberp object) True if OBJECT is a number."},
  {"INTEGERP", f_integerp, 1, 1, "(integerp object) True if OBJECT is an integer."},
  {"RATIONALP", f_rationalp, 1, 1, "(rationalp object) True if OBJECT is an integer or a ratio."},
  {"REALP", f_realp, 1, 1, "(realp object) True if OBJECT is a real number."},
  {"FLOATP", f_floatp, 1, 1, "(floatp object) True if OBJECT is a float."},
  {"LOGAND", f_logand, 0, -1, "(logand &rest integers) Bitwise and (-1 if none)."},
  {"LOGIOR", f_logior, 0, -1, "(logior &rest integers) Bitwise inclusive or (0 if none)."},
  {"LOGXOR", f_logxor, 0, -1, "(logxor &rest integers) Bitwise exclusive or (0 if none)."},
  {"LOGEQV", f_logeqv, 0, -1, "(logeqv &rest integers) Bitwise equivalence (-1 if none)."},
  {"LOGNAND", f_lognand, 2, 2, "(lognand a b) Bitwise not-and."},
  {"LOGNOR", f_lognor, 2, 2, "(lognor a b) Bitwise not-or."},
  {"LOGANDC1", f_logandc1, 2, 2, "(logandc1 a b) Bitwise and of (lognot A) and B."},
  {"LOGANDC2", f_logandc2, 2, 2, "(logandc2 a b) Bitwise and of A and (lognot B)."},
  {"LOGORC1", f_logorc1, 2, 2, "(logorc1 a b) Bitwise or of (lognot A) and B."},
  {"LOGORC2", f_logorc2, 2, 2, "(logorc2 a b) Bitwise or of A and (lognot B)."},
  {"LOGNOT", f_lognot, 1, 1, "(lognot integer) Bitwise complement: -1 - INTEGER."},
  {"LOGTEST", f_logtest, 2, 2, "(logtest a b) True if A and B have a one bit in common."},
  {"ASH", f_ash, 2, 2, "(ash integer count) Shift INTEGER left by COUNT bits (right, flooring, if negative)."},
  {"LOGBITP", f_logbitp, 2, 2, "(logbitp index integer) True if bit INDEX of INTEGER (two's complement) is one."},
  {"LOGCOUNT", f_logcount, 1, 1, "(logcount integer) Number of one bits (of zero bits if negative)."},
  {"INTEGER-LENGTH", f_integer_length, 1, 1, "(integer-length integer) Bits needed for INTEGER in two's complement, sign excluded."},
  {"DECODE-FLOAT", f_decode_float, 1, 1, "(decode-float float) Significand in [0.5, 1), exponent and sign as three values."},
  {"INTEGER-DECODE-FLOAT", f_integer_decode_float, 1, 1, "(integer-decode-float float) Integer significand, exponent and sign as three values."},
  {"SCALE-FLOAT", f_scale_float, 2, 2, "(scale-float float integer) FLOAT times 2 to the INTEGER."},
  {"FLOAT-SIGN", f_float_sign, 1, 2, "(float-sign float &optional magnitude) MAGNITUDE (default 1.0) with the sign of FLOAT."},
  {"FLOAT-DIGITS", f_float_digits, 1, 1, "(float-digits float) Digits of the representation: 53."},
  {"FLOAT-PRECISION", f_float_precision, 1, 1, "(float-precision float) Significant digits of FLOAT (fewer when subnormal)."},
  {"FLOAT-RADIX", f_float_radix, 1, 1, "(float-radix float) The radix of floats: 2."},
  {"PARSE-INTEGER", f_parse_integer, 1, -1, "(parse-integer string &key start end radix junk-allowed) The integer written in STRING, and the index where parsing stopped."},
  {"MAKE-RANDOM-STATE", f_make_random_state, 0, 1, "(make-random-state &optional state) A copy of STATE (NIL: the current one), or with T a new state seeded from the current one."},
  {"RANDOM-STATE-P", f_random_state_p, 1, 1, "(random-state-p object) True if OBJECT is a random state."},
  {"RANDOM", f_random, 1, 2, "(random limit &optional state) A uniform random number in [0, LIMIT): integer for an integer LIMIT, float for a float."},
  {NULL, NULL, 0, 0, NULL}
};

/* The running primitive is one of these, called by the evaluator or
** through a function designator: its C code holds nothing but rooted
** numbers, so an interrupt's pause (any Lisp) may run inside it
** (big_run).  Not those taking other objects, nor a caller that reached
** the arithmetic from C code of its own (FORMAT, the printer). */
static bool number_primitive(jt_State *S) {
  if (!S->ci || !jt_is(S->ci->fn, JT_TPRIM)) return false;
  jt_CFn f = jt_prim_(S->ci->fn)->fn;
  if (f == f_parse_integer || f == f_random || f == f_make_random_state) return false;
  for (const jt_Reg *r = num_fns; r->name; r++)
    if (r->fn == f) return true;
  return false;
}

static void defconstant(jt_State *S, const char *name, jt_V value) {
  JT_ROOT(S, value);
  jt_defglobal(S, name, value);
  jt_symobj(S, jt_intern(S, name))->h.flags |= JT_SYM_CONSTANT | JT_SYM_LOCKED;
  JT_UNROOT(S, 1);
}

void jt_open_num(jt_State *S) {
  uint64_t words[4];
  rng_seed(words, 0x6a09e667f3bcc909ull);   /* fixed: runs are reproducible */
  S->random_state = jt_make_random_state(S, words);
  jt_o(S->random_state)->flags |= JT_RANDOM_SCRATCH;
  jt_defglobal(S, "*RANDOM-STATE*", S->random_state);
  jt_register(S, num_fns);
  defconstant(S, "PI", jt_make_float(S, M_PI));
  defconstant(S, "MOST-POSITIVE-FIXNUM", jt_mkfix(JT_FIXMAX));
  defconstant(S, "MOST-NEGATIVE-FIXNUM", jt_mkfix(JT_FIXMIN));
  /* short-float is single-float and long-float double-float, as in SBCL */
  static const struct { const char *kind; bool single; } kinds[] = {
    {"SHORT", true}, {"SINGLE", true}, {"DOUBLE", false}, {"LONG", false}};
  static const struct { const char *fmt; double single, dbl; } limits[] = {
    {"MOST-POSITIVE-%s-FLOAT", 0x1.fffffep+127, 0x1.fffffffffffffp+1023},
    {"MOST-NEGATIVE-%s-FLOAT", -0x1.fffffep+127, -0x1.fffffffffffffp+1023},
    {"LEAST-POSITIVE-%s-FLOAT", 0x1p-149, 0x1p-1074},
    {"LEAST-NEGATIVE-%s-FLOAT", -0x1p-149, -0x1p-1074},
    {"LEAST-POSITIVE-NORMALIZED-%s-FLOAT", 0x1p-126, 0x1p-1022},
    {"LEAST-NEGATIVE-NORMALIZED-%s-FLOAT", -0x1p-126, -0x1p-1022},
    /* the smallest e with (/= (+ 1 e) 1) under round-to-even: 2^-p (1 + 2^(1-p)) */
    {"%s-FLOAT-EPSILON", 0x1.000002p-24, 0x1.0000000000001p-53},
    {"%s-FLOAT-NEGATIVE-EPSILON", 0x1.000002p-25, 0x1.0000000000001p-54},
  };
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
      char name[64];
      snprintf(name, sizeof name, limits[i].fmt, kinds[k].kind);
      bool single = kinds[k].single;
      defconstant(S, name, jt_make_float_as(S, single ? limits[i].single : limits[i].dbl, single));
    }
}
