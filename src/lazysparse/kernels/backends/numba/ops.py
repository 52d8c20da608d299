"""Numba-jittable scalar helpers that operator Numba forms call as ``lsops.<name>(...)``.

Each reproduces NumPy's scalar semantics where plain Python/Numba operators differ
(NaN-propagating max/min, floor division and remainder with zero divisors, shifts past the
bit width, sign of NaN/complex, integer powers). Compiled with ``error_model='numpy'`` so
division by zero gives inf/NaN instead of raising, as kernels must be too.
"""

from __future__ import annotations

import cmath
import math

import numpy as np
from numba import njit

_jit = njit(cache=False, error_model="numpy", inline="always")


@_jit
def isnan(a):
    """NaN test valid for any real scalar (ints are never NaN)."""
    return a != a


@_jit
def maximum_float(a, b):
    """NumPy ``maximum``: NaN if either operand is NaN."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@_jit
def minimum_float(a, b):
    """NumPy ``minimum``: NaN if either operand is NaN."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@_jit
def maximum_int(a, b):
    """Larger of two integers/bools."""
    return a if a >= b else b


@_jit
def minimum_int(a, b):
    """Smaller of two integers/bools."""
    return a if a <= b else b


@_jit
def clip_float(x, lo, hi):
    """``minimum(maximum(x, lo), hi)`` with NaN propagation (the standard's ``clip``)."""
    return minimum_float(maximum_float(x, lo), hi)


@_jit
def clip_int(x, lo, hi):
    """``minimum(maximum(x, lo), hi)`` for integers."""
    return minimum_int(maximum_int(x, lo), hi)


@_jit
def floor_divide_int(a, b):
    """NumPy integer floor division: x // 0 == 0, MIN // -1 wraps (never traps)."""
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@_jit
def remainder_int(a, b):
    """NumPy integer remainder (sign of divisor): x % 0 == 0, x % -1 == 0."""
    if b == 0 or b == -1:
        return a - a
    return a % b


@_jit
def floor_divide_float(a, b):
    """NumPy float floor division (``npy_divmod``): a // 0 is a / 0."""
    if b == 0:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and ((b < 0) != (mod < 0)):
        div -= 1.0
    if div != 0:
        fl = np.floor(div)
        if div - fl > 0.5:
            fl += 1.0
        return fl
    return math.copysign(0.0, a / b)


@_jit
def remainder_float(a, b):
    """NumPy float remainder (``npy_divmod``): result has the divisor's sign."""
    if b == 0:
        return np.fmod(a, b) if a == a else a
    mod = np.fmod(a, b)
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


@_jit
def left_shift(a, b, bits):
    """NumPy ``left_shift``: shifting by ``bits`` or more (or negative) gives 0."""
    if b < 0 or b >= bits:
        return a - a
    return a << b


@_jit
def right_shift(a, b, bits):
    """NumPy ``right_shift``: shifting by ``bits`` or more gives 0 or -1 (by sign)."""
    if b < 0 or b >= bits:
        return (a - a) - 1 if a < 0 else a - a
    return a >> b


@_jit
def sign_float(a):
    """NumPy ``sign`` for reals: NaN stays NaN, zero stays zero."""
    if a > 0:
        return 1.0
    if a < 0:
        return -1.0
    return a * 0.0 if a == a else a


@_jit
def sign_int(a):
    """``sign`` for integers."""
    return (a > 0) - (a < 0)


@_jit
def sign_complex(z):
    """Array API ``sign`` for complex: ``z / |z|`` (0 at 0, NumPy's rules at infinities)."""
    re, im = z.real, z.imag
    if math.isinf(re) and math.isinf(im):
        return complex(np.nan, np.nan)
    if math.isinf(re):
        return complex(math.copysign(1.0, re), 0.0)
    if math.isinf(im):
        return complex(0.0, math.copysign(1.0, im))
    m = abs(z)
    if m != m:
        return complex(np.nan, np.nan)
    if m == 0:
        return complex(0.0, 0.0)
    return complex(re / m, im / m)


@_jit
def logaddexp(x, y):
    """NumPy ``logaddexp``: log(exp(x) + exp(y)) without overflow."""
    if x == y:
        return x + math.log(2.0)
    tmp = x - y
    if tmp > 0:
        return x + math.log1p(math.exp(-tmp))
    if tmp <= 0:
        return y + math.log1p(math.exp(tmp))
    return tmp


