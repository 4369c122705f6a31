/*
** complex.c — complex numbers.
**
** A complex is two reals of one kind (jt_Complex): two rationals, or two
** floats.  Canonical form, as Common Lisp requires: a complex with rational
** parts whose imaginary part is zero is that rational, so it never exists
** as an object; a complex with float parts stays complex even when its
** imaginary part is 0.0.  Mixing a float into a complex makes both parts
** floats.
**
** Arithmetic works on the parts with num.c's exact operations, so complex
** rationals stay exact ((* #c(0 1) #c(0 1)) is -1).  The transcendental
** functions convert to C99 double complex and back; their branch cuts are
** those of the C library, which follow the ones Common Lisp specifies.
** num.c calls in here for a complex operand, or for a real argument whose
** result is complex ((sqrt -4), (log -1), (asin 2)).
*/
#include <complex.h>
#include <math.h>
#include <string.h>
#include "jt_lib.h"

/* C11's CMPLX keeps a zero's sign and an infinity as given; glibc defines
** it only for the compilers it knows (not every clang). */
#ifndef CMPLX
static inline double complex cmplx_of(double re, double im) {
  double complex z;
  __real__ z = re;
  __imag__ z = im;
  return z;
}
#define CMPLX(re, im) cmplx_of((re), (im))
#endif

/* ------------------------------------------------------------ construction */

static bool is_zero_rational(jt_V v) { return v == jt_mkfix(0); }

/* Whether float results from number z are single-floats: unless z is (or
** has parts that are) double-floats. */
static bool single_num(jt_V z)
{
  jt_V r = jt_iscomplex(z) ? jt_complex_(z)->re : z;
  return !jt_isfloat(r) || jt_issingle(r);
}

jt_V jt_make_complex(jt_State *S, jt_V re, jt_V im)
{
  if (!jt_isreal(re)) jt_type_error(S, re, JT_SYM(S, REAL));
  if (!jt_isreal(im)) jt_type_error(S, im, JT_SYM(S, REAL));
  if (jt_isrational(re) && jt_isrational(im) && is_zero_rational(im)) return re;
  JT_PUSH(S, re);
  JT_PUSH(S, im);
  if (jt_isfloat(re) || jt_isfloat(im)) {
    /* float contagion: both parts become floats of one format, double if
    ** either is a double-float */
    bool single = single_num(re) && single_num(im);
    S->sp[-2] = jt_num_to_float(S, S->sp[-2], single);
    S->sp[-1] = jt_num_to_float(S, S->sp[-1], single);
  }
  jt_Complex *c = (jt_Complex *)jt_alloc(S, JT_TCOMPLEX, sizeof(jt_Complex));
  c->re = S->sp[-2];
  c->im = S->sp[-1];
  JT_POP(S, 2);
  return (jt_V)c;
}

jt_V jt_realpart(jt_V z) { return jt_iscomplex(z) ? jt_complex_(z)->re : z; }

/* The imaginary part: a real's is a zero of its kind (0, or 0.0). */
jt_V jt_imagpart(jt_State *S, jt_V z)
{
  if (jt_iscomplex(z)) return jt_complex_(z)->im;
  return jt_isfloat(z) ? jt_make_float_as(S, 0.0 * jt_floatval(z), jt_issingle(z)) : jt_mkfix(0);
}

static jt_V check_number(jt_State *S, jt_V v)
{
  if (!jt_isnumber(v)) jt_type_error(S, v, JT_SYM(S, NUMBER));
  return v;
}

/* ------------------------------------------------------------- arithmetic */

/* The parts of a number as a pair rooted on the value stack: a real has
** imaginary part 0 (exact, so that it does not make the result a float). */
static void push_parts(jt_State *S, jt_V z)
{
  if (jt_iscomplex(z)) {
    JT_PUSH(S, jt_complex_(z)->re);
    JT_PUSH(S, jt_complex_(z)->im);
  } else {
    JT_PUSH(S, check_number(S, z));
    JT_PUSH(S, jt_mkfix(0));
  }
}

