from strideweave.carriers.operation_helpers import Operation
from strideweave.core.module import Module
from strideweave.tensor import Tensor

class SoftmaxOperation(Operation):
    """softmax (``log=False``) or log_softmax along one mode, with its VJP.

    Args:
        log: whether the result is log-probabilities.
        dim: the mode of the classes (0 or 1 of a two-mode tensor; a
            one-mode tensor is one row).

    Returns:
        The operation; ``forward(x)`` runs and records it.

    Examples:
        >>> import strideweave.friendly as F
        >>> from strideweave.nn import SoftmaxOperation
        >>> F.to_list(SoftmaxOperation(False, -1).forward(F.tensor([0.0, 0.0])))
        [0.5, 0.5]
    """
    def __init__(self, log: bool, dim: int = -1) -> None: ...
    def _forward(self, x: Tensor) -> Tensor: ...  # type: ignore[override]
    def backward(self, gradient: Tensor) -> tuple[Tensor | None, ...]:
        """The gradient with respect to the input (the library's VJP).

        Args:
            gradient: the gradient of the result.

        Returns:
            A one-element tuple: the input's gradient, in its layout.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> x = F.tensor([1.0, 2.0])
            >>> x.retain_grad()
            >>> F.sum(nn.log_softmax(x)).backward()
            >>> [round(v, 4) for v in F.to_list(x.grad)]
            [0.4621, -0.4621]
        """

class CrossEntropyOperation(Operation):
    """The cross-entropy of logits against targets, with its VJP.

    Args:
        reduction: ``"mean"`` (over the rows) or ``"sum"``.

    Returns:
        The operation; ``forward(logits, target)`` runs and records it.

    Examples:
        >>> import strideweave.friendly as F
        >>> from strideweave.nn import CrossEntropyOperation
        >>> loss = CrossEntropyOperation("sum").forward(F.tensor([[0.0, 0.0]]), F.tensor([0.0]))
        >>> round(F.item(loss), 4)
        0.6931
    """
    def __init__(self, reduction: str = "mean") -> None: ...
    def _forward(self, logits: Tensor, target: Tensor) -> Tensor: ...  # type: ignore[override]
    def backward(self, gradient: Tensor) -> tuple[Tensor | None, ...]:
        """The gradient with respect to the logits (none for the target).

        Args:
            gradient: the gradient of the loss (one element).

        Returns:
            ``(logits_gradient, None)``.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> x = F.tensor([[0.0, 0.0]])
            >>> x.retain_grad()
            >>> nn.cross_entropy(x, F.tensor([1.0])).backward()
            >>> F.to_list(x.grad)
            [0.5, -0.5]
        """

def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along mode ``dim``, numerically stable.

    Args:
        x: a CPU Float32 tensor of one or two flat modes.
        dim: the mode of the classes (default: the last).

    Returns:
        A fresh tensor of x's shape (x's layout when injective, else
        row-major); differentiable.

    Raises:
        TypeError: a non-Tensor or a carrier other than CPU Float32.
        ValueError: another rank, a hierarchical mode, or dim out of range.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.softmax(F.tensor([1000.0, 1000.0])))
        [0.5, 0.5]
    """

def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    """x - logsumexp(x) along mode ``dim``, numerically stable.

    Args:
        x: a CPU Float32 tensor of one or two flat modes.
        dim: the mode of the classes (default: the last).

    Returns:
        A fresh tensor of x's shape; differentiable.

    Raises:
        TypeError: as ``softmax``.
        ValueError: as ``softmax``.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.log_softmax(F.tensor([0.0, -1000.0])))
        [0.0, -1000.0]
    """

def cross_entropy(logits: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The cross-entropy loss of ``[batch, classes]`` logits, as PyTorch's.

    Args:
        logits: a two-mode CPU Float32 tensor (rows, classes).
        target: one class index per row (CPU Float32 holding integers, or
            CPU Int32; any layout of ``batch`` elements), or class
            probabilities of the logits' shape.
        reduction: ``"mean"`` over the rows or ``"sum"``.

    Returns:
        A ``1:1`` tensor; differentiable in the logits.

    Raises:
        TypeError: a non-Tensor or an unsupported carrier or dtype.
        ValueError: a bad reduction, a target of another size or an index
            that is not an integer.
        IndexError: an index outside ``[0, classes)``.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> round(F.item(nn.cross_entropy(F.tensor([[2.0, 0.0]]), F.tensor([0.0]))), 4)
        0.1269
    """

class Softmax(Module):
    """``softmax`` along mode ``dim`` as a module.

    Args:
        dim: the mode of the classes (default: the last).

    Returns:
        The module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.Softmax()(F.tensor([0.0, 0.0])))
        [0.5, 0.5]
    """

    dim: int
    def __init__(self, dim: int = -1) -> None: ...
    def forward(self, x: Tensor) -> Tensor:
        """``softmax(x, self.dim)``.

        Args:
            x: the input.

        Returns:
            The probabilities.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> F.to_list(nn.Softmax(0)(F.tensor([0.0, 0.0])))
            [0.5, 0.5]
        """
    def extra_repr(self) -> str:
        """The module's setting for its repr: ``dim=...``.

        Returns:
            The text.

        Examples:
            >>> import strideweave.nn as nn
            >>> nn.Softmax().extra_repr()
            'dim=-1'
        """

class LogSoftmax(Softmax):
    """``log_softmax`` along mode ``dim`` as a module.

    Args:
        dim: the mode of the classes (default: the last).

    Returns:
        The module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.LogSoftmax()(F.tensor([0.0])))
        [0.0]
    """

class CrossEntropyLoss(Module):
    """The cross-entropy loss, ``cross_entropy(logits, target, reduction)``.

    Args:
        reduction: ``"mean"`` (default) or ``"sum"``.

    Returns:
        The loss module.

    Raises:
        ValueError: another reduction.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> loss = nn.CrossEntropyLoss()(F.tensor([[0.0, 0.0]]), F.tensor([1.0]))
        >>> loss.layout, round(F.item(loss), 4)
        (1:1, 0.6931)
    """

    reduction: str
    def __init__(self, reduction: str = "mean") -> None: ...
    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        """The loss of logits against target.

        Args:
            logits: ``[batch, classes]`` scores.
            target: class indices or probabilities (see ``cross_entropy``).

        Returns:
            A ``1:1`` tensor.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> loss = nn.CrossEntropyLoss("sum")(F.tensor([[0.0, 0.0]]), F.tensor([0.0]))
            >>> round(F.item(loss), 4)
            0.6931
        """
    def extra_repr(self) -> str:
        """The module's setting for its repr.

        Returns:
            ``reduction='mean'`` or ``reduction='sum'``.

        Examples:
            >>> import strideweave.nn as nn
            >>> nn.CrossEntropyLoss().extra_repr()
            "reduction='mean'"
        """