@_jit
def round_complex(z):
    """Round both parts half to even."""
    return complex(np.rint(z.real), np.rint(z.imag))


@_jit
def power_int(a, b):
    """Signed integer power by squaring (wraps like NumPy); negative exponents raise."""
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result = np.int64(1)
    base = np.int64(a)
    e = np.int64(b)
    while e > 0:
        if e & 1:
            result = result * base
        base = base * base
        e >>= 1
    return result


@_jit
def power_uint(a, b):
    """Unsigned integer power by squaring (wraps like NumPy)."""
    one = np.uint64(1)
    result = one
    base = np.uint64(a)
    e = np.uint64(b)
    while e > np.uint64(0):
        if e & one:
            result = result * base
        base = base * base
        e >>= one
    return result


@_jit
def floor_divide_uint(a, b):
    """Unsigned floor division: x // 0 == 0."""
    if b == 0:
        return a - a
    return a // b


@_jit
def remainder_uint(a, b):
    """Unsigned remainder: x % 0 == 0."""
    if b == 0:
        return a - a
    return a % b


@_jit
def right_shift_uint(a, b, bits):
    """Unsigned ``right_shift``: shifting by ``bits`` or more gives 0."""
    if b >= bits:
        return a - a
    return a >> b


@_jit
def expm1_complex(z):
    """``exp(z) - 1`` for complex z, accurate near 0 on the real part."""
    x = z.real
    y = z.imag
    a = math.sin(y / 2)
    re = math.expm1(x) * math.cos(y) - 2 * a * a
    im = math.exp(x) * math.sin(y)
    return complex(re, im)


@_jit
def log1p_complex(z, one):
    """NumPy's complex ``log1p``: ``log|1 + z| + i atan2(y, 1 + x)`` part by part (the sign
    of a zero imaginary part survives: ``log1p(-2 - 0j)`` is ``-i pi``), in the precision
    of ``one`` (float32 for complex64, as NumPy computes it: ``1 + x`` rounds there)."""
    x, y = z.real + one, z.imag
    return complex(math.log(math.hypot(x, y)), math.atan2(y, x))


@_jit
def isequal_float(a, b):
    """Equality where NaN equals NaN (used for fill comparisons and argmin/argmax)."""
    return a == b or (a != a and b != b)


@_jit
def isequal_complex(a, b):
    """NaN-aware equality, part by part."""
    return isequal_float(a.real, b.real) and isequal_float(a.imag, b.imag)


@_jit
def coalesce_float(a, b, fill):
    """``a`` unless it equals ``fill`` (NaN-aware), else ``b`` (concatenation of tiles)."""
    return b if isequal_float(a, fill) else a


@_jit
def coalesce_complex(a, b, fill):
    """Complex ``coalesce``."""
    return b if isequal_complex(a, fill) else a


@_jit
def coalesce_int(a, b, fill):
    """Integer/bool ``coalesce``."""
    return b if a == fill else a


@_jit
def nextafter(a, b):
    """NumPy ``nextafter`` for float64 (float32 is handled by ``nextafter32``)."""
    return np.nextafter(a, b)


@_jit
def nextafter32(a, b):
    """``nextafter`` in float32 precision."""
    return np.nextafter(np.float32(a), np.float32(b))


@_jit
def square(a):
    """``a * a`` (one evaluation of the argument)."""
    return a * a


