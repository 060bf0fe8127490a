"""Tensors: a carrier, an offset and a layout."""

from collections.abc import Sequence
from typing import Any, SupportsIndex, TypeAlias, overload

from typing_extensions import CapsuleType, disjoint_base

from strideweave.carriers.base import Carrier
from strideweave.carriers.compound_dtype import CompoundDType
from strideweave.carriers.dtype import DType
from strideweave.carriers.operation_helpers import Operation
from strideweave.core._representation import TensorRepresentation
from strideweave.core.layout import Layout

__all__ = ["Tensor"]

# A tensor key: a logical index, or a (nested) tuple/list coordinate.
_Key: TypeAlias = int | Sequence[Any]
# A key naming one element: a logical index or a (nested) coordinate of ints.
_Coordinate: TypeAlias = int | tuple[_Coordinate, ...] | list[_Coordinate]
# A key with a slice in it, at any level: a view (one entry per top-level mode).
_ViewPart: TypeAlias = int | slice | tuple[_ViewPart, ...] | list[_ViewPart]
_ViewKey: TypeAlias = slice | tuple[_ViewPart, ...] | list[_ViewPart]
# The value of one element: a float for Float32 and Floating, an int for
# Int32, a bool for Bool. The elements of a Generic carrier of DType.Any are
# whatever objects were stored, which this type does not describe: cast them.
_Element: TypeAlias = float | int | bool

class TensorIndexError(IndexError, ValueError):
    """An element key outside a tensor's domain: both IndexError and ValueError."""

