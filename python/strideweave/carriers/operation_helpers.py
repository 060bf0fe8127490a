"""The Operation base class and the sealed lowered execution of operations.

:class:`Operation` is the base of every operation, native or defined in
Python; :func:`execute_lowered_operation` runs an operation the way a
composite carrier runs an inner one (no saved inputs, no autograd context),
whatever the operation's class overrides.

Examples:
    >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
    >>> from strideweave.carriers.operation_helpers import Operation, execute_lowered_operation
    >>> class Identity(Operation):
    ...     def _forward(self, x):
    ...         return Tensor(x.carrier.new_like([x[0]]), 0, x.layout)
    >>> x = Tensor(Generic([5.0]), 0, Layout(Shape(1), Stride(1)))
    >>> execute_lowered_operation(Identity(), x)[0]
    5.0
"""

from strideweave._native import Operation, execute_lowered_operation

__all__ = ["Operation", "execute_lowered_operation"]
