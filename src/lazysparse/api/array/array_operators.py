"""``LazyArray``'s Python operators, indexing and transposes: a mixin class it inherits.

The elementwise dunders (``__add__``, ``__radd__``, ``__iadd__``, the comparisons,
``__neg__`` …) are generated while the class body runs, from the operator registry: each
``logic.operators.ELEMENTWISE_FUNCTIONS`` entry declares its ``dunders``, so an operator's
semantics live in one place and this file says how a dunder calls it (:class:`DunderKind`).
Written out below them: ``[]`` (``__getitem__``/``__setitem__``), ``T``/``mT`` and ``@``.

The methods build their results with the api functions of :class:`ArrayFunctions`
(``elementwise.apply_operator``, ``indexing.getitem`` …). Those modules construct
``LazyArray``, whose base this class is, so it cannot import them: ``api/namespace.py``
installs them once (:func:`install`), as it fills ``numpy_dispatch``'s tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lazysparse.logic import dtypes as _dt
from lazysparse.logic.operators import ELEMENTWISE_FUNCTIONS, Operator


@dataclass(frozen=True)
class ArrayFunctions:
    """The api functions ``LazyArray``'s operators compute with (see the module docstring)."""

    apply_operator: Callable[..., Any]  # elementwise.apply_operator(op, *args, fname=)
    astype: Callable[..., Any]
    is_operand: Callable[[Any], bool]  # what an operator accepts; else NotImplemented
    getitem: Callable[[Any, Any], Any]
    setitem: Callable[[Any, Any, Any], None]
    permute_dims: Callable[[Any, tuple[int, ...]], Any]
    matrix_transpose: Callable[[Any], Any]
    matmul: Callable[[Any, Any], Any]


_FUNCTIONS: list[ArrayFunctions] = []


def install(functions: ArrayFunctions) -> None:
    """Give the operators their api functions (called once, when the namespace is built)."""
    _FUNCTIONS[:] = [functions]


def _api() -> ArrayFunctions:
    return _FUNCTIONS[0]


class DunderKind(Enum):
    """How a registry dunder applies its operator."""

    UNARY = "op(self)"  # __neg__
    FORWARD = "op(self, other)"  # __add__, __eq__
    REFLECTED = "op(other, self)"  # __radd__
    IN_PLACE = "self = op(self, other)"  # __iadd__

    @staticmethod
    def of(dunder: str, nargs: int) -> DunderKind:
        """The kind of ``dunder`` (a dunder of an ``nargs``-argument operator)."""
        stem = dunder[2:-2]
        if nargs == 1:
            return DunderKind.UNARY
        if stem[:1] == "i" and stem[1:] in _STEMS:
            return DunderKind.IN_PLACE
        if stem[:1] == "r" and stem[1:] in _STEMS:
            return DunderKind.REFLECTED
        return DunderKind.FORWARD


# binary operators with reflected and in-place forms (``__rand__`` is not ``__and__``'s r...)
_STEMS = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or",
                    "xor", "lshift", "rshift", "matmul"})


def _symbol(dunder: str) -> str:
    """``"+="`` for ``"__iadd__"`` (errors name the operator as the user wrote it)."""
    return _IN_PLACE_SYMBOLS.get(dunder, dunder)


_IN_PLACE_SYMBOLS = {"__iadd__": "+=", "__isub__": "-=", "__imul__": "*=",
                     "__itruediv__": "/=", "__ifloordiv__": "//=", "__imod__": "%=",
                     "__ipow__": "**=", "__imatmul__": "@=", "__iand__": "&=",
                     "__ior__": "|=", "__ixor__": "^=", "__ilshift__": "<<=",
                     "__irshift__": ">>="}


def _inplace_update(self: Any, res: Any, dunder: str) -> Any:
    """Make ``self`` the result ``res`` (a functional update of its plan) and return it.
    ``res`` is only a plan yet: a shape or dtype it cannot store (NumPy's same_kind rule,
    ``dtypes.check_in_place``) raises before anything of ``self`` or its base changes."""
    what = f"x {_symbol(dunder)} y ({dunder})"
    if res.shape != self.shape:
        raise ValueError(f"{what}: result shape {res.shape} differs from the array's "
                         f"{self.shape}; in-place operations cannot broadcast the array")
    if res.dtype != self.dtype:
        _dt.check_in_place(what, res.dtype, self.dtype)
        res = _api().astype(res, self.dtype, copy=False)
    self.replace_with(res)
    self.write_through()  # a view's write reaches its array (NumPy's shared memory)
    return self


