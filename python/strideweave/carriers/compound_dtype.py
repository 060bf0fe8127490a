"""Compound dtypes: logical dtypes whose values span several storage planes."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import ClassVar, final

from strideweave import _native
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

    __slots__ = ("_name", "_simple_types", "__weakref__")
    _name: str
    _simple_types: tuple[DType, ...]

    _interned: ClassVar[dict[tuple[str, tuple[DType, ...]], CompoundDType]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __new__(cls, name: str, simple_types: Iterable[DType]) -> CompoundDType:
        planes = tuple(simple_types)
        _native._compound_check(name, planes)
        key = (name, planes)
        with cls._lock:
            found = cls._interned.get(key)
            if found is None:
                found = object.__new__(cls)
                object.__setattr__(found, "_name", name)
                object.__setattr__(found, "_simple_types", planes)
                cls._interned[key] = found
        return found

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
        return self._name

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
        return self._simple_types

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CompoundDType values are immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("CompoundDType values are immutable")

    def __reduce__(self) -> tuple[type[CompoundDType], tuple[str, tuple[DType, ...]]]:
        return (CompoundDType, (self._name, self._simple_types))

    def __repr__(self) -> str:
        planes = ", ".join(f"DType.{d.name}" for d in self._simple_types)
        return f"CompoundDType({self._name!r}, ({planes}))"
