"""``LazyArray``: a Finch-Logic expression plus eagerly known metadata.

Nothing runs when a LazyArray is built. Its ``expr`` is a ``Subquery`` whose fields are its
axes in order; its shape, dtype, device and fill value are derived as the plan is built.
Observing values (``__array__``, ``__bool__``, ``str``…) computes it once and keeps the
resulting ``formats.Tensor``.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from lazysparse.api.array import display, held_values, memo
from lazysparse.api.array.array_operators import ArrayOperators
from lazysparse.api.array.devices import (
    CPU,
    Device,
    as_device,
    device_mix_error,
    is_device_tensor,
)
from lazysparse.api.array.live import BY_ALIAS, live_array, register
from lazysparse.api.array.materialize import compute_arrays
from lazysparse.api.array.plan_nodes import fresh_alias, fresh_fields
from lazysparse.api.protocols import numpy_dispatch, numpy_functions
from lazysparse.api.protocols.numpy_methods import NumpyMethods
from lazysparse.api.protocols.scipy_methods import ScipyMethods
from lazysparse.formats.config import DensifyError
from lazysparse.formats.device import dense_array, to_cuda, to_host
from lazysparse.formats.levels.registry import is_located
from lazysparse.formats.specs import format_spec
from lazysparse.formats.tensor import Tensor
from lazysparse.formats.validation.inputs import MAX_EXTENT, check_extents
from lazysparse.logic.inference import infer_region
from lazysparse.logic.nodes import Aggregate, Immediate, MapJoin, Relabel, Reorder, Subquery, Table

if TYPE_CHECKING:
    from lazysparse.formats import FormatSpec, Tensor


def _added_nodes(expr: Subquery) -> Iterator[Any]:
    """What ``expr`` adds over the live arrays it reads: each such array (not looked into:
    it was checked and measured when it was built) and every other node, once each."""
    seen: set[int] = set()
    stack: list[Any] = [expr.arg]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Subquery) and (arr := live_array(n)) is not None:
            yield arr
            continue
        yield n
        stack.extend(n.children)


def _operand_devices(expr: Subquery) -> set[Device]:
    """Devices of the live arrays ``expr`` reads directly and of device tensors it holds."""
    found: set[Device] = set()
    for n in _added_nodes(expr):
        if isinstance(n, LazyArray):
            found.add(n._device)
        elif isinstance(n, Immediate) and is_device_tensor(n.val):
            found.add(Device("cuda"))
    return found


def check_same_device(device: Device, expr: Subquery) -> None:
    """ValueError when the operands of ``expr`` live on another device than ``device``
    (the one check every api function that combines arrays goes through: the
    ``LazyArray`` constructor)."""
    others = _operand_devices(expr) - {device}
    if others:
        raise device_mix_error({device.name, *(d.name for d in others)})


# Bounded plans: an array whose uncomputed history is deeper than this many array levels,
# or larger than this many plan nodes (shared subexpressions counted once per use), is
# computed as it is built. Normal expressions stay far below both, so fusion is kept;
# loops that never compute (``for _ in range(10_000): x = x * 0.5 + y``) run in chunks.
MAX_PLAN_DEPTH = 32
MAX_PLAN_NODES = 2048


_NO_HISTORY = math.inf


def _plain_shape(shape: tuple[Any, ...]) -> bool:
    """Whether ``shape`` holds Python ints within int64 only (every shape the api derives):
    nothing to convert or check (``formats.validation.inputs.check_extents``)."""
    for d in shape:
        if type(d) is not int or d > MAX_EXTENT:
            return False
    return True


def history_extent(expr: Subquery) -> tuple[int, int, float]:
    """(depth, size, epoch) of the uncomputed history of ``expr``: array levels above the
    computed leaves, plan nodes, and the ``memo.EPOCH`` its oldest part was built at.
    Walks only the nodes the new array adds (``_added_nodes``, inlined: it runs per array
    built): each live array it reads contributes its own recorded extent (computed arrays:
    none)."""
    if isinstance(expr.arg, Table):
        return 0, 0, _NO_HISTORY
    depth, size, epoch = 0, 0, memo.EPOCH
    seen: set[int] = set()
    stack: list[Any] = [expr.arg]
    get = BY_ALIAS.get
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        t = type(n)
        if t is Relabel or t is Reorder or t is MapJoin:
            # children inlined (fields and the operator are leaves, counted once each)
            size += 1
            for leaf in (n.idxs if t is not MapJoin else (n.op,)):
                if id(leaf) not in seen:
                    seen.add(id(leaf))
                    size += 1
            if t is MapJoin:
                stack.extend(n.args)
            else:
                stack.append(n.arg)
            continue
        if t is Subquery:
            ref = get(n.lhs.name)
            arr = ref() if ref is not None else None
            if arr is not None and arr._expr is n:
                depth = max(depth, arr._depth)
                size += arr._size
                epoch = min(epoch, arr._epoch)
                continue
            if memo.memoized(n.lhs) is not None:
                epoch = -_NO_HISTORY  # an old expression of an array computed since
        size += 1
        stack.extend(n.children)
    return depth + 1, size, epoch


def operands_extent(operands: Sequence[LazyArray], added: int) -> tuple[int, int, float]:
    """``history_extent`` of a node over the live arrays ``operands`` (each read once,
    however often it appears) that adds ``added`` plan nodes above their expressions
    (``plan_nodes.build_mapjoin`` counts them as it builds them): from the operands'
    recorded extents, O(operands), no walk and no registry lookup."""
    depth, size, epoch = 0, added, memo.EPOCH
    seen: list[int] = []  # ids of the operands' subqueries (a Subquery compares deeply)
    for a in operands:
        e = id(a._expr)
        if e in seen:
            continue
        seen.append(e)
        if a._depth > depth:
            depth = a._depth
        size += a._size
        if a._epoch < epoch:
            epoch = a._epoch
    return depth + 1, size, epoch


_CUDA_SEEN = False

# sparse arrays with more elements than this are summarized by repr/str, not densified
_REPR_MAX_SPARSE_SIZE = 10_000


def _known_region(node: Any) -> tuple[Any, bool] | None:
    """The recorded ``(fill, full)`` of a live array's subquery (None: look inside)."""
    arr = live_array(node) if isinstance(node, Subquery) else None
    if arr is not None and arr._fill_value is not None:
        return arr._fill_value, arr.full
    return None