jt_V jt_complex_arith(jt_State *S, int op, jt_V a, jt_V b)
{
  jt_V *base = S->sp;
  push_parts(S, a);   /* base[0] a, base[1] b of a + bi */
  push_parts(S, b);   /* base[2] c, base[3] d of c + di */
  JT_PUSH(S, JT_NIL);
  JT_PUSH(S, JT_NIL);
  jt_V *re = &base[4], *im = &base[5];
  switch (op) {
  case JT_OP_ADD:
    *re = jt_num_add(S, base[0], base[2]);
    *im = jt_num_add(S, base[1], base[3]);
    break;
  case JT_OP_SUB:
    *re = jt_num_sub(S, base[0], base[2]);
    *im = jt_num_sub(S, base[1], base[3]);
    break;
  case JT_OP_MUL:  /* (ac - bd) + (ad + bc)i */
    *re = jt_num_mul(S, base[0], base[2]);
    *re = jt_num_sub(S, *re, jt_num_mul(S, base[1], base[3]));
    *im = jt_num_mul(S, base[0], base[3]);
    *im = jt_num_add(S, *im, jt_num_mul(S, base[1], base[2]));
    break;
  default: {       /* ((ac + bd) + (bc - ad)i) / (c^2 + d^2) */
    JT_PUSH(S, jt_num_mul(S, base[2], base[2]));
    S->sp[-1] = jt_num_add(S, S->sp[-1], jt_num_mul(S, base[3], base[3]));
    if (jt_isrational(S->sp[-1]) && S->sp[-1] == jt_mkfix(0))
      jt_arith_error(S, JT_SYM(S, DIVISION_BY_ZERO), jt_intern(S, "/"), jt_list(S, 2, a, b));
    *re = jt_num_mul(S, base[0], base[2]);
    *re = jt_num_add(S, *re, jt_num_mul(S, base[1], base[3]));
    *re = jt_num_div(S, *re, S->sp[-1]);
    *im = jt_num_mul(S, base[1], base[2]);
    *im = jt_num_sub(S, *im, jt_num_mul(S, base[0], base[3]));
    *im = jt_num_div(S, *im, S->sp[-1]);
    break;
  }
  }
  jt_V r = jt_make_complex(S, *re, *im);
  S->sp = base;
  return r;
}

bool jt_complex_equal(jt_State *S, jt_V a, jt_V b)
{
  check_number(S, a);
  check_number(S, b);
  jt_V *base = S->sp;
  push_parts(S, a);
  push_parts(S, b);
  bool eq = jt_num_equal(S, base[0], base[2]) && jt_num_equal(S, base[1], base[3]);
  S->sp = base;
  return eq;
}

bool jt_complex_eql(jt_V a, jt_V b)
{
  return jt_num_eql(jt_complex_(a)->re, jt_complex_(b)->re) &&
         jt_num_eql(jt_complex_(a)->im, jt_complex_(b)->im);
}

jt_V jt_complex_negate(jt_State *S, jt_V z)
{
  JT_PUSH(S, z);   /* each part negated: -0.0 for 0.0 */
  jt_V re = jt_num_negate(S, jt_complex_(z)->re);
  JT_PUSH(S, re);
  jt_V im = jt_num_negate(S, jt_complex_(S->sp[-2])->im);
  jt_V r = jt_make_complex(S, S->sp[-1], im);
  JT_POP(S, 2);
  return r;
}

jt_V jt_conjugate(jt_State *S, jt_V z)
{
  if (!jt_iscomplex(z)) return check_number(S, z);
  JT_PUSH(S, z);
  jt_V im = jt_num_negate(S, jt_complex_(z)->im);   /* -0.0 for 0.0 */
  jt_V r = jt_make_complex(S, jt_complex_(S->sp[-1])->re, im);
  JT_POP(S, 1);
  return r;
}

bool jt_complex_zerop(jt_V z)
{
  /* a complex with rational parts has a nonzero imaginary part */
  jt_V re = jt_complex_(z)->re, im = jt_complex_(z)->im;
  return jt_isfloat(re) && jt_floatval(re) == 0.0 && jt_floatval(im) == 0.0;
}

/* ---------------------------------------------------------- C99 functions */

static double complex to_c(jt_State *S, jt_V z)
{
  if (jt_iscomplex(z))
    return CMPLX(jt_to_double(S, jt_complex_(z)->re), jt_to_double(S, jt_complex_(z)->im));
  return CMPLX(jt_to_double(S, z), 0.0);
}

