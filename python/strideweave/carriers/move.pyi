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
    """The base of the operations that move a tensor into another carrier.

    forward(tensor, destination) validates the move, makes the result Tensor over destination,
    runs _copy(tensor, destination, output, element_count) and releases the source carrier once
    it returned. Subclasses implement _copy; the class attributes source_class and
    destination_class, when not None, pin the exact carrier classes the operation accepts. They
    are read when the class is first instantiated or registered.

    Returns:
        MoveOperation: the operation.

    Examples:
        >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
        >>> from strideweave.carriers.move import MoveOperation
        >>> class Copy(MoveOperation):
        ...     def _copy(self, tensor, destination, output, element_count):
        ...         for i in range(tensor.size()):
        ...             output[i] = tensor[i]
        >>> t = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> Copy().forward(t, Generic([0.0, 0.0]))[1]
        2.0
    """

    source_class: ClassVar[type[Carrier] | None]
    destination_class: ClassVar[type[Carrier] | None]
    def _copy(
        self, tensor: Tensor, destination: Carrier, output: Tensor, element_count: int, /
    ) -> None:
        """Performs one move's transfer: fills destination so that output holds tensor's values.

        The base raises NotImplementedError; the built-in classes run their native copy.

        Args:
            tensor: the Tensor being moved.
            destination: the receiving carrier.
            output: the result Tensor over destination.
            element_count: the layout's cosize, the slots covered.

        Returns:
            None.

        Examples:
            >>> from strideweave.carriers.move import MoveOperation
            >>> MoveOperation()._copy(None, None, None, 0)
            Traceback (most recent call last):
            NotImplementedError: MoveOperation._copy must be implemented
        """

class ElementwiseMoveOperation(MoveOperation):
    """The move of every pair without a registered operation: output[i] = tensor[i] for every
    logical index.

    Holes of the destination keep their values; the destination's version rises once per
    element.

    Returns:
        ElementwiseMoveOperation: the operation.

    Examples:
        >>> from strideweave import CPU
        >>> from strideweave.carriers.move import dispatch_move
        >>> dispatch_move(CPU, CPU) is ElementwiseMoveOperation
        True
    """

class CpuToFileBackedMoveOperation(MoveOperation):
    """The bulk move from CPU to FileBacked: the layout's whole physical span, holes included,
    written to the file in large pieces.

    Pinned to exactly CPU sources and FileBacked destinations; the destination's version is
    unchanged.

    Returns:
        CpuToFileBackedMoveOperation: the operation.

    Examples:
        >>> from strideweave import CPU, FileBacked
        >>> CpuToFileBackedMoveOperation.source_class is CPU
        True
    """

class FileBackedToCpuMoveOperation(MoveOperation):
    """The bulk move from FileBacked to CPU: the layout's whole physical span read from the file in
    large pieces.

    Pinned to exactly FileBacked sources and CPU destinations; the destination's version is
    unchanged.

    Returns:
        FileBackedToCpuMoveOperation: the operation.

    Examples:
        >>> from strideweave import CPU, FileBacked
        >>> FileBackedToCpuMoveOperation.destination_class is CPU
        True
    """

class CpuToBlockDeviceMoveOperation(MoveOperation):
    """The bulk move from CPU to BlockDeviceCarrier: one device transfer of the layout's whole
    physical span, holes included, from the tensor's offset to the destination's slot 0.

    Pinned to exactly CPU sources and BlockDeviceCarrier destinations; the destination cannot
    grow ('too small' before any I/O) and its version rises by one. The pair is a protected
    built-in of the move registry.

    Returns:
        CpuToBlockDeviceMoveOperation: the operation.

    Examples:
        >>> from strideweave import CPU, BlockDeviceCarrier
        >>> CpuToBlockDeviceMoveOperation.destination_class is BlockDeviceCarrier
        True
    """

class BlockDeviceToCpuMoveOperation(MoveOperation):
    """The bulk move from BlockDeviceCarrier to CPU: one device transfer of the layout's whole
    physical span, holes included, to the destination from slot 0.

    Pinned to exactly BlockDeviceCarrier sources and CPU destinations; the destination's
    version rises by one, also when the transfer fails (the completed prefix stays). The pair
    is a protected built-in of the move registry.

    Returns:
        BlockDeviceToCpuMoveOperation: the operation.

    Examples:
        >>> from strideweave import CPU, BlockDeviceCarrier
        >>> BlockDeviceToCpuMoveOperation.source_class is BlockDeviceCarrier
        True
    """

def dispatch_move(
    source_class: type[Carrier], destination_class: type[Carrier]
) -> type[MoveOperation]:
    """The move operation class for the exact carrier class pair.

    Matches classes by identity: a subclass does not inherit its parent's entry. Pairs without
    an entry use ElementwiseMoveOperation.

    Args:
        source_class: a Carrier subclass.
        destination_class: a Carrier subclass.

    Returns:
        type: a MoveOperation subclass.

    Examples:
        >>> from strideweave import CPU, FileBacked
        >>> from strideweave.carriers.move import dispatch_move
        >>> dispatch_move(CPU, FileBacked).__name__
        'CpuToFileBackedMoveOperation'
        >>> dispatch_move(CPU, CPU).__name__
        'ElementwiseMoveOperation'
    """