def _make_dunder(dunder: str, name: str, op: Operator, kind: DunderKind) -> Callable[..., Any]:
    """One registry dunder of ``kind``; a binary one returns ``NotImplemented`` for an
    operand the api does not take (Python then asks the other operand)."""
    if kind is DunderKind.UNARY:
        def d(self: Any, /) -> Any:
            return _api().apply_operator(op, self, fname=dunder)
    elif kind is DunderKind.IN_PLACE:
        def d(self: Any, other: Any, /) -> Any:  # type: ignore[misc]
            api = _api()
            if not api.is_operand(other):
                return NotImplemented
            return _inplace_update(self, api.apply_operator(op, self, other, fname=dunder),
                                   dunder)
    elif kind is DunderKind.REFLECTED:
        def d(self: Any, other: Any, /) -> Any:  # type: ignore[misc]
            # _api() inlined, and the common operands (an array of this class, a Python
            # float or int) taken without ``is_operand``: these run per operation built
            api, t = _FUNCTIONS[0], type(other)
            if t is not type(self) and t is not float and t is not int and \
                    not api.is_operand(other):
                return NotImplemented
            return api.apply_operator(op, other, self, fname=dunder)
    else:
        def d(self: Any, other: Any, /) -> Any:  # type: ignore[misc]
            api, t = _FUNCTIONS[0], type(other)
            if t is not type(self) and t is not float and t is not int and \
                    not api.is_operand(other):
                return NotImplemented
            return api.apply_operator(op, self, other, fname=dunder)
    d.__name__ = dunder
    d.__qualname__ = f"ArrayOperators.{dunder}"
    d.__doc__ = f"``{name}`` as an operator (lazy)."
    return d


def registry_dunders() -> dict[str, Callable[..., Any]]:
    """Every dunder the operator registry declares, by name."""
    return {dunder: _make_dunder(dunder, name, ef.operator, DunderKind.of(dunder, ef.nargs))
            for name, ef in ELEMENTWISE_FUNCTIONS.items() for dunder in ef.dunders}


class ArrayOperators:
    """Python's operators on lazysparse arrays (a base of ``LazyArray``)."""

    __slots__ = ()

    # the registry's dunders, defined in this class's namespace while its body runs
    # (at class scope ``locals()`` is the namespace passed to the metaclass)
    locals().update(registry_dunders())
    # ``==`` builds an array, yet arrays stay hashable by identity (as before ``__eq__``)
    __hash__ = object.__hash__

    # --- indexing ---
    def __getitem__(self, key: Any, /) -> Any:
        return _api().getitem(self, key)

    def __setitem__(self, key: Any, value: Any, /) -> None:
        _api().setitem(self, key, value)

    # --- transposes and matmul ---
    @property
    def T(self: Any) -> Any:  # noqa: N802 - the standard's name
        if self.ndim != 2:
            raise ValueError(f".T needs a 2-d array, got {self.ndim}-d; use permute_dims/mT")
        return _api().permute_dims(self, (1, 0))

    @property
    def mT(self: Any) -> Any:  # noqa: N802 - the standard's name
        if self.ndim < 2:
            raise ValueError(f".mT needs at least 2 dimensions, got {self.ndim}")
        return _api().matrix_transpose(self)

    def __matmul__(self, other: Any, /) -> Any:
        """``self @ other``: ``matmul``, with NumPy and scipy.sparse operands converted
        without copying; a Python scalar is a TypeError naming the operand (as ``matmul``)."""
        api = _api()
        if not api.is_operand(other):
            return NotImplemented
        return api.matmul(self, other)

    def __rmatmul__(self, other: Any, /) -> Any:
        """``other @ self`` where ``other`` is not a lazysparse array (NumPy defers here:
        ``__array_ufunc__`` is None)."""
        api = _api()
        if not api.is_operand(other):
            return NotImplemented
        return api.matmul(other, self)

    def __imatmul__(self: Any, other: Any, /) -> Any:
        """``self @= other``: ``self`` becomes the product (same shape only), written
        through to the array ``self`` is a view of, as the other in-place operators."""
        return _inplace_update(self, _api().matmul(self, other), "__imatmul__")
