"""CUDA C ``__device__`` helpers that operator CUDA forms call (``ls_<name>(...)``).

Prepend :data:`CUDA_COMPLEX_INCLUDE` (CuPy's ``complex<T>``) and :data:`CUDA_PRELUDE` to a
generated kernel. Helpers are overloaded on ``float``, ``double``, integer types and
``complex<T>``; semantics follow NumPy (NaN-propagating max/min, floor division and
remainder by zero, shifts past the bit width), matching
:mod:`lazysparse.kernels.backends.numba.ops`.
"""

from __future__ import annotations

CUDA_COMPLEX_INCLUDE = "#include <cupy/complex.cuh>\n"

_FLOAT_UNARY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "log",
                "log10", "sin", "sinh", "sqrt", "tan", "tanh")


def _float_unary() -> str:
    out = []
    for f in _FLOAT_UNARY:
        out.append(f"template<typename T> __device__ __forceinline__ T ls_{f}(T x) "
                   f"{{ return {f}(x); }}")
    return "\n".join(out)


CUDA_PRELUDE = r"""
#define LS_D __device__ __forceinline__
""" + _float_unary() + r"""
template<typename T> LS_D T ls_log2(T x) { return log2(x); }
template<typename T> LS_D complex<T> ls_log2(complex<T> x) {
  complex<T> w = log(x);
  return complex<T>(w.real() / T(0.6931471805599453), w.imag() / T(0.6931471805599453));
}
template<typename T> LS_D T ls_expm1(T x) { return expm1(x); }
template<typename T> LS_D complex<T> ls_expm1(complex<T> x) {
  T a = sin(x.imag() / T(2));
  return complex<T>(expm1(x.real()) * cos(x.imag()) - T(2) * a * a,
                    exp(x.real()) * sin(x.imag()));
}
template<typename T> LS_D T ls_log1p(T x) { return log1p(x); }
template<typename T> LS_D complex<T> ls_log1p(complex<T> x) {
  T r = x.real() + T(1);
  return complex<T>(log(hypot(r, x.imag())), atan2(x.imag(), r));
}
template<typename T> LS_D T ls_reciprocal(T x) { return T(1) / x; }
template<typename T> LS_D complex<T> ls_reciprocal(complex<T> z) {
  T x = z.real(), y = z.imag();
  if (fabs(y) <= fabs(x)) { T r = y / x, d = x + y * r; return complex<T>(T(1) / d, -r / d); }
  T r = x / y, d = x * r + y;
  return complex<T>(r / d, T(-1) / d);
}

template<typename T> LS_D T ls_abs(T x) { return x < T(0) ? T(-x) : x; }
LS_D float ls_abs(float x) { return fabsf(x); }
LS_D double ls_abs(double x) { return fabs(x); }
template<typename T> LS_D T ls_abs(complex<T> x) { return abs(x); }
template<typename T> LS_D T ls_negative(T x) { return -x; }
template<typename T> LS_D T ls_positive(T x) { return x; }
template<typename T> LS_D T ls_square(T x) { return x * x; }

template<typename T> LS_D T ls_sign(T x) { return T((T(0) < x) - (x < T(0))); }
LS_D float ls_sign(float x) { return x > 0 ? 1.0f : (x < 0 ? -1.0f : x * 0.0f); }
LS_D double ls_sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : x * 0.0); }
template<typename T> LS_D complex<T> ls_sign(complex<T> z) {
  T m = abs(z);
  if (m == T(0)) return complex<T>(0);
  if (m != m) return complex<T>(m, m);
  return z / m;
}

template<typename T> LS_D T ls_ceil(T x) { return x; }
LS_D float ls_ceil(float x) { return ceilf(x); }
LS_D double ls_ceil(double x) { return ceil(x); }
template<typename T> LS_D T ls_floor(T x) { return x; }
LS_D float ls_floor(float x) { return floorf(x); }
LS_D double ls_floor(double x) { return floor(x); }
template<typename T> LS_D T ls_trunc(T x) { return x; }
LS_D float ls_trunc(float x) { return truncf(x); }
LS_D double ls_trunc(double x) { return trunc(x); }
template<typename T> LS_D T ls_round(T x) { return x; }
LS_D float ls_round(float x) { return rintf(x); }
LS_D double ls_round(double x) { return rint(x); }
template<typename T> LS_D complex<T> ls_round(complex<T> z) {
  return complex<T>(ls_round(z.real()), ls_round(z.imag()));
}

template<typename T> LS_D T ls_conj(T x) { return x; }
template<typename T> LS_D complex<T> ls_conj(complex<T> z) { return conj(z); }
template<typename T> LS_D T ls_real(T x) { return x; }
template<typename T> LS_D T ls_real(complex<T> z) { return z.real(); }
template<typename T> LS_D T ls_imag(T x) { return T(0); }
template<typename T> LS_D T ls_imag(complex<T> z) { return z.imag(); }
template<typename T> LS_D T ls_bitwise_invert(T x) { return ~x; }
LS_D bool ls_bitwise_invert(bool x) { return !x; }

template<typename T> LS_D bool ls_signbit(T x) { return x < T(0); }
LS_D bool ls_signbit(float x) { return signbit(x); }
LS_D bool ls_signbit(double x) { return signbit(x); }
template<typename T> LS_D bool ls_isnan(T x) { return false; }
LS_D bool ls_isnan(float x) { return isnan(x); }
LS_D bool ls_isnan(double x) { return isnan(x); }
template<typename T> LS_D bool ls_isnan(complex<T> z) {
  return ls_isnan(z.real()) || ls_isnan(z.imag());
}
template<typename T> LS_D bool ls_isinf(T x) { return false; }
LS_D bool ls_isinf(float x) { return isinf(x); }
LS_D bool ls_isinf(double x) { return isinf(x); }
template<typename T> LS_D bool ls_isinf(complex<T> z) {
  return ls_isinf(z.real()) || ls_isinf(z.imag());
}
template<typename T> LS_D bool ls_isfinite(T x) { return true; }
LS_D bool ls_isfinite(float x) { return isfinite(x); }
LS_D bool ls_isfinite(double x) { return isfinite(x); }
template<typename T> LS_D bool ls_isfinite(complex<T> z) {
  return ls_isfinite(z.real()) && ls_isfinite(z.imag());
}
template<typename T> LS_D bool ls_nonzero(T x) { return x != T(0); }
template<typename T> LS_D bool ls_nonzero(complex<T> z) {
  return z.real() != T(0) || z.imag() != T(0);
}

template<typename T> LS_D bool ls_isequal(T a, T b) { return a == b; }
LS_D bool ls_isequal(float a, float b) { return a == b || (a != a && b != b); }
LS_D bool ls_isequal(double a, double b) { return a == b || (a != a && b != b); }
template<typename T> LS_D bool ls_isequal(complex<T> a, complex<T> b) {
  return ls_isequal(a.real(), b.real()) && ls_isequal(a.imag(), b.imag());
}

template<typename T> LS_D T ls_maximum(T a, T b) { return a >= b ? a : b; }
LS_D float ls_maximum(float a, float b) { return a != a ? a : (b != b ? b : (a >= b ? a : b)); }
LS_D double ls_maximum(double a, double b) { return a != a ? a : (b != b ? b : (a >= b ? a : b)); }
template<typename T> LS_D T ls_minimum(T a, T b) { return a <= b ? a : b; }
LS_D float ls_minimum(float a, float b) { return a != a ? a : (b != b ? b : (a <= b ? a : b)); }
LS_D double ls_minimum(double a, double b) { return a != a ? a : (b != b ? b : (a <= b ? a : b)); }
template<typename T> LS_D T ls_clip(T x, T lo, T hi) { return ls_minimum(ls_maximum(x, lo), hi); }

template<typename T> LS_D T ls_floor_divide(T a, T b) {
  if (b == T(0)) return T(0);
  if (T(-1) < T(0) && b == T(-1)) return T(T(0) - a);
  T q = a / b;
  if ((a % b != T(0)) && ((a < T(0)) != (b < T(0)))) q -= T(1);
  return q;
}
template<typename T> LS_D T ls_remainder(T a, T b) {
  if (b == T(0)) return T(0);
  if (T(-1) < T(0) && b == T(-1)) return T(0);
  T r = a % b;
  if (r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
  return r;
}
template<typename F> LS_D F ls_floor_divide_f(F a, F b) {
  if (b == F(0)) return a / b;
  F mod = fmod(a, b);
  F div = (a - mod) / b;
  if (mod != F(0) && ((b < F(0)) != (mod < F(0)))) div -= F(1);
  if (div != F(0)) { F fl = floor(div); if (div - fl > F(0.5)) fl += F(1); return fl; }
  return copysign(F(0), a / b);
}
template<typename F> LS_D F ls_remainder_f(F a, F b) {
  F mod = fmod(a, b);
  if (b == F(0)) return mod;
  if (mod != F(0)) { if ((b < F(0)) != (mod < F(0))) mod += b; }
  else mod = copysign(F(0), b);
  return mod;
}
LS_D float ls_floor_divide(float a, float b) { return ls_floor_divide_f(a, b); }
LS_D double ls_floor_divide(double a, double b) { return ls_floor_divide_f(a, b); }
LS_D float ls_remainder(float a, float b) { return ls_remainder_f(a, b); }
LS_D double ls_remainder(double a, double b) { return ls_remainder_f(a, b); }

template<typename T> LS_D T ls_pow(T a, T b) {
  T r = T(1); T base = a;
  if (b < T(0)) return (a == T(1)) ? T(1) : (a == T(-1) ? ((b % T(2)) ? T(-1) : T(1)) : T(0));
  while (b > T(0)) { if (b & T(1)) r *= base; base *= base; b >>= 1; }
  return r;
}
LS_D float ls_pow(float a, float b) { return powf(a, b); }
LS_D double ls_pow(double a, double b) { return pow(a, b); }
template<typename T> LS_D complex<T> ls_pow(complex<T> a, complex<T> b) { return pow(a, b); }

template<typename T> LS_D T ls_atan2(T a, T b) { return atan2(a, b); }
template<typename T> LS_D T ls_copysign(T a, T b) { return copysign(a, b); }
template<typename T> LS_D T ls_hypot(T a, T b) { return hypot(a, b); }
template<typename T> LS_D T ls_nextafter(T a, T b) { return nextafter(a, b); }
template<typename T> LS_D T ls_logaddexp(T x, T y) {
  if (x == y) return x + T(0.6931471805599453);
  T t = x - y;
  if (t > T(0)) return x + log1p(exp(-t));
  if (t <= T(0)) return y + log1p(exp(t));
  return t;
}
template<typename T> LS_D T ls_left_shift(T a, T b, int bits) {
  if (b < T(0) || b >= T(bits)) return T(0);
  return T(a << b);
}
template<typename T> LS_D T ls_right_shift(T a, T b, int bits) {
  if (b < T(0) || b >= T(bits)) return a < T(0) ? T(-1) : T(0);
  return T(a >> b);
}
"""