@disjoint_base
class Tensor:
    """A view of a carrier: element i is carrier[offset + layout(i)].

    Several tensors (views) may share one carrier with different offsets and layouts; all of
    them see the carrier's one version counter. Element access takes an int (a logical index) or
    a tuple/list coordinate, nested for nested modes; missing trailing coordinates are 0 and
    extra ones are ignored; a key with a slice anywhere is a view (strideweave.view). The
    operators + - * / ** @ and unary - call add, sub, mul, div, pow, matmul and neg (o * t is
    mul(t, o)). Equality and hashing are by identity.

    Args:
        carrier: the Carrier holding the elements.
        offset: the index of the first element in the carrier, >= 0.
        layout: the Layout from logical coordinates to carrier indices.

    Returns:
        Tensor: the view.

    Raises:
        TypeError: a carrier that is not a Carrier, an offset that is not an int, a layout that
            is not a Layout.
        ValueError: 'Tensor offset must be non-negative', 'Tensor storage exceeds carrier size'
            (offset + layout.cosize must fit).

    Examples:
        >>> c = CPU(6)
        >>> t = Tensor(c, 0, Layout(Shape(2, 3), Stride(3, 1)))
        >>> t[1, 2] = 5.0
        >>> c[5], t[1, 2], t[[1, 2]], t.version
        (5.0, 5.0, 5.0, 1)
        >>> t.carrier is c, t.size(), t.dtype()
        (True, 6, <DType.Float32: 'Float32'>)
    """

    def __init__(self, carrier: Carrier, offset: SupportsIndex, layout: Layout) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    @property
    def carrier(self) -> Carrier:
        """The carrier object the tensor was made with.

        Returns:
            Carrier: the same object (tensor.carrier is carrier).

        Examples:
            >>> c = CPU(1)
            >>> Tensor(c, 0, Layout(Shape(1), Stride(1))).carrier is c
            True
        """
    @property
    def offset(self) -> int:
        """The carrier index of the first element.

        Returns:
            int: the offset, >= 0.

        Examples:
            >>> Tensor(CPU(3), 2, Layout(Shape(1), Stride(1))).offset
            2
        """
    @property
    def layout(self) -> Layout:
        """The layout object the tensor was made with.

        Returns:
            Layout: the same object (tensor.layout is layout).

        Examples:
            >>> Tensor(CPU(3), 0, Layout(Shape(3), Stride(1))).layout
            3:1
        """
    @property
    def version(self) -> int:
        """The carrier's version, read on every access.

        Returns:
            int: the version shared by every view of the carrier.

        Examples:
            >>> c = CPU(2)
            >>> t = Tensor(c, 0, Layout(Shape(2), Stride(1)))
            >>> c[0] = 1.0
            >>> t.version
            1
        """
    def size(self) -> int:
        """The number of logical elements: the layout's size.

        Returns:
            int: layout.shape.logical_size.

        Examples:
            >>> Tensor(CPU(8), 0, Layout(Shape(2, 2), Stride(4, 1))).size()
            4
        """
    @property
    def shape(self) -> tuple[int, ...]:
        """The top-level extents, as a tuple of ints.

        A hierarchical mode counts as its size: ((2,2),3) has shape (4, 3). Unlike
        PyTorch, size() stays the element count.

        Returns:
            tuple[int, ...]: one extent per top-level mode.

        Examples:
            >>> Tensor(CPU(12), 0, Layout(Shape([2, 2], 3), Stride([1, 2], 4))).shape
            (4, 3)
        """
    @property
    def ndim(self) -> int:
        """The number of top-level modes (the layout's rank).

        Returns:
            int: len(self.shape).

        Examples:
            >>> Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2))).ndim
            2
        """
    @property
    def T(self) -> Tensor:
        """The transpose of a two-mode tensor: a permute view (no copy).

        Returns:
            Tensor: permute(self, 1, 0), over the same carrier.

        Raises:
            ValueError: 'T requires a two-mode tensor'.

        Examples:
            >>> t = Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2)))
            >>> t.T.layout, t.T.carrier is t.carrier
            ((3,2):(2,1), True)
        """
    def numel(self) -> int:
        """The number of logical elements, as PyTorch names it (the same as size()).

        Returns:
            int: the layout's size.

        Examples:
            >>> Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2))).numel()
            6
        """
    def item(self) -> _Element:
        """The single value of a one-element tensor.

        Returns:
            object: the carrier's value (a float for Float32).

        Raises:
            ValueError: 'item requires a tensor with exactly one element'.

        Examples:
            >>> Tensor(CPU(1).new_like([2.5]), 0, Layout(Shape(1), Stride(1))).item()
            2.5
        """
    def tolist(self) -> Any:
        """The values as nested lists by top-level modes: mode 0 is the outermost list,
        so ``t.tolist()[i][j] == t[i, j]``.

        Returns:
            list: nested lists of the carrier's values (one level per mode).

        Examples:
            >>> t = Tensor(CPU(6).new_like([1, 2, 3, 4, 5, 6]), 0, Layout(Shape(2, 3), Stride(1, 2)))
            >>> t.tolist()
            [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
        """
    def numpy(self) -> Any:
        """A NumPy array of the values, indexed like the tensor by top-level modes.

        A CPU tensor whose layout DLPack can describe is shared without a copy (writes
        through either are seen by both); any other tensor (Generic, FileBacked,
        Evictable, hierarchical layouts) is copied. Needs NumPy.

        Returns:
            numpy.ndarray: float32 for Float32, int32 for Int32, float64 for
            Floating, object otherwise.

        Examples:
            >>> t = Tensor(CPU(6).new_like([1, 2, 3, 4, 5, 6]), 0, Layout(Shape(2, 3), Stride(1, 2)))
            >>> t.numpy().tolist()
            [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
        """
    def clone(self) -> Tensor:
        """A differentiable copy with the same layout (recorded as mul(self, 1)).

        Returns:
            Tensor: a fresh tensor over a new carrier of the same class.

        Examples:
            >>> t = Tensor(CPU(2).new_like([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
            >>> c = t.clone()
            >>> c.tolist(), c.carrier is t.carrier
            ([1.0, 2.0], False)
        """
    def get(self, key: int | Sequence[Any], /) -> _Element:
        """One element read by Python's indexing rules, beside t[key] (which keeps the
        reference's): a negative coordinate counts from its mode's end (a negative
        int key from the tensor's end), and more coordinates than modes, at any
        level, are refused.

        Args:
            key: an int (a logical index) or a (nested) tuple or list of ints.

        Returns:
            object: the carrier's value at that element.

        Raises:
            TypeError: for a key that is not ints and tuples or lists of ints.
            TensorIndexError: 'Key is not in domain of shape' when a coordinate
                stays outside its mode, 'Key has K coordinates for R modes' for
                extra coordinates (an IndexError and a ValueError).

        Examples:
            >>> t = Tensor(CPU(6).new_like([0.0, 1, 2, 3, 4, 5]), 0, Layout(Shape(2, 3), Stride(3, 1)))
            >>> t.get((-1, -1)), t.get(-1)
            (5.0, 5.0)
        """
    def set(self, key: int | Sequence[Any], value: Any, /) -> None:
        """Writes one element, the key read by Python's rules as in get().

        Args:
            key: an int (a logical index) or a (nested) tuple or list of ints.
            value: the value, converted as for t[key] = value.

        Returns:
            None

        Raises:
            TypeError: for a bad key or value.
            TensorIndexError: as get() does.
            RuntimeError: for an immutable or released carrier.

        Examples:
            >>> t = Tensor(CPU(2), 0, Layout(Shape(2), Stride(1)))
            >>> t.set(-1, 4.0)
            >>> t.tolist()
            [0.0, 4.0]
        """
    def _repr_html_(self) -> str:
        """The tensor for Jupyter: its repr, and the picture of its layout (strideweave.viz) when the
        layout has rank 1 or 2 and at most viz.REPR_LIMIT elements.

        Returns:
            str: HTML.
        """
    def detach(self) -> Tensor:
        """A new leaf over the same carrier, offset and layout: no autograd context, so
        gradients stop here; writes through either are seen by both.

        Returns:
            Tensor: Tensor(self.carrier, self.offset, self.layout).

        Examples:
            >>> t = Tensor(CPU(2), 0, Layout(Shape(2), Stride(1)))
            >>> d = t.detach()
            >>> d.carrier is t.carrier, d.autograd_ctx is None
            (True, True)
        """
    def is_mutable(self) -> bool:
        """Whether the carrier can be written now.

        Returns:
            bool: carrier.is_mutable().

        Examples:
            >>> Tensor(CPU(1, mutable=False), 0, Layout(Shape(1), Stride(1))).is_mutable()
            False
        """
    def dtype(self) -> DType | CompoundDType:
        """The carrier's element type.

        Returns:
            DType: carrier.dtype().

        Examples:
            >>> Tensor(Generic([1]), 0, Layout(Shape(1), Stride(1))).dtype()
            <DType.Floating: 'Floating'>
        """
    def is_differentiable(self) -> bool:
        """Whether the dtype is one autograd works on (Floating or Float32), and the tensor was not
        made a constant (requires_grad False).

        Returns:
            bool: differentiable.

        Examples:
            >>> Tensor(CPU(1, dtype=DType.Int32), 0, Layout(Shape(1), Stride(1))).is_differentiable()
            False
        """
    def carrier_type(self) -> type[Carrier]:
        """The class of the carrier.

        Returns:
            type: type(tensor.carrier).

        Examples:
            >>> Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))).carrier_type() is CPU
            True
        """
    @property
    def autograd_ctx(self) -> Operation | None:
        """The Operation that produced the tensor, or None for a leaf.

        Setting None is always allowed; setting an Operation on a non-differentiable tensor raises
        RuntimeError('autograd_ctx is not available for non-differentiable tensors').

        Returns:
            Operation | None: the context.

        Examples:
            >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
            >>> x.autograd_ctx is None, type((x * 2).autograd_ctx).__name__
            (True, 'GenericScalarMulOperation')
        """
    @autograd_ctx.setter
    def autograd_ctx(self, value: Operation | None) -> None: ...
    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient: None until backward reaches this tensor as a leaf (or one that retains grad).

        Reading or setting a gradient on a non-differentiable tensor raises RuntimeError('grad is
        not available for non-differentiable tensors'); a gradient is a Tensor or None.

        Returns:
            Tensor | None: the gradient, laid out like the tensor.

        Examples:
            >>> x = Tensor(Generic([3.0]), 0, Layout(Shape(1), Stride(1)))
            >>> (x * x).backward()
            >>> x.grad[0]
            6.0
        """
    @grad.setter
    def grad(self, value: Tensor | None) -> None: ...
    def retain_grad(self, retain: bool = True) -> None:
        """Makes backward store .grad on this non-leaf tensor too (or stop doing so).

        Args:
            retain: whether to keep the gradient.

        Returns:
            None.

        Raises:
            RuntimeError: 'retain_grad is not available for non-differentiable tensors'.

        Examples:
            >>> x = Tensor(Generic([3.0]), 0, Layout(Shape(1), Stride(1)))
            >>> y = x * 2
            >>> y.retain_grad()
            >>> (y * y).backward()
            >>> y.grad[0], x.grad[0]
            (12.0, 24.0)
        """
    @property
    def requires_grad(self) -> bool:
        """Whether the tensor takes part in autograd, as in PyTorch (beyond the reference).

        Reads as is_differentiable(). Every Float32 and Floating tensor starts with True, as the
        reference defines; setting False on a leaf makes it a constant for autograd: no gradient is
        computed for it or accumulated into it (backward skips that work, such as the input-gradient
        GEMM of a layer whose input batch is a constant), is_differentiable() is False, and while
        grad mode is on, results computed from constants and nothing differentiable are constants
        too. Setting True again makes it take part again.

        Returns:
            bool: whether it takes part in autograd.

        Raises:
            TypeError: a value that is not a bool.
            RuntimeError: a tensor that a recorded operation made ('requires_grad can only be
                changed on a leaf tensor ...'), or True on another dtype ('only tensors of a
                differentiable dtype ... can require gradients').

        Examples:
            >>> w = Tensor(CPU(0).new_like([2.0]), 0, Layout(Shape(1), Stride(1)))
            >>> x = Tensor(CPU(0).new_like([3.0]), 0, Layout(Shape(1), Stride(1)))
            >>> x.requires_grad = False
            >>> (w * x).backward()
            >>> w.grad[0], x.requires_grad
            (3.0, False)
        """
    @requires_grad.setter
    def requires_grad(self, value: bool) -> None: ...
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Sets requires_grad (see Tensor.requires_grad) and returns the tensor itself.

        Args:
            requires_grad: a bool.

        Returns:
            Tensor: self.

        Raises:
            TypeError: a value that is not a bool.
            RuntimeError: as for the requires_grad property.

        Examples:
            >>> x = Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))).requires_grad_(False)
            >>> x.requires_grad, x.is_differentiable()
            (False, False)
        """
    def backward(self, gradient: Tensor | None = None) -> None:
        """Reverse-mode differentiation from this tensor: every leaf (and every tensor that retains
        grad) reached accumulates its gradient in .grad.

        The pass is iterative: shared subgraphs sum their gradients before their operation runs, and
        each operation's backward runs once.

        Args:
            gradient: a Tensor with this tensor's layout; may be omitted only for an exact scalar
                (one flat top-level mode of extent 1).

        Returns:
            None.

        Raises:
            RuntimeError: 'backward is not available for non-differentiable tensors', 'A tensor
                needed for gradient computation was modified in-place: ...'.
            TypeError: 'Tensor.backward requires a Tensor gradient'.
            ValueError: 'Tensor.backward requires a gradient for non-scalar tensors', 'Tensor
                gradient layout must match tensor layout'.

        Examples:
            >>> x = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
            >>> y = x * x
            >>> y.backward(Tensor(Generic([1.0, 1.0]), 0, y.layout))
            >>> x.grad[0], x.grad[1]
            (2.0, 4.0)
        """
    @classmethod
    def backwards_traversal(cls, gradient: Tensor, operation: Operation | None) -> None:
        """Runs only the graph propagation from operation, seeded with gradient (the root itself
        accumulates nothing).

        Args:
            gradient: the gradient of operation's result.
            operation: the Operation to start from, or None (then nothing happens).

        Returns:
            None.

        Examples:
            >>> x = Tensor(Generic([2.0]), 0, Layout(Shape(1), Stride(1)))
            >>> y = x * 3
            >>> Tensor.backwards_traversal(Tensor(Generic([1.0]), 0, y.layout), y.autograd_ctx)
            >>> x.grad[0], y.grad
            (3.0, None)
        """
    @classmethod
    def _from_representation(cls, representation: TensorRepresentation, /) -> Tensor:
        """The tensor of a TensorRepresentation (private): the one way to a multi-subtensor tensor.

        The library validates the representation; Tensor(carrier, offset, layout) always builds one
        subtensor.

        Args:
            representation: a strideweave.core._representation.TensorRepresentation.

        Returns:
            Tensor: a tensor whose carrier, offset and layout are subtensor 0's.

        Examples:
            >>> from strideweave import CPU, DType, Layout, Tensor
            >>> from strideweave.core._representation import Subtensor, TensorRepresentation
            >>> c = CPU(2)
            >>> rep = TensorRepresentation(DType.Float32, [Subtensor(DType.Float32, c, 0, Layout.leaf(2, 1))], [])
            >>> Tensor._from_representation(rep).carrier is c
            True
        """
    @property
    def _representation(self) -> TensorRepresentation:
        """The tensor's representation (private): logical dtype, subtensors, adjacent layouts.

        Returns:
            TensorRepresentation: subtensor 0 holds the tensor's own carrier and layout objects.

        Examples:
            >>> from strideweave import CPU, Layout, Tensor
            >>> t = Tensor(CPU(2), 0, Layout.leaf(2, 1))
            >>> t._representation.primary.carrier is t.carrier, t._representation.adjacent_layouts
            (True, ())
        """
    def _version_token(self) -> tuple[tuple[int, int], ...]:
        """One (id(carrier), version) pair per unique carrier, in order of first appearance (private).

        Returns:
            tuple[tuple[int, int], ...]: the token autograd would save.

        Examples:
            >>> from strideweave import CPU, Layout, Tensor
            >>> c = CPU(2)
            >>> Tensor(c, 0, Layout.leaf(2, 1))._version_token() == ((id(c), c.version),)
            True
        """
    def __add__(self, value: Any, /) -> Tensor:
        """Return self+value."""
    def __radd__(self, value: Any, /) -> Tensor:
        """Return value+self."""
    def __sub__(self, value: Any, /) -> Tensor:
        """Return self-value."""
    def __rsub__(self, value: Any, /) -> Tensor:
        """Return value-self."""
    def __mul__(self, value: Any, /) -> Tensor:
        """Return self*value."""
    def __rmul__(self, value: Any, /) -> Tensor:
        """Return value*self."""
    def __truediv__(self, value: Any, /) -> Tensor:
        """Return self/value."""
    def __rtruediv__(self, value: Any, /) -> Tensor:
        """Return value/self."""
    def __pow__(self, value: Any, mod: None = None, /) -> Tensor:
        """Return pow(self, value, mod)."""
    def __neg__(self) -> Tensor:
        """-self"""
    def __matmul__(self, value: Tensor, /) -> Tensor:
        """Return self@value."""
    # DLPack export (no import): a "dltensor" capsule, or a
    # "dltensor_versioned" one at version 1.0 for max_version major >= 1.
    def __dlpack__(
        self,
        stream: Any = None,
        *,
        max_version: tuple[int, int] | list[int] | None = None,
        dl_device: tuple[int, int] | list[int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """Exports the tensor's storage as a DLPack capsule, without copying.

        The capsule aliases the carrier's memory: shape and strides are the layout's leaf modes
        (strides in elements, stride 0 kept), byte_offset is offset * itemsize. It keeps this tensor
        alive until the consumer lets go, but not released storage. Only carriers whose
        dlpack_info() answers export (CPU), and only Float32 and Int32 tensors.

        Args:
            stream: accepted and ignored (export does no device work).
            max_version: the consumer's highest DLPack version (major, minor); major >= 1 gives a
                "dltensor_versioned" capsule at version 1.0 whose read-only flag is set when the
                tensor is not mutable, None or major 0 a legacy "dltensor" capsule.
            dl_device: the device the consumer wants; must be the tensor's.
            copy: a true value asks for a copy, which is not supported.

        Returns:
            A PyCapsule holding the managed tensor.

        Raises:
            BufferError: 'DLPack copy exports are not supported', 'DLPack is not supported for this
                carrier', 'DLPack data pointer must be non-null', 'DLPack cross-device exports are
                not supported for this tensor', 'DLPack export supports only Float32 and Int32
                tensors'.
            TypeError: 'DLPack dl_device must be a tuple or list', 'DLPack max_version must be a
                tuple or list'.
            ValueError: 'DLPack dl_device must have two elements', 'DLPack max_version must have two
                elements', 'DLPack max_version elements must be non-negative'.

        Examples:
            >>> t = Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2)))
            >>> type(t.__dlpack__()).__name__
            'PyCapsule'
            >>> t.__dlpack__(copy=True)
            Traceback (most recent call last):
            BufferError: DLPack copy exports are not supported
        """
    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack device of the tensor's carrier.

        Depends only on the carrier's dlpack_info(), so it answers for dtypes __dlpack__ refuses.

        Returns:
            (device_type, device_id); (1, 0) for CPU.

        Raises:
            BufferError: 'DLPack is not supported for this carrier', 'DLPack data pointer must be
                non-null'.

        Examples:
            >>> Tensor(CPU(2), 0, Layout(Shape(2), Stride(1))).__dlpack_device__()
            (1, 0)
        """
    # A key of ints names an element; a key with a slice anywhere is a view.
    # Every key of ints also fits the view key's type, so mypy calls the two
    # overlapping; the first, the element, is what the runtime gives for them.
    @overload
    def __getitem__(self, key: _Coordinate, /) -> _Element: ...  # type: ignore[overload-overlap]
    @overload
    def __getitem__(self, key: _ViewKey, /) -> Tensor: ...
    def __setitem__(self, key: _Key, value: Any, /) -> None:
        """Set self[key] to value."""