@_jit
def divide_complex(a, b):
    """NumPy complex division (Smith's method; division by 0 gives inf/NaN, never raises)."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if abs(br) >= abs(bi):
        if br == 0 and bi == 0:
            return complex(ar / abs(br), ai / abs(br))
        rat = bi / br
        scl = 1.0 / (br + bi * rat)
        return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = br / bi
    scl = 1.0 / (bi + br * rat)
    return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)


@_jit
def log2_complex(z):
    """``log(z) / log(2)`` part by part (no complex division, so infinities stay clean)."""
    w = cmath.log(z)
    return complex(w.real / math.log(2.0), w.imag / math.log(2.0))


# --- complex functions with C99 Annex G special values (NumPy's, through the C library) ---
# Numba's cmath follows Python's cmath, whose special values differ (Python raises on
# overflow; Numba then returns ``inf+nanj`` where C gives ``inf+0j``). The parts compute in
# float64 (complex64 arguments are widened; the kernel casts the result back), following
# FreeBSD msun's algorithms, whose special values are NumPy's wherever Annex G fixes them.

_EXP_OVFL = 709.782712893384  # above this exp(x) overflows
_CEXP_OVFL = 1454.9125363406292  # above this exp(x) * s overflows for every s <= 1
_KLN2 = 1246.97177782734161156  # 1799 * ln 2: exp(x - _KLN2) is in range for x <= 1455
_K = 1799
_HALF_PI = 1.5707963267948966


@_jit
def _scaled_exp_cis(x, y, expt):
    """``exp(x) * 2**expt * (cos y, sin y)`` for ``x`` in [709.8, 1454.9], scaled so that
    exp(x) itself never overflows: only the final products may."""
    m, e = math.frexp(math.exp(x - _KLN2))
    k = e + _K + expt
    half = k // 2
    re = math.ldexp(math.ldexp(m * math.cos(y), half), k - half)
    im = math.ldexp(math.ldexp(m * math.sin(y), half), k - half)
    return re, im


@_jit
def _cexp(x, y):
    """``exp(x + iy)`` as (real, imag) with Annex G special values."""
    if y == 0:
        return math.exp(x), y
    if x == 0:
        return math.cos(y), math.sin(y)
    if not math.isfinite(y):
        if x != x or math.isfinite(x):
            return y - y, y - y
        if x < 0:
            return 0.0, math.copysign(0.0, y)
        return x, y - y
    if x > _EXP_OVFL and x <= _CEXP_OVFL:
        return _scaled_exp_cis(x, y, 0)
    ex = math.exp(x)
    return ex * math.cos(y), ex * math.sin(y)


@_jit
def exp_complex(z):
    """NumPy's complex ``exp`` (``exp(1e300 + 0j)`` is ``inf + 0j``)."""
    re, im = _cexp(np.float64(z.real), np.float64(z.imag))
    return complex(re, im)


@_jit
def _csinh(x, y):
    """``sinh(x + iy)`` as (real, imag) with Annex G special values."""
    if math.isfinite(x) and math.isfinite(y):
        if y == 0:
            return math.sinh(x), y
        ax = abs(x)
        if ax < 22:
            return math.sinh(x) * math.cos(y), math.cosh(x) * math.sin(y)
        if ax < _EXP_OVFL:
            h = math.exp(ax) * 0.5
            return math.copysign(h, x) * math.cos(y), h * math.sin(y)
        if ax <= _CEXP_OVFL:
            re, im = _scaled_exp_cis(ax, y, -1)
            return math.copysign(1.0, x) * re, im
        h = math.inf * x
        return h * math.cos(y), math.inf * math.sin(y)
    if x == 0:
        return x, y - y
    if y == 0:
        return x + x, y
    if math.isfinite(x):
        return y - y, y - y
    if math.isinf(x):
        if not math.isfinite(y):
            return math.inf, y - y
        return x * math.cos(y), math.inf * math.sin(y)
    return (x + x) * (y - y), (x * x) * (y - y)


@_jit
def _ccosh(x, y):
    """``cosh(x + iy)`` as (real, imag) with Annex G special values."""
    if math.isfinite(x) and math.isfinite(y):
        if y == 0:
            return math.cosh(x), x * y
        ax = abs(x)
        if ax < 22:
            return math.cosh(x) * math.cos(y), math.sinh(x) * math.sin(y)
        if ax < _EXP_OVFL:
            h = math.exp(ax) * 0.5
            return h * math.cos(y), math.copysign(h, x) * math.sin(y)
        if ax <= _CEXP_OVFL:
            re, im = _scaled_exp_cis(ax, y, -1)
            return re, im * math.copysign(1.0, x)
        h = math.inf * x
        return math.inf * math.cos(y), h * math.sin(y)
    if x == 0:
        return y - y, 0.0
    if y == 0:
        return x * x, y if x != x else math.copysign(0.0, x) * y
    if math.isfinite(x):
        return y - y, x * (y - y)
    if math.isinf(x):
        if not math.isfinite(y):
            return x * x, x * (y - y)
        return (x * x) * math.cos(y), x * math.sin(y)
    return (x * x) * (y - y), (x + x) * (y - y)