/* A complex result of op on arg, in arg's float format. */
static jt_V from_c(jt_State *S, double complex w, const char *op, jt_V arg)
{
  bool single = single_num(arg);
  double re = creal(w), im = cimag(w);
  if (single) {
    re = (double)(float)re;
    im = (double)(float)im;
  }
  if (!isfinite(re) || !isfinite(im)) {
    /* a NaN comes only of a NaN argument (a foreign function's): invalid */
    jt_V type = isnan(re) || isnan(im) ? jt_intern(S, "FLOATING-POINT-INVALID-OPERATION")
                                       : JT_SYM(S, FLOATING_POINT_OVERFLOW);
    JT_PUSH(S, arg);
    jt_V sym = jt_intern(S, op);
    JT_PUSH(S, sym);
    jt_arith_error(S, type, sym, jt_list(S, 1, arg));
  }
  jt_V r = jt_make_float_as(S, re, single);
  JT_PUSH(S, r);
  jt_V i = jt_make_float_as(S, im, single);
  r = jt_make_complex(S, S->sp[-1], i);
  JT_POP(S, 1);
  return r;
}

static const char *const fn_names[] = {
  [JT_CX_SQRT] = "SQRT", [JT_CX_EXP] = "EXP", [JT_CX_LOG] = "LOG", [JT_CX_SIN] = "SIN",
  [JT_CX_COS] = "COS", [JT_CX_TAN] = "TAN", [JT_CX_ASIN] = "ASIN", [JT_CX_ACOS] = "ACOS",
  [JT_CX_ATAN] = "ATAN", [JT_CX_SINH] = "SINH", [JT_CX_COSH] = "COSH", [JT_CX_TANH] = "TANH",
  [JT_CX_ASINH] = "ASINH", [JT_CX_ACOSH] = "ACOSH", [JT_CX_ATANH] = "ATANH"};

jt_V jt_complex_fn(jt_State *S, int fn, jt_V x)
{
  check_number(S, x);
  double complex z = to_c(S, x), w;
  /* A real argument on a branch cut of asin or acos (x > 1): Common Lisp
  ** takes the value from below the cut, which C reaches with -0.0. */
  if ((fn == JT_CX_ASIN || fn == JT_CX_ACOS) && !jt_iscomplex(x) && creal(z) > 1)
    z = CMPLX(creal(z), -0.0);
  switch (fn) {
  case JT_CX_SQRT: w = csqrt(z); break;
  case JT_CX_EXP: w = cexp(z); break;
  case JT_CX_LOG:
    if (creal(z) == 0 && cimag(z) == 0)
      jt_arith_error(S, JT_SYM(S, DIVISION_BY_ZERO), jt_intern(S, "LOG"), jt_list(S, 1, x));
    w = clog(z);
    break;
  case JT_CX_SIN: w = csin(z); break;
  case JT_CX_COS: w = ccos(z); break;
  case JT_CX_TAN: w = ctan(z); break;
  case JT_CX_ASIN: w = casin(z); break;
  case JT_CX_ACOS: w = cacos(z); break;
  case JT_CX_ATAN: w = catan(z); break;
  case JT_CX_SINH: w = csinh(z); break;
  case JT_CX_COSH: w = ccosh(z); break;
  case JT_CX_TANH: w = ctanh(z); break;
  case JT_CX_ASINH: w = casinh(z); break;
  case JT_CX_ACOSH: w = cacosh(z); break;
  default: w = catanh(z); break;
  }
  return from_c(S, w, fn_names[fn], x);
}

/* |z| as a float (hypot avoids overflow in the squares). */
jt_V jt_complex_abs(jt_State *S, jt_V z)
{
  double re = jt_to_double(S, jt_complex_(z)->re), im = jt_to_double(S, jt_complex_(z)->im);
  return jt_make_float_as(S, hypot(re, im), single_num(z));
}

