from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Subtensor", "TensorRepresentation"]

@dataclass(frozen=True, eq=False)
class Subtensor:
    """One storage plane of a tensor: its dtype, carrier, offset and placement.

    Args:
        storage_dtype: the plane's simple dtype; the carrier's must be identical.
        carrier: the carrier holding the plane.
        offset: where the placement starts in the carrier (an int, >= 0).
        placement_layout: the layout of the plane's values in the carrier.

    Returns:
        Subtensor: the value (checked with its representation).

    Examples:
        >>> import strideweave as sw
        >>> from strideweave.core._representation import Subtensor
        >>> s = Subtensor(sw.DType.Float32, sw.CPU(2), 0, sw.Layout.leaf(2, 1))
        >>> s.offset, s.placement_layout
        (0, 2:1)
    """

    storage_dtype: Any
    carrier: Any
    offset: Any
    placement_layout: Any

@dataclass(frozen=True, eq=False)
class TensorRepresentation:
    """A logical dtype, its subtensors and the adjacent layouts between them.

    The library checks it when it is made, in this order: the storage schema
    (a ``CompoundDType`` of n planes needs n subtensors and n - 1 adjacent
    layouts, each subtensor of its plane's dtype), then for each subtensor
    its carrier's dtype, one exact carrier class for all, the offset and the
    placement inside the carrier, then each adjacent layout's shape and
    reach. Failures raise ValueError (TypeError for carriers of two classes
    and for values of the wrong kind).

    Args:
        logical_dtype: a ``DType`` or a ``CompoundDType``.
        subtensors: the subtensors, primary first.
        adjacent_layouts: one layout per pair of neighbouring subtensors.

    Returns:
        TensorRepresentation: the validated value.

    Examples:
        >>> import strideweave as sw
        >>> from strideweave.carriers.compound_dtype import CompoundDType
        >>> from strideweave.core._representation import Subtensor, TensorRepresentation
        >>> mx = CompoundDType("mx", [sw.DType.Float32, sw.DType.Float32])
        >>> one = Subtensor(sw.DType.Float32, sw.CPU(2), 0, sw.Layout.leaf(2, 1))
        >>> TensorRepresentation(mx, [one], [])
        Traceback (most recent call last):
        ValueError: CompoundDType 'mx' requires 2 subtensors, got 1
    """

    logical_dtype: Any
    subtensors: Sequence[Subtensor]
    adjacent_layouts: Sequence[Any]
    def __post_init__(self) -> None: ...
    @property
    def primary(self) -> Subtensor:
        """Subtensor 0, which ``Tensor.carrier``, ``offset`` and ``layout`` read.

        Returns:
            Subtensor: the first subtensor.

        Examples:
            >>> import strideweave as sw
            >>> from strideweave.core._representation import Subtensor, TensorRepresentation
            >>> c = sw.CPU(2)
            >>> one = Subtensor(sw.DType.Float32, c, 0, sw.Layout.leaf(2, 1))
            >>> TensorRepresentation(sw.DType.Float32, [one], []).primary.carrier is c
            True
        """
