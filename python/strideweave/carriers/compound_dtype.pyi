"""Compound dtypes: logical dtypes whose values span several storage planes."""

from collections.abc import Iterable
from typing import final

from strideweave.carriers.dtype import DType

__all__ = ["CompoundDType"]

@final
class CompoundDType:
    """A logical dtype whose values span several storage planes.

    Each plane is a simple ``DType`` (a value plane and a scale plane, for
    example), stored by a subtensor of its own; a tensor of a compound dtype
    is a multi-subtensor tensor (see ``strideweave.core._representation``).
    Carriers store only simple dtypes. Compound dtypes are values compared by
    identity: the same name and planes give the same object. The library
    checks the rules: a non-empty name and from 2 to 16 planes.

    Args:
        name: the dtype's name (a non-empty ``str``).
        simple_types: its planes in order, each a ``DType`` member.

    Returns:
        CompoundDType: the (interned) dtype.

    Examples:
        >>> from strideweave import DType
        >>> from strideweave.carriers.compound_dtype import CompoundDType
        >>> mx = CompoundDType("mx", [DType.Float32, DType.Float32])
        >>> mx.name, mx.simple_types
        ('mx', (<DType.Float32: 'Float32'>, <DType.Float32: 'Float32'>))
        >>> CompoundDType("mx", (DType.Float32, DType.Float32)) is mx
        True
        >>> CompoundDType("one", [DType.Float32])
        Traceback (most recent call last):
        ValueError: CompoundDType needs at least 2 planes and at most 16, got 1
    """

    def __new__(cls, name: str, simple_types: Iterable[DType]) -> CompoundDType: ...
    @property
    def name(self) -> str:
        """The dtype's name.

        Returns:
            str: the name given.

        Examples:
            >>> from strideweave import DType
            >>> from strideweave.carriers.compound_dtype import CompoundDType
            >>> CompoundDType("mx", [DType.Float32, DType.Int32]).name
            'mx'
        """
    @property
    def simple_types(self) -> tuple[DType, ...]:
        """The planes, in order.

        Returns:
            tuple[DType, ...]: one simple dtype per storage plane.

        Examples:
            >>> from strideweave import DType
            >>> from strideweave.carriers.compound_dtype import CompoundDType
            >>> CompoundDType("mx", [DType.Float32, DType.Int32]).simple_types[1]
            <DType.Int32: 'Int32'>
        """
    def __setattr__(self, name: str, value: object) -> None: ...
    def __delattr__(self, name: str) -> None: ...
    def __reduce__(self) -> tuple[type[CompoundDType], tuple[str, tuple[DType, ...]]]: ...