class ViewLink(Protocol):
    """How a view follows the array it views (``LazyArray.view_of``; docs/api.md "Views and
    writes"): ``indexing.IndexLink`` (basic indexing), ``manipulation.WholeLink``
    (transposes, reshapes)."""

    def read(self, parent: LazyArray, view: LazyArray) -> LazyArray:
        """The view's value taken again from ``parent``'s current value."""

    def write(self, parent: LazyArray, view: LazyArray) -> tuple[Any, Any]:
        """``(key, value)``: the assignment ``parent[key] = value`` that repeats the view's
        current value in ``parent``."""

    def region(self, values: np.ndarray, view: LazyArray) -> np.ndarray | None:
        """The NumPy view of ``values`` (the parent's dense values) this view is, None
        where NumPy would copy (a dense region write then cannot reach the parent)."""


class _WriteClock:
    """Counts the writes into arrays: a view whose chain was checked at the current count
    reads without looking again (``LazyArray._refresh``: one comparison)."""

    __slots__ = ("now", "_ticks")

    def __init__(self) -> None:
        self._ticks = itertools.count(1)
        self.now = 0

    def tick(self) -> None:
        """One more write happened."""
        self.now = next(self._ticks)


WRITES = _WriteClock()


class ViewState:
    """What makes an array a view: the array it views (held weakly when that one is no
    view: while it lives the view follows it; held strongly when it is a view of a living
    array, so a chain such as ``c[1:][0]`` keeps the views between), the ``link`` to it,
    the parent's write version the view's value was taken at (``seen``) and the
    ``WRITES`` count its chain was last found current at (``checked``)."""

    __slots__ = ("link", "_strong", "_weak", "seen", "checked")

    def __init__(self, parent: LazyArray, link: ViewLink, strong: bool) -> None:
        self.link = link
        self._strong = parent if strong else None
        self._weak = None if strong else weakref.ref(parent)
        self.seen = parent._version
        self.checked = WRITES.now

    def parent(self) -> LazyArray | None:
        """The array viewed, or None when it has died."""
        return self._strong if self._weak is None else self._weak()


