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
        return z * 0
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
def log1p_complex(z):
    """``log(1 + z)`` for complex z."""
    return np.log(z + 1)


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


@_jit
def power_complex(a, b):
    """NumPy complex power: exact small integer powers, 0 ** b, else ``exp(b * log(a))``."""
    br, bi = b.real, b.imag
    if br == 0 and bi == 0:
        return complex(1.0, 0.0)
    if a.real == 0 and a.imag == 0:
        if br > 0:
            return complex(0.0, 0.0)
        return complex(np.nan, np.nan)
    if bi == 0 and br > -100 and br < 100 and br == np.floor(br):
        n = int(br)
        if n == 1:
            return a
        if n < 0:
            n = -n
        r = complex(1.0, 0.0)
        p = a
        while n > 0:
            if n & 1:
                r = r * p
            p = p * p
            n >>= 1
        if br < 0:
            return divide_complex(complex(1.0, 0.0), r)
        return r
    return cmath.exp(b * cmath.log(a))