@_jit
def _ctanh(x, y):
    """``tanh(x + iy)`` as (real, imag) with Annex G special values (Kahan's algorithm)."""
    if not math.isfinite(x):
        if x != x:
            return x + y, y if y == 0 else x + y
        s = y if math.isinf(y) else math.sin(y) * math.cos(y)
        return math.copysign(1.0, x), math.copysign(0.0, s)
    if not math.isfinite(y):
        return (y - y if x != 0 else x), y - y
    if abs(x) >= 22:
        e = math.exp(-abs(x))
        return math.copysign(1.0, x), 4 * math.sin(y) * math.cos(y) * e * e
    t = math.tan(y)
    beta = 1.0 + t * t
    s = math.sinh(x)
    rho = math.sqrt(1 + s * s)
    denom = 1 + beta * s * s
    return (beta * rho * s) / denom, t / denom


@_jit
def sinh_complex(z):
    """NumPy's complex ``sinh``."""
    re, im = _csinh(np.float64(z.real), np.float64(z.imag))
    return complex(re, im)


@_jit
def cosh_complex(z):
    """NumPy's complex ``cosh``."""
    re, im = _ccosh(np.float64(z.real), np.float64(z.imag))
    return complex(re, im)


@_jit
def tanh_complex(z):
    """NumPy's complex ``tanh``."""
    re, im = _ctanh(np.float64(z.real), np.float64(z.imag))
    return complex(re, im)


@_jit
def sin_complex(z):
    """NumPy's complex ``sin``: ``-i sinh(iz)`` (but ``+i inf`` for an infinite imaginary
    part over a real part that is not finite, as the C library's ``csin``)."""
    x, y = np.float64(z.real), np.float64(z.imag)
    if math.isinf(y) and not math.isfinite(x):
        return complex(x - x, math.inf)
    re, im = _csinh(-y, x)
    return complex(im, -re)


@_jit
def cos_complex(z):
    """NumPy's complex ``cos``: ``cosh(iz)``."""
    re, im = _ccosh(-np.float64(z.imag), np.float64(z.real))
    return complex(re, im)


@_jit
def tan_complex(z):
    """NumPy's complex ``tan``: ``-i tanh(iz)``."""
    re, im = _ctanh(-np.float64(z.imag), np.float64(z.real))
    return complex(im, -re)


@_jit
def _casinh(x, y):
    """``asinh(x + iy)``: Annex G's NaN cases, else Numba's cmath (finite and infinite
    arguments already follow the annex)."""
    if x != x and y == 0:
        return x, y
    w = cmath.asinh(complex(x, y))
    return w.real, w.imag


@_jit
def _catanh(x, y):
    """``atanh(x + iy)``: Annex G's NaN cases, else Numba's cmath."""
    if x != x:
        if math.isinf(y):
            return math.copysign(0.0, x), math.copysign(_HALF_PI, y)
        return x + y, x + y
    if y != y:
        if x == 0 or math.isinf(x):
            return math.copysign(0.0, x), y
        return y, y
    w = cmath.atanh(complex(x, y))
    return w.real, w.imag


@_jit
def asinh_complex(z):
    """NumPy's complex ``asinh``."""
    re, im = _casinh(np.float64(z.real), np.float64(z.imag))
    return complex(re, im)


@_jit
def asin_complex(z):
    """NumPy's complex ``asin``: ``-i asinh(iz)``."""
    re, im = _casinh(-np.float64(z.imag), np.float64(z.real))
    return complex(im, -re)


@_jit
def atanh_complex(z):
    """NumPy's complex ``atanh``."""
    re, im = _catanh(np.float64(z.real), np.float64(z.imag))
    return complex(re, im)


@_jit
def atan_complex(z):
    """NumPy's complex ``atan``: ``-i atanh(iz)``."""
    re, im = _catanh(-np.float64(z.imag), np.float64(z.real))
    return complex(im, -re)


@_jit
def acos_complex(z):
    """NumPy's complex ``acos`` (``acos(±0 + i NaN)`` is ``pi/2 + i NaN``)."""
    x, y = np.float64(z.real), np.float64(z.imag)
    if x == 0 and y != y:
        return complex(_HALF_PI, y)
    return complex(cmath.acos(complex(x, y)))


@_jit
def acosh_complex(z):
    """NumPy's complex ``acosh`` (``acosh(±0 + i NaN)`` is ``NaN + i pi/2``)."""
    x, y = np.float64(z.real), np.float64(z.imag)
    if x == 0 and y != y:
        return complex(y, _HALF_PI)
    return complex(cmath.acosh(complex(x, y)))