# ``x[key] = value`` into ``x`` alone (``indexing.assign``), installed when the namespace
# is built (as ``array_operators.install``): ``write_through`` repeats it up a chain
_ASSIGN: list[Callable[[LazyArray, Any, Any], None]] = []
# the dense region write into the top array of a chain (``setitem.write_region``)
Chain = list[tuple["LazyArray", "ViewState", "LazyArray"]]
_REGION: list[Callable[[Chain, Any, Any], bool]] = []


def install_assign(assign: Callable[[LazyArray, Any, Any], None],
                   region: Callable[[Chain, Any, Any], bool]) -> None:
    """Give ``LazyArray.write_through`` the assignment into one array and the dense region
    write into the top array of a view chain."""
    _ASSIGN[:] = [assign]
    _REGION[:] = [region]


_SCALAR_SPEC = format_spec("dense", 0)


def computed_scalar(value: np.ndarray, fill: Any) -> LazyArray:
    """A computed 0-d array holding ``value`` (a 1-entry array of a supported dtype, owned
    by the result), without the generic constructor's checks: iteration and the fold of
    computed scalars (``elementwise.scalar_now``) make one per entry or operation."""
    return LazyArray.from_tensor(Tensor.dense_result((), _SCALAR_SPEC, value, fill))


def _elements(values: np.ndarray, fill: Any) -> Iterator[LazyArray]:
    """The entries of a dense vector as computed 0-d arrays (each its own copy)."""
    for k in range(values.shape[0]):
        yield computed_scalar(values[k:k + 1].copy(), fill)


