"""Moving tensors between carriers: the move operations and their registry."""

import contextlib
from typing import ClassVar

from strideweave.carriers.base import Carrier
from strideweave.carriers.operation_helpers import Operation
from strideweave.tensor import Tensor

__all__ = [
    "CpuToFileBackedMoveOperation",
    "ElementwiseMoveOperation",
    "FileBackedToCpuMoveOperation",
    "MoveOperation",
    "dispatch_move",
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
