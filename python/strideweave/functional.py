"""The functional forms of the operations, and grad mode.

Each function dispatches a canonical operation name on its (lhs) tensor's
carrier and runs the operation as a recorded forward: when grad mode is on
and an input is differentiable, the result's ``autograd_ctx`` is the
operation. Element-wise results keep the input's layout (holes included) in
fresh storage; ``view``, ``permute`` and ``rearrange`` return views.

Examples:
    >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
    >>> from strideweave.functional import mul, no_grad, relu
    >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> y = relu(mul(x, 3))
    >>> y[0], y[1], type(y.autograd_ctx).__name__
    (3.0, 0, 'GenericReLUOperation')
    >>> with no_grad():
    ...     relu(x).autograd_ctx is None
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from strideweave import _native

# Re-exported under their own names (the aliases mark them as exports).
from strideweave._native import einsum as einsum
from strideweave._native import is_grad_enabled as is_grad_enabled
from strideweave._native import move as move
from strideweave._native import neg as neg
from strideweave._native import set_grad_enabled as set_grad_enabled

# The functional form of every operation that has one, as the library's
# operation registry lists them (it is the only list of operations).
_OPERATIONS: list[str] = _native._functional_operations()
globals().update({name: getattr(_native, name) for name in _OPERATIONS})

__all__ = sorted(
    [*_OPERATIONS, "einsum", "is_grad_enabled", "move", "neg", "no_grad", "set_grad_enabled"]
)


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Turns grad mode off in this thread for the ``with`` block.

    The previous mode is restored on exit, also when the block raises;
    blocks nest. Operations run inside record no autograd context, so
    their results are leaves.

    Returns:
        contextlib.AbstractContextManager[None]: the context manager.

    Examples:
        >>> from strideweave.functional import is_grad_enabled, no_grad
        >>> with no_grad():
        ...     is_grad_enabled()
        False
        >>> is_grad_enabled()
        True
    """
    previous = is_grad_enabled()
    set_grad_enabled(False)
    try:
        yield None
    finally:
        set_grad_enabled(previous)
