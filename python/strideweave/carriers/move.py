"""Moving tensors between carriers: the move operations and their registry.

``move(tensor, destination)`` picks the :class:`MoveOperation` class
registered for the exact pair ``(type(tensor.carrier), type(destination))``
(:func:`dispatch_move`), or :class:`ElementwiseMoveOperation` when the pair
has no entry; :func:`move_async` starts the same move and returns an
:class:`AwaitMove` handle. The registry starts with the bulk transfers
``(CPU, FileBacked)`` and ``(FileBacked, CPU)``; entries apply to their exact
classes only, never to subclasses. The pairs ``(CPU, BlockDeviceCarrier)``
and ``(BlockDeviceCarrier, CPU)`` are protected built-ins that the registry
refuses to change, and every other pair with a BlockDeviceCarrier raises
NotImplementedError: there is no elementwise fallback for block devices.

Examples:
    >>> from strideweave import CPU, FileBacked
    >>> from strideweave.carriers.move import dispatch_move
    >>> dispatch_move(CPU, FileBacked).__name__
    'CpuToFileBackedMoveOperation'
    >>> class MyCPU(CPU): ...
    >>> dispatch_move(MyCPU, FileBacked).__name__
    'ElementwiseMoveOperation'
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Iterator

from strideweave import _native
from strideweave._native import (
    AwaitMove,
    AwaitResult,
    BlockDeviceToCpuMoveOperation,
    CpuToBlockDeviceMoveOperation,
    CpuToFileBackedMoveOperation,
    ElementwiseMoveOperation,
    FileBackedToCpuMoveOperation,
    MoveOperation,
    dispatch_move,
    move_async,
    register_move_operation,
    unregister_move_operation,
)
from strideweave.carriers.base import Carrier

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

# Asynchronous moves finish before the interpreter goes away.
atexit.register(_native._move_wait_idle)


@contextlib.contextmanager
def registered_move_operation(
    source_class: type[Carrier],
    destination_class: type[Carrier],
    operation_class: type[MoveOperation],
) -> Iterator[type[MoveOperation]]:
    """Registers a move operation for the ``with`` block.

    Entering registers ``operation_class`` for the exact pair (with the
    checks of :func:`register_move_operation`) and yields it; leaving
    unregisters the pair, also when the block raises. An exception of the
    block propagates.

    Args:
        source_class: a Carrier subclass.
        destination_class: a Carrier subclass.
        operation_class: a MoveOperation subclass.

    Returns:
        contextlib.AbstractContextManager[type[MoveOperation]]: the context
        manager, which yields ``operation_class``.

    Examples:
        >>> from strideweave import Generic
        >>> from strideweave.carriers.move import (
        ...     ElementwiseMoveOperation, dispatch_move, registered_move_operation)
        >>> class Mine(Generic): ...
        >>> class MyMove(ElementwiseMoveOperation): ...
        >>> with registered_move_operation(Mine, Generic, MyMove) as cls:
        ...     dispatch_move(Mine, Generic) is cls
        True
        >>> dispatch_move(Mine, Generic) is ElementwiseMoveOperation
        True
    """
    register_move_operation(source_class, destination_class, operation_class)
    try:
        yield operation_class
    finally:
        unregister_move_operation(source_class, destination_class)