class LazyArray(ArrayOperators, NumpyMethods, ScipyMethods):
    """A lazily evaluated (possibly sparse) array of the lazysparse namespace: its Python
    operators, indexing and transposes are ``api/array/array_operators.py``'s (generated from the
    operator registry), plus the ndarray methods of ``api/protocols/numpy_methods.py``
    that NumPy-based
    libraries such as Dask call, and scipy's linear-operator protocol and conversions of
    ``api/protocols/scipy_methods.py``."""

    __slots__ = ("_expr", "_shape", "_dtype", "_fill_value", "_device", "_format",
                 "_requested_format", "_result", "_update", "_depth", "_size", "_epoch",
                 "_full", "_stored_full", "_stored", "_pending", "_reduces", "_view", "_version",
                 "_strides", "__weakref__")

    def __init__(self, expr: Subquery, shape: tuple[int, ...], dtype: np.dtype,
                 fill_value: Any, device: Device = CPU, format: str | None = None,
                 requested_format: FormatSpec | None = None, full: bool | None = None,
                 extent: tuple[int, int, float] | None = None) -> None:
        """``extent``: the history extent a builder knows (``operands_extent``; it checked
        its operands' devices too); else found by ``history_extent``'s walk of the new
        nodes."""
        global _CUDA_SEEN
        if device.name == "cuda":
            _CUDA_SEEN = True
        if _CUDA_SEEN and extent is None:  # until a cuda array exists all are on the cpu
            check_same_device(device, expr)
        self._expr = expr
        if type(shape) is not tuple or not _plain_shape(shape):
            shape = check_extents(tuple(int(d) for d in shape))
        self._shape = shape
        dt = self._dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        self._fill_value = fill_value if fill_value is None or type(fill_value) is dt.type \
            else dt.type(fill_value)
        self._device = device
        self._format = format
        self._requested_format = requested_format
        self._full = full
        # (the stored levels, whether they are all full): ``full`` of a computed array
        self._stored_full: tuple[Any, bool] | None = None
        self._result: Tensor | None = None
        self._update: Any = None  # api.setitem's state: ownership, pending sparse entries
        self._stored: int | None = None  # largest_stored(), once asked
        self._reduces: bool | None = None  # runs_reduction(), once asked
        # views (view_of): the array NumPy would share memory with, and how to follow it
        self._view: ViewState | None = None
        self._version = 0  # bumped by every write into this array (write_through)
        self._strides: tuple[int, ...] | None = None  # a view's NumPy strides (views.py)
        self._depth, self._size, self._epoch = extent or history_extent(expr)
        register(expr.lhs.name, self)
        # an uncomputed array with a history: a value a later compute may keep
        self._pending = held_values.register_pending(self) if self._depth else None
        if self._depth > MAX_PLAN_DEPTH or self._size > MAX_PLAN_NODES:
            # bounded plans: a loop that never computes materializes here, so no plan,
            # pass, key or kernel grows with the length of the user's history
            compute_arrays((self,), keep_regions=True)

    @classmethod
    def from_tensor(cls, tensor: Tensor | Any, device: Device | None = None) -> LazyArray:
        """Wrap a stored tensor (no copy) as a lazy leaf on ``device`` (default: where the
        tensor lives; a tensor on the other device is copied there, e.g. the host result
        of an eager function of a cuda array)."""
        on_gpu = is_device_tensor(tensor)
        if device is None:
            device = Device("cuda") if on_gpu else CPU
        if device.name == "cuda" and not on_gpu:
            tensor = to_cuda(tensor)
        elif device.name == "cpu" and on_gpu:
            tensor = to_host(tensor)

        expr = Subquery(fresh_alias(), Table(Immediate(tensor), fresh_fields(tensor.ndim)))
        arr = cls(expr, tensor.shape, tensor.dtype, tensor.fill_value, device, tensor.format)
        arr._result = tensor
        return arr

    # --- metadata (eager, never computes) ---
    @property
    def expr(self) -> Subquery:
        """The Finch-Logic expression of this array (its fields are its axes)."""
        self._sync()
        return self._expr

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def fill_value(self) -> Any:
        """The value of unstored entries (a view's follows its array: a whole-array write
        into a sparse array can change it)."""
        if self._view is not None:
            self._refresh()
        return self._fill_value

    @property
    def full(self) -> bool:
        """Whether the array has no implicit region (dense: every entry is stored, or a
        field used as a value), so its nominal fill value decides nothing (the fill rule of
        docs/api.md). Known without computing: stored tensors say it, expressions follow
        the registry's rule (``logic.inference.infer_region``)."""
        if self._view is not None:
            self._refresh()
        result = self._result
        if result is not None:
            # read once per stored levels (a tensor's levels decide it; each operation on
            # a leaf asks: formats.Tensor.full walks them)
            levels = getattr(result, "levels", None)
            known = self._stored_full
            if known is not None and known[0] is levels and levels is not None:
                return known[1]
            full = bool(getattr(result, "full", True))
            self._stored_full = (levels, full)
            return full
        if self._full is None:
            self._full = infer_region(self._expr.arg, _known_region)[1]
        return self._full

    @property
    def format(self) -> str | None:
        """The storage format name once known (leaves, computed results, asformat)."""
        if self._view is not None:
            self._refresh()
        if self._result is not None:
            return self._result.format
        return self._format

    @property
    def requested_format(self) -> FormatSpec | None:
        """The format ``asformat`` asked for, which the optimizer keeps."""
        return self._requested_format

    # --- results ---
    @property
    def result(self) -> Tensor | None:
        """The computed tensor (a ``DeviceTensor`` on device cuda), or None when not
        computed yet."""
        self._sync()
        return self._result

    def _leaf(self) -> None:
        """This array's expression is data now: it adds nothing to later plans."""
        self._depth = self._size = 0
        self._epoch = _NO_HISTORY

    def largest_stored(self) -> int:
        """The most entries any tensor in this array's expression stores (a leaf's: its
        tensor's). Found once per array: each live array the expression reads answers for
        its own history (``_added_nodes``), so a chain of reductions walks no node twice."""
        if self._stored is None:
            largest = 0
            for n in _added_nodes(self._expr):
                if isinstance(n, LazyArray):
                    largest = max(largest, n.largest_stored())
                elif isinstance(n, Table):
                    largest = max(largest, int(getattr(n.tns.val, "nnz", 0)))
            self._stored = largest
        return self._stored

    def runs_reduction(self) -> bool:
        """Whether this array's uncomputed history runs a reduction (an ``Aggregate``), found
        once per array like ``largest_stored`` (an array computed since still counts: a
        bound, which only costs the caller a walk)."""
        if self._reduces is None:
            self._reduces = self._result is None and any(
                n.runs_reduction() if isinstance(n, LazyArray) else isinstance(n, Aggregate)
                for n in _added_nodes(self._expr))
        return self._reduces

    @property
    def history_epoch(self) -> float:
        """``memo.EPOCH`` when the oldest uncomputed part of this array's history was
        built (infinite for a leaf): no result memoized since means none to substitute."""
        return self._epoch

    def set_result(self, tensor: Tensor | Any) -> None:
        """Store the computed tensor and make this array a leaf: its expression becomes a
        ``Table`` of the tensor under the same alias, so expressions built from it later
        hold the data, not the history; expressions built before read the memoized result
        while they live (``memo.memoize``)."""
        self._result = tensor
        self._stored = None
        self._reduces = False
        if self._pending is not None:
            held_values.forget(self._pending)
            self._pending = None
        old = self._expr
        if not isinstance(old.arg, Table):
            self._expr = Subquery(old.lhs, Table(Immediate(tensor),
                                                 fresh_fields(len(tensor.shape))))
            memo.memoize(old, tensor)
        self._depth = self._size = 0  # ``_leaf``, inlined (per compute)
        self._epoch = _NO_HISTORY

    def _sync(self) -> None:
        """Bring a view up to date with its array (:meth:`_refresh`) and merge the sparse
        entries ``__setitem__`` queued into the storage (``api.setitem``: new coordinates
        are batched until the array is next read)."""
        if self._view is not None:
            self._refresh()
        if self._update is not None and self._update.dirty:
            self._update.flush(self)

    def tensor(self) -> Tensor:
        """Compute (once) and return the stored ``formats.Tensor``; for an array on device
        cuda, a host copy of it (the device tensor is ``stored()``)."""
        t = self.stored()
        if is_device_tensor(t):
            return to_host(t)
        return t

    def stored(self) -> Tensor | Any:
        """Compute (once) and return the stored tensor where it lives (a ``Tensor``, or a
        ``backends.cuda.DeviceTensor`` on device cuda)."""
        self._sync()
        if self._result is None:
            compute_arrays((self,))
        assert self._result is not None
        return self._result

    def __lazysparse_tensor__(self) -> Tensor:
        return self.tensor()

    @property
    def nnz(self) -> int:
        """Number of stored entries (computes the array)."""
        return self.stored().nnz

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        t = self.tensor()
        try:
            out = t.to_numpy()
        except DensifyError as e:
            if all(is_located(lv.kind) for lv in t.levels):
                raise
            raise DensifyError(f"{e} For a sparse scipy copy without densifying (not "
                               f"scipy.sparse.csr_array(x)), use xp.to_scipy(x) or x.tocsr()."
                               ) from None
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        return out

    # NumPy's protocols: np.exp(x), ndarray + x, np.sum(x, axis=0) stay lazy
    # (api/protocols/numpy_dispatch.py, api/protocols/numpy_functions.py; docs/numpy.md)
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return numpy_dispatch.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return numpy_functions.array_function(func, types, args, kwargs, LazyArray)

    # --- views and writes (docs/api.md "Views and writes") ---
    def view_of(self, parent: LazyArray, link: ViewLink, strides: tuple[int, ...]
                ) -> LazyArray:
        """Mark this array as what NumPy would make a view of ``parent`` (basic indexing,
        transposes, reshapes) and return it: a write into it is repeated in ``parent``
        (:meth:`write_through`), and after a write into ``parent`` (or through any other
        view of it) it takes its value again from ``parent`` when next read
        (:meth:`_refresh`). ``link`` says how (``ViewLink``); ``strides`` are the NumPy
        view's (in elements: which later reshape is a view, ``views.reshaped_strides``)."""
        if self is parent:
            return self
        self._strides = strides
        above = parent._view
        self._view = ViewState(parent, link, above is not None and above.parent() is not None)
        return self

    def _refresh(self) -> None:
        """A view whose array was written since its value was taken takes it again
        (``link.read``), the arrays above it first, top-down, in a loop (no recursion on a
        long chain). Nothing to do when no write happened anywhere since the last look
        (``WRITES``); a view whose array has died keeps its value and is no view any more."""
        state = self._view
        now = WRITES.now
        if state is None or state.checked == now:
            return
        chain: list[tuple[LazyArray, ViewState, LazyArray]] = []
        view = self
        while state is not None and state.checked != now:
            parent = state.parent()
            if parent is None:
                view._view = None
                break
            chain.append((view, state, parent))
            view, state = parent, parent._view
        for view, state, parent in reversed(chain):
            if parent._version != state.seen:
                view.replace_with(state.link.read(parent, view))
                view._version += 1  # its own views follow in turn
                state.seen = parent._version
            state.checked = now

    def write_through(self) -> None:
        """After a write into this array (``__setitem__``, ``+=``, ``@=``): a new write
        version, and the same write into the array it views, that one's array and so on up
        the chain (a loop), as NumPy's shared memory would make it; every other view of
        them follows when next read. A view whose array has died takes the write alone.
        A chain over dense storage takes it as one region write (:meth:`write_region`)."""
        if self.write_region(None, self):
            return
        self._version += 1
        for view, state, parent in self._chain():
            key, value = state.link.write(parent, view)
            _ASSIGN[0](parent, key, value)
            parent._version += 1
            state.seen = parent._version  # the view and its array agree
        WRITES.tick()

    def write_region(self, key: Any, value: Any) -> bool:
        """``self[key] = value`` (``key`` None: all of it) written straight into the dense
        storage of the top array of this view's chain, through the NumPy views the links
        make of it (``setitem.write_region``: copy-on-write, no coordinates). Every array of
        the chain gets a new write version; the views between (and this one, for a key)
        take their value again when next read (with no key, this one holds the value
        written and agrees with its array). False (nothing written) when this is no view
        or the chain cannot take it so (sparse or lazy storage, a copying reshape)."""
        if self._view is None:
            return False
        chain = self._chain()
        if not chain or not _REGION[0](chain, key, value):
            return False
        self._version += 1
        for _view, _state, parent in chain:
            parent._version += 1
        if key is None:
            chain[0][1].seen = chain[0][2]._version
        WRITES.tick()
        return True

    def _chain(self) -> Chain:
        """``(view, state, parent)`` from this array up to the top living array of its
        chain (a view whose array has died is no view any more)."""
        chain: Chain = []
        view = self
        while (state := view._view) is not None:
            parent = state.parent()
            if parent is None:
                view._view = None
                break
            chain.append((view, state, parent))
            view = parent
        return chain

    # --- functional updates ---
    def replace_with(self, other: LazyArray) -> None:
        """Make this array the value of ``other`` (same shape): its plan is replaced, the
        data it was built from is left untouched (``__setitem__``, in-place operators)."""
        other._sync()
        self._expr = other._expr
        self._stored = other._stored
        self._reduces = other._reduces
        register(self._expr.lhs.name, self)
        self._dtype = other._dtype
        self._fill_value = other._fill_value
        self._format = other._format
        self._requested_format = other._requested_format
        self._result = other._result
        self._depth, self._size, self._epoch = other._depth, other._size, other._epoch
        self._update = None  # last: a reader on another thread sees the old merge pending
        held_values.forget(self._pending)
        self._pending = held_values.register_pending(self) if self._depth else None

    def copy(self) -> LazyArray:
        """A new array object with the same value (plans are immutable: nothing is copied)."""
        self._sync()
        out = LazyArray(self._expr, self._shape, self._dtype, self._fill_value, self._device,
                        self._format, self._requested_format)
        out._result = self._result
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the stored tensor (a lazy array is computed first): a plan names its
        arrays by aliases of this process, which mean other arrays in another one
        (dask.distributed ships chunks between processes; docs/dask.md)."""
        return (LazyArray.from_tensor, (self.tensor(), self._device))

    # --- observation (each computes once) ---
    def _scalar(self, what: str) -> Any:
        """The one value of a 0-d array (``float``, ``item``, ``bool``...): computed once; a
        host tensor's value read without ``tensor()``'s steps (a view or queued entries to
        bring up to date, a device copy) when there are none (a scalar read in a loop)."""
        if self._shape:
            raise TypeError(f"{what}() of a lazysparse array needs a 0-d array, got shape "
                            f"{self.shape}")
        if self._view is None and self._update is None:  # ``_sync`` would do nothing
            if self._result is None:
                compute_arrays((self,))
            t = self._result
            if type(t) is Tensor:
                return t.values[0]  # a 0-d tensor stores its one value (no levels)
        return self.tensor().values[0]

    def __bool__(self) -> bool:
        if self.ndim != 0 and self.size == 1:  # NumPy's truth value of a one-element array
            return bool(np.asarray(self.tensor().to_numpy()).reshape(-1)[0])
        return bool(self._scalar("bool"))

    def __int__(self) -> int:
        v = self._scalar("int")
        if self._dtype.kind == "c":
            raise TypeError("int() of a complex array is not defined")
        if self._dtype.kind == "f" and not np.isfinite(v):
            raise (OverflowError if np.isinf(v) else ValueError)(f"cannot convert {v} to int")
        return int(v)

    def __float__(self) -> float:
        v = self._scalar("float")
        if self._dtype.kind == "c":
            raise TypeError("float() of a complex array is not defined; use real()/abs()")
        return float(v)

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index, not {self._dtype}")
        return int(self._scalar("index"))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d lazysparse array")
        return self._shape[0]

    def __iter__(self) -> Any:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d lazysparse array")
        if self.ndim == 1 and self.device.name == "cpu":
            t = self.tensor()  # computed once; its elements are copied out, as NumPy's
            if all(is_located(lv.kind) for lv in t.levels):
                return _elements(t.values, t.fill_value)
        return (self[i] for i in range(self._shape[0]))

    def __repr__(self) -> str:
        if self._result is None:  # an uncomputed array shows its plan, never its values
            return display.lazy_repr(self)
        t = self.tensor()
        fmt = f", format={self.format!r}" if self.format not in (None, "dense") else ""
        if t.format != "dense" and self.size > _REPR_MAX_SPARSE_SIZE:
            # a large sparse array is summarized, never densified
            return (f"<lazysparse array shape={self.shape} dtype={self._dtype}{fmt}, "
                    f"nnz={t.nnz}, fill_value={self._fill_value!r}>")
        body = np.array2string(t.to_numpy(), separator=", ", prefix="lazysparse.asarray(")
        return f"lazysparse.asarray({body}, dtype={self._dtype}{fmt})"

    def _repr_html_(self) -> str:
        return display.array_html(self)  # Jupyter's display: computes nothing

    def __str__(self) -> str:
        t = self.tensor()
        if t.format != "dense" and self.size > _REPR_MAX_SPARSE_SIZE:
            return repr(self)
        return str(t.to_numpy())

    def __format__(self, spec: str) -> str:
        """NumPy's ``format``: a 0-d array formats its scalar (``f"{x:.3g}"``); an empty
        spec is ``str``; any other spec on an n-d array is a TypeError."""
        if self.ndim == 0:
            return format(self._scalar("format")[()], spec)
        if spec:
            raise TypeError("unsupported format string passed to LazyArray.__format__")
        return str(self)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        kwargs: dict[str, Any] = {}
        if self._device.name == "cuda":
            arr = dense_array(self.stored())
            if stream is not None:
                kwargs["stream"] = stream
        elif stream is not None:
            raise BufferError("lazysparse CPU arrays take no stream")
        else:
            arr = self.__array__()
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return arr.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        if self._device.name == "cuda":
            dev = getattr(self.stored().values, "device", None)
            return (2, int(getattr(dev, "id", 0)))  # kDLCUDA, device ordinal
        return (1, 0)  # kDLCPU

    def to_device(self, device: Any, /, *, stream: Any = None) -> LazyArray:
        """This array on ``device`` (computes it: moving data needs values). ``"cuda"``
        copies the storage arrays to the GPU (``formats.device.to_cuda``), ``"cpu"``
        back (``to_host``)."""
        dev = as_device(device, "to_device") if device != self._device else self._device
        if dev is None:
            raise ValueError("to_device: device must not be None")
        if stream is not None:
            raise ValueError("to_device: lazysparse arrays take no stream")
        t = self.stored()
        if dev == self._device:
            return self
        return LazyArray.from_tensor(t, dev)

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12",
                                                           "2024.12"):
            raise ValueError(f"lazysparse does not implement Array API version {api_version!r}")
        import lazysparse

        return lazysparse
