"""Moving tensors between carriers: the move operations and their registry."""

import contextlib
from types import GenericAlias
from typing import Any, ClassVar, Generic, TypeVar, final

from typing_extensions import disjoint_base

from strideweave.carriers.base import Carrier
from strideweave.carriers.operation_helpers import Operation
from strideweave.tensor import Tensor

__all__ = [
    "AwaitMove",
    "AwaitResult",
    "BlockDeviceToCpuMoveOperation",
    "CpuToBlockDeviceMoveOperation",
    "CpuToFileBackedMoveOperation",
    "ElementwiseMoveOperation",
    "FileBackedToCpuMoveOperation",
    "MoveOperation",
    "dispatch_move",
    "move_async",
    "register_move_operation",
    "registered_move_operation",
    "unregister_move_operation",
]

class MoveOperation(Operation):
    """The base of the operations that move a tensor into another carrier."""

    source_class: ClassVar[type[Carrier] | None]
    destination_class: ClassVar[type[Carrier] | None]
    def _copy(
        self, tensor: Tensor, destination: Carrier, output: Tensor, element_count: int, /
    ) -> None: ...

class ElementwiseMoveOperation(MoveOperation): ...
class CpuToFileBackedMoveOperation(MoveOperation): ...
class FileBackedToCpuMoveOperation(MoveOperation): ...
class CpuToBlockDeviceMoveOperation(MoveOperation): ...
class BlockDeviceToCpuMoveOperation(MoveOperation): ...

def dispatch_move(
    source_class: type[Carrier], destination_class: type[Carrier]
) -> type[MoveOperation]: ...
def register_move_operation(
    source_class: type[Carrier],
    destination_class: type[Carrier],
    operation_class: type[MoveOperation],
) -> None: ...
def unregister_move_operation(
    source_class: type[Carrier], destination_class: type[Carrier]
) -> type[MoveOperation]: ...
def registered_move_operation(
    source_class: type[Carrier],
    destination_class: type[Carrier],
    operation_class: type[MoveOperation],
) -> contextlib.AbstractContextManager[type[MoveOperation]]: ...

_T_co = TypeVar("_T_co", covariant=True)

@disjoint_base
class AwaitResult(Generic[_T_co]):
    """The completion handle of work the framework started."""

    def __class_getitem__(cls, item: Any, /) -> GenericAlias: ...
    @property
    def done(self) -> bool: ...
    def wait(self) -> _T_co: ...

@final
class AwaitMove(AwaitResult[Tensor]): ...

def move_async(tensor: Tensor, destination: Carrier) -> AwaitMove: ...
