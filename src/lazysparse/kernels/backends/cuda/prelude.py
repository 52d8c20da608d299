"""The fixed head of every generated CUDA translation unit: complex type, operator helpers,
and the device helpers the CUDA backend itself emits (sorting, warp reductions, atomics).

NVRTC (what ``cupy.RawModule`` uses) has no host headers, so nothing here includes one.
Under CuPy the complex type is CuPy's ``complex<T>`` (``cupy/complex.cuh``); for an offline
``nvcc`` check without CuPy the same code compiles against Thrust's ``thrust::complex``.
"""

from __future__ import annotations

from lazysparse.kernels.backends.cuda.ops import CUDA_COMPLEX_INCLUDE, CUDA_PRELUDE

#: complex<T> without CuPy: Thrust's, which CuPy's ``complex.cuh`` is derived from (ships
#: with every CUDA toolkit).
THRUST_COMPLEX_INCLUDE = "#include <thrust/complex.h>\nusing thrust::complex;\n"

BACKEND_HELPERS = r"""
// ---- lazysparse CUDA backend helpers ----
typedef long long ls_i64;

// In-place heapsort of a[lo:hi] (per-thread workspace touched lists; no recursion, no stack).
template<typename T> __device__ void ls_sort_range(T* a, ls_i64 lo, ls_i64 hi) {
  ls_i64 n = hi - lo;
  T* b = a + lo;
  for (ls_i64 start = n / 2 - 1; start >= 0; --start) {
    ls_i64 r = start;
    while (2 * r + 1 < n) {
      ls_i64 c = 2 * r + 1;
      if (c + 1 < n && b[c] < b[c + 1]) ++c;
      if (b[r] < b[c]) { T x = b[r]; b[r] = b[c]; b[c] = x; r = c; } else break;
    }
  }
  for (ls_i64 end = n - 1; end > 0; --end) {
    T x = b[0]; b[0] = b[end]; b[end] = x;
    ls_i64 r = 0;
    while (2 * r + 1 < end) {
      ls_i64 c = 2 * r + 1;
      if (c + 1 < end && b[c] < b[c + 1]) ++c;
      if (b[r] < b[c]) { T y = b[r]; b[r] = b[c]; b[c] = y; r = c; } else break;
    }
  }
}

// Loop-IR intrinsic sort_touched(list, n, extent) (backends/numba/support.py on the CPU):
// order a dense row workspace's touched coordinates (all in 0 .. extent-1) before they are
// appended. Per-thread and in place: insertion sort for short rows (the common SpGEMM
// case, no extra memory), heapsort otherwise (O(n log n), no recursion, no scratch).
template<typename T> __device__ void ls_sort_touched(T* lst, ls_i64 n, ls_i64 extent) {
  (void)extent;  // the CPU radix sort uses it; comparison sorts need no key bound
  if (n <= 32) {
    for (ls_i64 i = 1; i < n; ++i) {
      T x = lst[i];
      ls_i64 j = i - 1;
      while (j >= 0 && lst[j] > x) { lst[j + 1] = lst[j]; --j; }
      lst[j + 1] = x;
    }
    return;
  }
  ls_sort_range(lst, (ls_i64)0, n);
}

// Hash workspace (wide SpGEMM rows): open addressing, linear probing, capacity a power of
// two at least twice the row's distinct keys (so a probe always ends), empty slots -1.
LS_D ls_i64 ls_hash_probe(const ls_i64* keys, ls_i64 cap, ls_i64 key) {
  ls_i64 h = (ls_i64)(((unsigned long long)key * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
  while (keys[h] != key && keys[h] != -1) h = (h + 1) & (cap - 1);
  return h;
}

// Warp shuffles for every value type a reduction may carry (bool/char/short via int).
#define LS_FULL 0xffffffffu
template<typename T> LS_D T ls_shfl_down(T v, int d) { return __shfl_down_sync(LS_FULL, v, d); }
LS_D bool ls_shfl_down(bool v, int d) { return __shfl_down_sync(LS_FULL, (int)v, d) != 0; }
LS_D signed char ls_shfl_down(signed char v, int d) {
  return (signed char)__shfl_down_sync(LS_FULL, (int)v, d);
}
LS_D unsigned char ls_shfl_down(unsigned char v, int d) {
  return (unsigned char)__shfl_down_sync(LS_FULL, (unsigned)v, d);
}
LS_D short ls_shfl_down(short v, int d) { return (short)__shfl_down_sync(LS_FULL, (int)v, d); }
LS_D unsigned short ls_shfl_down(unsigned short v, int d) {
  return (unsigned short)__shfl_down_sync(LS_FULL, (unsigned)v, d);
}
template<typename T> LS_D complex<T> ls_shfl_down(complex<T> v, int d) {
  return complex<T>(__shfl_down_sync(LS_FULL, v.real(), d),
                    __shfl_down_sync(LS_FULL, v.imag(), d));
}

// Bit-level views for compare-and-swap on 4- and 8-byte values (any reduction operator).
template<typename T, int N> struct ls_bits;
template<typename T> struct ls_bits<T, 4> {
  typedef unsigned int U;
  static LS_D U to(T v) { union { T t; U u; } x; x.t = v; return x.u; }
  static LS_D T from(U v) { union { T t; U u; } x; x.u = v; return x.t; }
};
template<typename T> struct ls_bits<T, 8> {
  typedef unsigned long long U;
  static LS_D U to(T v) { union { T t; U u; } x; x.t = v; return x.u; }
  static LS_D T from(U v) { union { T t; U u; } x; x.u = v; return x.t; }
};
"""


def preamble(*, cupy_headers: bool = True) -> str:
    """Everything a generated kernel needs before its own code.

    ``cupy_headers`` selects CuPy's ``complex<T>`` (what RawModule compiles against); False
    gives Thrust's, for compiling with a bare ``nvcc`` where CuPy is not installed.
    """
    head = CUDA_COMPLEX_INCLUDE if cupy_headers else THRUST_COMPLEX_INCLUDE
    return head + CUDA_PRELUDE + BACKEND_HELPERS


def atomic_helper(name: str, ctype: str, combine: str) -> str:
    """A ``__device__`` function atomically doing ``*p = combine(*p, v)`` by CAS (4/8-byte
    ``ctype``); ``combine`` is C source over ``a`` (old) and ``b`` (new)."""
    return (
        f"#ifndef LS_HAVE_{name}\n#define LS_HAVE_{name}\n"
        f"__device__ void {name}({ctype}* p, {ctype} b) {{\n"
        f"  typedef ls_bits<{ctype}, sizeof({ctype})> B;\n"
        f"  typename B::U* addr = reinterpret_cast<typename B::U*>(p);\n"
        f"  typename B::U old = *addr, assumed;\n"
        f"  do {{\n"
        f"    assumed = old;\n"
        f"    {ctype} a = B::from(assumed);\n"
        f"    {ctype} r = {combine};\n"
        f"    old = atomicCAS(addr, assumed, B::to(r));\n"
        f"  }} while (old != assumed);\n"
        f"}}\n#endif\n")