def register_move_operation(
    source_class: type[Carrier],
    destination_class: type[Carrier],
    operation_class: type[MoveOperation],
) -> None:
    """Registers operation_class for the exact carrier class pair in the process-global move
    registry.

    The entry applies to these two classes only, not to subclasses. A pair that already has an
    entry (built-in ones included) is refused and keeps it.

    Args:
        source_class: a Carrier subclass.
        destination_class: a Carrier subclass.
        operation_class: a MoveOperation subclass.

    Returns:
        None.

    Examples:
        >>> from strideweave import Generic
        >>> from strideweave.carriers.move import ElementwiseMoveOperation, dispatch_move, register_move_operation, unregister_move_operation
        >>> class Mine(Generic): ...
        >>> class MyMove(ElementwiseMoveOperation): ...
        >>> register_move_operation(Mine, Generic, MyMove)
        >>> dispatch_move(Mine, Generic) is MyMove
        True
        >>> unregister_move_operation(Mine, Generic) is MyMove
        True
    """

def unregister_move_operation(
    source_class: type[Carrier], destination_class: type[Carrier]
) -> type[MoveOperation]:
    """Removes the registry entry of the exact carrier class pair.

    Args:
        source_class: a Carrier subclass.
        destination_class: a Carrier subclass.

    Returns:
        type: the operation class that was registered.

    Examples:
        >>> from strideweave import Generic
        >>> from strideweave.carriers.move import unregister_move_operation
        >>> unregister_move_operation(Generic, Generic)
        Traceback (most recent call last):
        KeyError: 'no move operation is registered for (Generic, Generic)'
    """

def registered_move_operation(
    source_class: type[Carrier],
    destination_class: type[Carrier],
    operation_class: type[MoveOperation],
) -> contextlib.AbstractContextManager[type[MoveOperation]]:
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

_T_co = TypeVar("_T_co", covariant=True)

@disjoint_base
class AwaitResult(Generic[_T_co]):
    """The completion handle of work the framework started.

    done tells whether the work reached its terminal outcome; wait() blocks until then and
    returns the value or raises the failure, the same on every call and from every thread.
    Handles are not awaitables: there is no __await__. Only the framework makes them.

    Returns:
        AwaitResult: not constructible from Python.

    Examples:
        >>> from strideweave.carriers.move import AwaitMove, AwaitResult
        >>> issubclass(AwaitMove, AwaitResult), hasattr(AwaitResult, '__await__')
        (True, False)
    """

    def __class_getitem__(cls, item: Any, /) -> GenericAlias:
        """See PEP 585."""
    @property
    def done(self) -> bool:
        """True once the work has a terminal outcome (success or failure).

        Returns:
            bool: whether wait() would return at once.

        Examples:
            >>> from strideweave import CPU, Layout, Shape, Stride, Tensor
            >>> from strideweave.carriers.move import move_async
            >>> move_async(Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))), CPU(1)).done
            True
        """
    def wait(self) -> _T_co:
        """Blocks until the work has its terminal outcome, then returns the value or raises the
        failure.

        Every call returns the identical object or raises the same exception. The GIL is released
        while waiting.

        Returns:
            object: the completed value (the moved Tensor for AwaitMove).

        Examples:
            >>> from strideweave import CPU, Layout, Shape, Stride, Tensor
            >>> from strideweave.carriers.move import move_async
            >>> h = move_async(Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))), CPU(1))
            >>> h.wait() is h.wait()
            True
        """

@final
class AwaitMove(AwaitResult[Tensor]):
    """The handle of one move_async call; wait() returns the moved Tensor.

    Returns:
        AwaitMove: not constructible from Python.

    Examples:
        >>> from strideweave.carriers.move import AwaitMove
        >>> AwaitMove()
        Traceback (most recent call last):
        TypeError: cannot create 'strideweave.carriers.move.AwaitMove' instances
    """

def move_async(tensor: Tensor, destination: Carrier) -> AwaitMove:
    """Starts moving tensor's values into destination and returns a completion handle.

    Validation (the checks of move, in the same order) happens now and raises directly. The move
    then owns both carriers until its outcome is recorded: is_owned() is True on both, and other
    threads' writes, release() and moves of them raise RuntimeError('Carrier is owned by a
    pending move and is not mutable', or 'tensor carrier is owned by a pending move'). A
    TransferRoute is prepared and submitted on this thread (a failing or refusing prepare raises
    here); a ProviderCompletion it returns, and a bulk CPU/FileBacked transfer of 1 MiB or more,
    complete on the library's background move executor while the call returns at once. Every
    other move completes before move_async returns. wait() gives the moved Tensor or raises the
    move's failure; the source carrier is released only when the move succeeds. Dropping the
    handle neither waits for nor cancels the move.

    Args:
        tensor: the Tensor to move (one Tensor, not a sequence).
        destination: a live, mutable Carrier of tensor's dtype (one carrier, not a sequence).

    Returns:
        AwaitMove: the handle of the move.

    Examples:
        >>> from strideweave import CPU, FileBacked, Layout, Shape, Stride, Tensor
        >>> from strideweave.carriers.move import move_async
        >>> t = Tensor(CPU(2), 0, Layout(Shape(2), Stride(1)))
        >>> handle = move_async(t, FileBacked(dtype=t.carrier.dtype()))
        >>> m = handle.wait()
        >>> handle.done, handle.wait() is m, t.carrier.is_released()
        (True, True, True)
    """