@_jit
def reciprocal_complex(z):
    """NumPy's complex ``reciprocal`` (its own Smith division: ``1 / 0j`` is ``nan+nanj``,
    where ``divide(1, 0j)`` is ``inf+nanj``)."""
    x, y = np.float64(z.real), np.float64(z.imag)
    if abs(y) <= abs(x):
        r = y / x
        d = x + y * r
        return complex(1 / d, -r / d)
    r = x / y
    d = x * r + y
    return complex(r / d, -1 / d)


@_jit
def _cmul(ar, ai, br, bi):
    """The schoolbook complex product (NumPy's ``cmul`` in ``power``)."""
    return ar * br - ai * bi, ar * bi + ai * br


@_jit
def _cmul_annex_g(a, b, c, d):
    """``(a + ib)(c + id)`` as C99 Annex G's multiplication (what C compilers emit for
    ``y * clog(x)`` inside ``cpow``): infinities a NaN + i NaN product loses come back."""
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    x, y = ac - bd, ad + bc
    if not (x != x and y != y):
        return x, y
    recalc = False
    if math.isinf(a) or math.isinf(b):
        a = math.copysign(1.0 if math.isinf(a) else 0.0, a)
        b = math.copysign(1.0 if math.isinf(b) else 0.0, b)
        c = math.copysign(0.0, c) if c != c else c
        d = math.copysign(0.0, d) if d != d else d
        recalc = True
    if math.isinf(c) or math.isinf(d):
        c = math.copysign(1.0 if math.isinf(c) else 0.0, c)
        d = math.copysign(1.0 if math.isinf(d) else 0.0, d)
        a = math.copysign(0.0, a) if a != a else a
        b = math.copysign(0.0, b) if b != b else b
        recalc = True
    if not recalc and (math.isinf(ac) or math.isinf(bd) or math.isinf(ad)
                       or math.isinf(bc)):
        a = math.copysign(0.0, a) if a != a else a
        b = math.copysign(0.0, b) if b != b else b
        c = math.copysign(0.0, c) if c != c else c
        d = math.copysign(0.0, d) if d != d else d
        recalc = True
    if recalc:
        return math.inf * (a * c - b * d), math.inf * (a * d + b * c)
    return x, y


@_jit
def _integer_power(ar, ai, n):
    """``(ar + i ai) ** n`` for an integer ``0 < |n| < 100`` as NumPy multiplies it:
    powers 1 to 3 unrolled, others by squaring from 1, then 1 divided by a negative one."""
    m = abs(n)
    if n == 1:
        rr, ri = ar, ai
    elif n == 2:
        rr, ri = _cmul(ar, ai, ar, ai)
    elif n == 3:
        sr, si = _cmul(ar, ai, ar, ai)
        rr, ri = _cmul(ar, ai, sr, si)
    else:
        rr, ri, pr, pi, mask = 1.0, 0.0, ar, ai, 1
        while True:
            if m & mask:
                rr, ri = _cmul(rr, ri, pr, pi)
            mask <<= 1
            if m < mask:
                break
            pr, pi = _cmul(pr, pi, pr, pi)
    if n < 0:
        return divide_complex(complex(1.0, 0.0), complex(rr, ri))
    return complex(rr, ri)


@_jit
def power_complex(a, b):
    """NumPy's complex power: ``b == 0`` gives 1, ``0 ** b`` is 0 for ``real(b) > 0`` else
    NaN, small integer powers multiply, anything else is ``exp(b * log(a))`` (C's ``cpow``,
    with Annex G's product and exponential)."""
    ar, ai = np.float64(a.real), np.float64(a.imag)
    br, bi = np.float64(b.real), np.float64(b.imag)
    if br == 0 and bi == 0:
        return complex(1.0, 0.0)
    if ar == 0 and ai == 0:
        if br > 0:
            return complex(0.0, 0.0)
        return complex(np.nan, np.nan)
    if bi == 0 and abs(br) < 100 and br == math.floor(br):
        return _integer_power(ar, ai, int(br))
    w = cmath.log(complex(ar, ai))
    x, y = _cmul_annex_g(br, bi, w.real, w.imag)
    re, im = _cexp(x, y)
    return complex(re, im)