/* (expt base power) with a complex involved: exact repeated squaring for an
** integer power of a complex rational, the C library otherwise. */
jt_V jt_complex_expt(jt_State *S, jt_V base, jt_V power)
{
  check_number(S, base);
  check_number(S, power);
  if (jt_isinteger(power) && (jt_iscomplex(base) && jt_isrational(jt_complex_(base)->re))) {
    if (!jt_isfix(power)) jt_error(S, "EXPT: the exponent is too large for an exact result");
    intptr_t e = jt_fixval(power);
    uintptr_t n = e < 0 ? -(uintptr_t)e : (uintptr_t)e;
    jt_V *base0 = S->sp;
    JT_PUSH(S, jt_mkfix(1));   /* result */
    JT_PUSH(S, base);          /* square */
    for (; n; n >>= 1) {
      if (n & 1) base0[0] = jt_num_mul(S, base0[0], base0[1]);
      if (n > 1) base0[1] = jt_num_mul(S, base0[1], base0[1]);
    }
    jt_V r = e < 0 ? jt_num_div(S, jt_mkfix(1), base0[0]) : base0[0];
    S->sp = base0;
    return r;
  }
  double complex b = to_c(S, base), p = to_c(S, power);
  if (creal(b) == 0 && cimag(b) == 0) {
    /* 0^p: 0 of the result's kind when Re(p) > 0, else undefined */
    if (creal(p) <= 0) jt_arith_error(S, JT_SYM(S, DIVISION_BY_ZERO), jt_intern(S, "EXPT"),
                                      jt_list(S, 2, base, power));
    if (jt_isrational(base)) return jt_mkfix(0);
    return from_c(S, 0.0, "EXPT", base);
  }
  return from_c(S, cpow(b, p), "EXPT", base);
}

/* The angle of z in radians, in (-pi, pi]; of a real, 0 or pi. */
jt_V jt_phase(jt_State *S, jt_V z)
{
  check_number(S, z);
  if (jt_iscomplex(z))
    return jt_make_float_as(S, atan2(jt_to_double(S, jt_complex_(z)->im),
                                     jt_to_double(S, jt_complex_(z)->re)), single_num(z));
  double d = jt_to_double(S, z);
  return jt_make_float_as(S, (d < 0 || (d == 0 && signbit(d))) ? M_PI : 0.0, single_num(z));
}

/* ------------------------------------------------------------- built-ins */

/* (complex realpart &optional imagpart) */
JT_FN(f_complex)
{
  jt_V re = argv[0];
  if (!jt_isreal(re)) jt_type_error(S, re, JT_SYM(S, REAL));
  if (argc < 2) return jt_isfloat(re) ? jt_make_complex(S, re, jt_make_float_as(S, 0.0, jt_issingle(re))) : re;
  return jt_make_complex(S, re, argv[1]);
}

JT_FN(f_realpart) { return jt_realpart(check_number(S, argv[0])); }
JT_FN(f_imagpart) { return jt_imagpart(S, check_number(S, argv[0])); }
JT_FN(f_conjugate) { return jt_conjugate(S, argv[0]); }
JT_FN(f_phase) { return jt_phase(S, argv[0]); }
JT_FN(f_complexp) { return jt_bool(jt_iscomplex(argv[0])); }

/* (cis radians) => #c(cos sin) */
JT_FN(f_cis)
{
  if (!jt_isreal(argv[0])) jt_type_error(S, argv[0], JT_SYM(S, REAL));
  double t = jt_to_double(S, argv[0]);
  return from_c(S, CMPLX(cos(t), sin(t)), "CIS", argv[0]);
}

static const jt_Reg complex_fns[] = {
  {"COMPLEX", f_complex, 1, 2,
   "(complex realpart &optional imagpart) The complex number with these parts (a rational "
   "when IMAGPART is an exact zero)."},
  {"REALPART", f_realpart, 1, 1, "(realpart number) The real part of NUMBER."},
  {"IMAGPART", f_imagpart, 1, 1, "(imagpart number) The imaginary part of NUMBER."},
  {"CONJUGATE", f_conjugate, 1, 1, "(conjugate number) The complex conjugate of NUMBER."},
  {"PHASE", f_phase, 1, 1, "(phase number) The angle of NUMBER in radians."},
  {"CIS", f_cis, 1, 1, "(cis radians) The complex number of modulus 1 at angle RADIANS."},
  {"COMPLEXP", f_complexp, 1, 1, "(complexp object) True if OBJECT is a complex number."},
  {NULL, NULL, 0, 0, NULL}
};

void jt_open_complex(jt_State *S) { jt_register(S, complex_fns); }
