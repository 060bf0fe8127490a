"""The Operation base class and the sealed lowered execution of operations."""

from typing import Any

from typing_extensions import disjoint_base

from strideweave.tensor import Tensor

__all__ = ["Operation", "execute_lowered_operation"]

@disjoint_base
class Operation:
    """An operation object: forward runs it and records the autograd context; backward returns one
    gradient per saved input.

    Subclass it in Python and implement _forward(*inputs) (returning a Tensor) and
    backward(gradient) (returning one Tensor or None per entry of inputs()). forward(*inputs)
    saves the Tensor inputs and their versions when grad mode is on and some input is
    differentiable, runs _forward, and makes a differentiable result's autograd_ctx this
    operation. ctx is a dict for the operation's own state.

    Returns:
        Operation: an operation whose hooks are its Python methods.

    Examples:
        >>> class Double(Operation):
        ...     def _forward(self, x):
        ...         return Tensor(x.carrier.new_like([2 * x[i] for i in range(x.size())]), 0, x.layout)
        ...     def backward(self, gradient):
        ...         return [gradient * 2]
        >>> x = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> op = Double()
        >>> y = op.forward(x)
        >>> y[1], y.autograd_ctx is op, op.inputs()[0] is x
        (4.0, True, True)
    """

    def __init__(self) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    @property
    def ctx(self) -> dict[Any, Any]:
        """The operation's state: a dict, the same object each time.

        Returns:
            dict: the context (native operations fill it as the reference documents, e.g. 'scalar',
                'output_layout').

        Examples:
            >>> op = Operation()
            >>> op.ctx['k'] = 1
            >>> op.ctx
            {'k': 1}
        """
    def forward(self, *inputs: Any) -> Tensor:
        """Runs the operation and records the autograd context.

        When grad mode is on and some input is a differentiable Tensor, every Tensor input is saved
        with its version; a differentiable result gets this operation as its autograd_ctx.
        Positional arguments only.

        Args:
            *inputs: the operation's arguments.

        Returns:
            Tensor: the result.

        Raises:
            TypeError: 'Operation._forward must return a Tensor', 'Operation._forward must be
                implemented'.

        Examples:
            >>> x = Tensor(Generic([1.0, -1.0]), 0, Layout(Shape(2), Stride(1)))
            >>> op = GenericReLUOperation()
            >>> y = op.forward(x)
            >>> y[0], y[1], y.autograd_ctx is op
            (1.0, 0, True)
        """
    def _forward(self, *inputs: Any) -> Tensor:
        """The computation (a hook: Python subclasses implement it).

        On a native operation it runs the computation without recording anything.

        Args:
            *inputs: the operation's arguments.

        Returns:
            Tensor: the result.

        Raises:
            TypeError: 'Operation._forward must be implemented' when a Python subclass has none.

        Examples:
            >>> Operation()._forward()
            Traceback (most recent call last):
            ...
            TypeError: Operation._forward must be implemented
        """
    def backward(self, gradient: Tensor, /) -> tuple[Tensor | None, ...]:
        """One gradient per saved input (a hook: Python subclasses implement it).

        Args:
            gradient: the gradient of the result, a Tensor with the result's layout.

        Returns:
            tuple: one Tensor (laid out like that input) or None per entry of inputs().

        Raises:
            RuntimeError: 'Tried to call pure virtual function "Operation::backward"' when a Python
                subclass has none.

        Examples:
            >>> x = Tensor(Generic([3.0]), 0, Layout(Shape(1), Stride(1)))
            >>> op = GenericScalarMulOperation()
            >>> y = op.forward(x, 2)
            >>> g = Tensor(Generic([1.0]), 0, y.layout)
            >>> op.backward(g)[0][0]
            2.0
        """
    def _execute_lowered(self, *inputs: Any) -> Tensor:
        """Runs _forward(*inputs) without touching the saved inputs or attaching an autograd context.

        Args:
            *inputs: the operation's arguments.

        Returns:
            Tensor: the result.

        Raises:
            TypeError: 'Operation._forward must return a Tensor'.

        Examples:
            >>> x = Tensor(Generic([2.0]), 0, Layout(Shape(1), Stride(1)))
            >>> y = GenericExpOperation()._execute_lowered(x)
            >>> round(y[0], 4), y.autograd_ctx
            (7.3891, None)
        """
    def store_inputs(self, *inputs: Tensor) -> None:
        """Replaces the saved inputs with exactly these tensors (the saved versions are kept).

        Args:
            *inputs: Tensors.

        Returns:
            None.

        Raises:
            TypeError: 'Operation inputs must be Tensors'.

        Examples:
            >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
            >>> op = Operation()
            >>> op.store_inputs(x)
            >>> op.inputs()[0] is x
            True
        """
    def inputs(self) -> tuple[Tensor, ...]:
        """The saved inputs (empty when no graph was recorded).

        Returns:
            tuple: the saved Tensors, in argument order.

        Examples:
            >>> Operation().inputs()
            ()
        """
    def input_versions(self) -> tuple[int, ...]:
        """The versions of the saved inputs at forward time.

        Returns:
            tuple[int, ...]: one version per saved input.

        Examples:
            >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
            >>> op = GenericExpOperation()
            >>> _ = op.forward(x)
            >>> op.input_versions()
            (0,)
        """
    def validate_input_versions(self) -> None:
        """Checks that no saved input was written since forward.

        Returns:
            None.

        Raises:
            RuntimeError: 'A tensor needed for gradient computation was modified in-place: expected
                version X, got version Y'.

        Examples:
            >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
            >>> op = GenericExpOperation()
            >>> _ = op.forward(x)
            >>> x[0] = 2.0
            >>> op.validate_input_versions()
            Traceback (most recent call last):
            ...
            RuntimeError: A tensor needed for gradient computation was modified in-place: expected version 0, got version 1
        """
    @property
    def _operation_name(self) -> str | None:
        """The canonical name the operation was dispatched under, or None.

        Returns:
            str | None: the name.

        Examples:
            >>> Operation()._operation_name is None
            True
        """
    @property
    def _dispatch_carrier_class(self) -> type | None:
        """The exact class of the carrier that dispatched the operation, or None.

        Returns:
            type | None: the carrier class.

        Examples:
            >>> CPU(1).dispatch_op('view')._dispatch_carrier_class is CPU
            True
        """

def execute_lowered_operation(operation: Operation, /, *inputs: Any) -> Tensor:
    """Runs operation._forward(*inputs) the way a composite carrier runs an inner operation: no
    saved inputs, no autograd context.

    Sealed: a Python override of _execute_lowered is not consulted.

    Args:
        operation: the Operation to run.
        *inputs: its forward arguments.

    Returns:
        Tensor: the result.

    Raises:
        TypeError: 'Operation._forward must return a Tensor'.

    Examples:
        >>> from strideweave.carriers.operation_helpers import execute_lowered_operation
        >>> x = Tensor(Generic([-1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> op = GenericReLUOperation()
        >>> y = execute_lowered_operation(op, x)
        >>> y[0], y[1], y.autograd_ctx is None, op.inputs()
        (0, 2.0, True, ())
    """
