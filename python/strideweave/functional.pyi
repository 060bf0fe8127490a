"""The functional forms of the operations, and grad mode."""

import contextlib
from typing import Any

from strideweave.carriers.base import Carrier
from strideweave.core.layout import Tree
from strideweave.tensor import Tensor

__all__ = [
    "add",
    "div",
    "einsum",
    "elementwise_mul",
    "elu",
    "exp",
    "gelu",
    "is_grad_enabled",
    "leaky_relu",
    "matmul",
    "move",
    "mul",
    "neg",
    "no_grad",
    "permute",
    "pow",
    "rearrange",
    "reduce",
    "relu",
    "set_grad_enabled",
    "sigmoid",
    "silu",
    "softplus",
    "sub",
    "tanh",
    "view",
]

def add(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs + rhs.

    Args:
        lhs: the left Tensor.
        rhs: the right Tensor, with a layout equal to lhs's, over a carrier of exactly the same class.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'lhs must be a Tensor', 'rhs must be a Tensor', 'Tensor backing carriers must match'.
        ValueError: 'Tensor layouts must match'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(add(x, x)[0], 6)
        2.0
    """

def sub(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs - rhs.

    Args:
        lhs: the left Tensor.
        rhs: the right Tensor, with a layout equal to lhs's, over a carrier of exactly the same class.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'lhs must be a Tensor', 'rhs must be a Tensor', 'Tensor backing carriers must match'.
        ValueError: 'Tensor layouts must match'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(sub(x, x)[0], 6)
        0.0
    """

def elementwise_mul(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs * rhs.

    Args:
        lhs: the left Tensor.
        rhs: the right Tensor, with a layout equal to lhs's, over a carrier of exactly the same class.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'lhs must be a Tensor', 'rhs must be a Tensor', 'Tensor backing carriers must match'.
        ValueError: 'Tensor layouts must match'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(elementwise_mul(x, x)[0], 6)
        1.0
    """

def div(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs / rhs (true division; the result is Floating or Float32).

    Args:
        lhs: the left Tensor.
        rhs: the right Tensor, with a layout equal to lhs's, over a carrier of exactly the same class.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'lhs must be a Tensor', 'rhs must be a Tensor', 'Tensor backing carriers must match'.
        ValueError: 'Tensor layouts must match'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(div(x, x)[0], 6)
        1.0
    """

def matmul(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Contracts the second mode of both operands: out[i, j] = sum over k of lhs[i, k] * rhs[j, k],
    that is lhs @ rhs.T.

    The output layout is canonical column-major over (lhs mode 0, rhs mode 0), nesting kept.

    Args:
        lhs: a two-mode Tensor.
        rhs: a two-mode Tensor whose second mode has lhs's logical size, over a carrier of
            exactly the same class.

    Returns:
        Tensor: the product.

    Raises:
        TypeError: 'lhs must be a Tensor', 'rhs must be a Tensor', 'Tensor backing carriers must
            match'.
        ValueError: 'lhs must have a two-mode layout', 'rhs must have a two-mode layout',
            'Matmul inner dimensions must match'.

    Examples:
        >>> a = Tensor(Generic([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), 0, Layout(Shape(2, 3), Stride(1, 2)))
        >>> b = Tensor(Generic([1.0, 1.0, 1.0]), 0, Layout(Shape(1, 3), Stride(1, 1)))
        >>> y = matmul(a, b)
        >>> y.layout, y[0, 0], y[1, 0]
        ((2,1):(1,2), 9.0, 12.0)
    """

def move(tensor: Tensor, destination: Carrier) -> Tensor:
    """Moves tensor's values into destination and releases the source carrier: move_async(tensor,
    destination).wait().

    The operation class comes from the move registry for the exact pair (type(tensor.carrier),
    type(destination)); the result is a Tensor over destination at offset 0 with tensor's
    layout. The destination needs the layout's cosize slots (an empty FileBacked grows to it).
    The source carrier is released only after the copy succeeded; a failed move leaves both
    carriers as they were. With grad mode on, the result's autograd context is the move and
    backward returns the gradient in fresh storage of the source carrier's class.

    Args:
        tensor: the Tensor to move.
        destination: a live, mutable Carrier of tensor's dtype, not tensor's own carrier.

    Returns:
        Tensor: the moved tensor, backed by destination.

    Examples:
        >>> from strideweave import FileBacked, Generic, Layout, Shape, Stride, Tensor, move
        >>> t = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> m = move(t, FileBacked())
        >>> m[1], t.carrier.is_released()
        (2.0, True)
    """

def mul(tensor: Tensor, scalar: Any) -> Tensor:
    """tensor * scalar per element; with a Tensor scalar this is elementwise_mul(tensor, scalar).

    Args:
        tensor: the input Tensor.
        scalar: a number (bool included), or a Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor', 'scalar must be a numerical scalar'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> y = mul(x, 3)
        >>> y[1], y.autograd_ctx.ctx['scalar']
        (-6.0, 3)
    """

def neg(tensor: Tensor) -> Tensor:
    """-tensor, exactly mul(tensor, -1).

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> neg(x)[1]
        2.0
    """

def pow(tensor: Tensor, exponent: Any) -> Tensor:
    """tensor ** exponent per element, for a scalar exponent.

    Generic computes with Python's ** (ints stay ints); CPU in float32, or exact checked powers
    for Int32.

    Args:
        tensor: the input Tensor.
        exponent: a number (not a Tensor).

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor', 'exponent must be a numerical scalar'.

    Examples:
        >>> t = Tensor(Generic([1, 2, 3]), 0, Layout(Shape(3), Stride(1)))
        >>> y = pow(t, 3)
        >>> y[0], y[1], y[2]
        (1, 8, 27)
    """

def exp(tensor: Tensor) -> Tensor:
    """e ** x per element.

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(exp(x)[0], 6)
        2.718282
    """

def relu(tensor: Tensor) -> Tensor:
    """max(0, x) per element (on host values the host's max, so a negative float may give an integer 0).

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(relu(x)[0], 6)
        1.0
    """

def sigmoid(tensor: Tensor) -> Tensor:
    """The logistic function 1/(1+e**-x), numerically stable.

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(sigmoid(x)[0], 6)
        0.731059
    """

def tanh(tensor: Tensor) -> Tensor:
    """The hyperbolic tangent per element.

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(tanh(x)[0], 6)
        0.761594
    """

def gelu(tensor: Tensor) -> Tensor:
    """0.5*x*(1 + erf(x/sqrt(2))), the exact GELU.

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(gelu(x)[0], 6)
        0.841345
    """

def silu(tensor: Tensor) -> Tensor:
    """x*sigmoid(x) per element.

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(silu(x)[0], 6)
        0.731059
    """

def softplus(tensor: Tensor) -> Tensor:
    """log1p(exp(-|x|)) + max(x, 0) per element.

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(softplus(x)[0], 6)
        1.313262
    """

def elu(tensor: Tensor) -> Tensor:
    """x if x > 0 else expm1(x), per element (alpha 1).

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(elu(x)[0], 6)
        1.0
    """

def leaky_relu(tensor: Tensor) -> Tensor:
    """x if x >= 0 else 0.01*x, per element.

    Args:
        tensor: the input Tensor.

    Returns:
        Tensor: a fresh tensor with the input's layout (offset 0).

    Raises:
        TypeError: 'tensor must be a Tensor'.

    Examples:
        >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
        >>> round(leaky_relu(x)[0], 6)
        1.0
    """

def view(tensor: Tensor, key: Any) -> Tensor:
    """A view: one key per top-level mode. An int removes the mode (its offset is added); a slice
    (step None or 1, non-empty) keeps part of a leaf mode, and only the whole slice [:] is
    allowed on a nested mode. t[...] with a slice anywhere in the key calls this.

    Args:
        tensor: the input Tensor.
        key: a tuple with one int or slice per top-level mode; anything else is taken as a
            1-tuple.

    Returns:
        Tensor: a view over the same carrier.

    Raises:
        TypeError: 'tensor must be a Tensor', 'View key must be an integer or slice'.
        ValueError: 'View keys must include exactly one key per top-level mode', 'View slices do
            not support steps', 'View slices must be non-empty', 'Only whole slices are
            supported for non-leaf modes', 'View integer key is out of domain'.

    Examples:
        >>> g = Generic([float(i) for i in range(50)])
        >>> x = Tensor(g, 0, Layout(Shape(5, 10), Stride(1, 5)))
        >>> v = view(x, (2, slice(2, 5)))
        >>> v.layout, v.offset, v.carrier is g, v[0]
        (3:5, 12, True, 12.0)
    """

def permute(tensor: Tensor, /, *order: Any) -> Tensor:
    """A view with the top-level modes reordered (each moved whole); order is variadic or one list
    or tuple.

    Args:
        tensor: the input Tensor.
        *order: a permutation of range(rank), exact ints.

    Returns:
        Tensor: a view over the same carrier.

    Raises:
        TypeError: 'tensor must be a Tensor', 'Permutation dimensions must be integers'.
        ValueError: 'Permutation dimensions must reorder every layout mode'.

    Examples:
        >>> x = Tensor(Generic(list(range(6))), 0, Layout(Shape(2, 3), Stride(1, 2)))
        >>> permute(x, 1, 0).layout, permute(x, [1, 0])[2, 1]
        ((3,2):(2,1), 5)
    """

def rearrange(tensor: Tensor, output: Tree | str, selection: Tree | None = None) -> Tensor:
    """A view whose layout is Layout.rearrange(tensor.layout, output, selection); a str output is a
    layout command, run by strideweave.einops.rearrange.

    Args:
        tensor: the input Tensor.
        output: a Tree of Node.id(k) markers (and Node.Leaf singletons), or a command string
            such as 'a b -> b a'.
        selection: a Tree saying which pieces are extracted, or None for every leaf of the
            layout (None only with a str output).

    Returns:
        Tensor: a view over the same carrier, at the same offset.

    Raises:
        TypeError: 'tensor must be a Tensor', 'output must be a Tree', 'selection must be a Tree
            or None', 'String rearrange descriptions do not accept an explicit selection'.
        ValueError: from Layout.rearrange or the command parser.

    Examples:
        >>> x = Tensor(Generic(list(range(24))), 0, Layout(Shape(2, 3, 4), Stride(1, 2, 6)))
        >>> rearrange(x, Tree(Node.id(2), Node.id(0), Node.id(1))).layout
        (4,2,3):(6,1,2)
        >>> rearrange(x, 'a b c -> c (a b)').layout
        (4,(2,3)):(6,(1,2))
    """

def reduce(tensor: Tensor, description: str = ...) -> Tensor:
    """out[i] = sum over j of tensor[i, j] for a two-mode tensor. The output layout is canonical
    column-major over mode 0 (one nesting level flattened). With a description,
    strideweave.einops.reduce.

    Args:
        tensor: the input Tensor.
        description: a reduce command such as 'a b -> a'; omitted for the two-mode form.

    Returns:
        Tensor: the sums.

    Raises:
        TypeError: 'tensor must be a Tensor', 'description must be a str' (None included).
        ValueError: 'tensor must have a two-mode layout', or from the command parser.

    Examples:
        >>> x = Tensor(Generic([1, 2, 3, 4, 5, 6]), 0, Layout(Shape(2, 3), Stride(1, 2)))
        >>> y = reduce(x)
        >>> y.layout, y[0], y[1]
        (2:1, 9, 12)
        >>> reduce(x, 'a b -> 1')[0]
        21
    """

def einsum(lhs: Tensor, rhs: Tensor, description: str) -> Tensor:
    """A contraction described by a layout command string (strideweave.einops.einsum): shared
    symbols absent from the output are summed over; shared symbols the output names are batch
    symbols.

    Args:
        lhs: the left Tensor.
        rhs: the right Tensor.
        description: the command, such as 'a b, c b -> a c'.

    Returns:
        Tensor: the contraction.

    Raises:
        TypeError: 'description must be a str', 'lhs must be a Tensor', 'rhs must be a Tensor',
            'Tensor backing carriers must match'.
        ValueError: from the command parser, and "Einsum shared dimension 'b' has mismatched
            logical size".

    Examples:
        >>> a = Tensor(Generic([1.0, 2.0, 3.0, 4.0]), 0, Layout(Shape(2, 2), Stride(1, 2)))
        >>> y = einsum(a, a, 'i k, j k -> i j')
        >>> y.layout, y[0, 1]
        ((2,2):(1,2), 14.0)
        >>> einsum(None, None, 1)
        Traceback (most recent call last):
        ...
        TypeError: description must be a str
    """

def is_grad_enabled() -> bool:
    """Whether operations record the autograd graph on this thread (True by default in every
    thread).

    Returns:
        bool: the grad mode of the calling thread.

    Examples:
        >>> is_grad_enabled()
        True
    """

def set_grad_enabled(enabled: object) -> None:
    """Sets the grad mode of the calling thread.

    Args:
        enabled: any object; its truth value is used.

    Returns:
        None.

    Examples:
        >>> set_grad_enabled(0)
        >>> is_grad_enabled()
        False
        >>> set_grad_enabled(True)
    """

def no_grad() -> contextlib.AbstractContextManager[None]:
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
