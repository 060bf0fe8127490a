"""A minimal layer library and optimizer: Linear, activations, MSELoss, SGD."""

import random
from collections.abc import Iterable

from strideweave.core.module import Module, Parameter
from strideweave.nn import init as init
from strideweave.nn._softmax import CrossEntropyLoss as CrossEntropyLoss
from strideweave.nn._softmax import CrossEntropyOperation as CrossEntropyOperation
from strideweave.nn._softmax import LogSoftmax as LogSoftmax
from strideweave.nn._softmax import Softmax as Softmax
from strideweave.nn._softmax import SoftmaxOperation as SoftmaxOperation
from strideweave.nn._softmax import cross_entropy as cross_entropy
from strideweave.nn._softmax import log_softmax as log_softmax
from strideweave.nn._softmax import softmax as softmax
from strideweave.tensor import Tensor

__all__ = [
    "ELU",
    "GELU",
    "SGD",
    "LeakyReLU",
    "Linear",
    "MSELoss",
    "ReLU",
    "SiLU",
    "Sigmoid",
    "Softplus",
    "Tanh",
    "Adam",
]

class Linear(Module):
    """An affine layer ``y = x @ weight + ones @ bias`` on CPU Float32.

    ``weight`` is a ``[out_features, in_features]`` column-major Parameter
    and ``bias`` an ``[out_features, 1]`` one (or None). Both are drawn from
    ``rng.uniform(-1/sqrt(in_features), 1/sqrt(in_features))``: first every
    weight element in logical order, then every bias element.

    Args:
        in_features: the input width, a positive int.
        out_features: the output width, a positive int.
        bias: whether to add a bias.
        rng: the generator; None uses a fresh ``random.Random()``.
        name: the module's optional name.

    Returns:
        The new layer.

    Raises:
        ValueError: a width that is not positive.

    Examples:
        >>> import random
        >>> import strideweave.nn as nn
        >>> layer = nn.Linear(3, 2, rng=random.Random(0))
        >>> layer.weight.layout, layer.bias.layout
        ((2,3):(1,2), (2,1):(1,2))
        >>> [name for name, _ in layer.get_named_parameters()]
        ['weight', 'bias']
    """

    in_features: int
    out_features: int
    weight: Parameter
    bias: Parameter | None
    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        bias: bool = True,
        rng: random.Random | None = None,
        name: str | None = None,
    ) -> None: ...
    def extra_repr(self) -> str:
        """The layer's sizes, as PyTorch prints them.

        Returns:
            ``in_features=..., out_features=..., bias=...``.

        Examples:
            >>> import strideweave.nn as nn
            >>> nn.Linear(2, 3)
            Linear(in_features=2, out_features=3, bias=True)
        """
    def forward(self, tensor: Tensor) -> Tensor:
        """Applies the layer to a ``[batch, in_features]`` CPU tensor.

        Args:
            tensor: a flat two-mode column-major CPU Float32 tensor.

        Returns:
            The ``[batch, out_features]`` result, layout
            ``column_major(batch, out_features)``.

        Raises:
            TypeError: a non-Tensor or a non-CPU tensor.
            ValueError: a layout that is not flat two-mode, or the wrong
                number of input features.

        Examples:
            >>> import random
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> layer = nn.Linear(2, 1, bias=False, rng=random.Random(0))
            >>> layer(F.zeros(5, 2)).layout
            (5,1):(1,5)
        """

class _Activation(Module):
    """A parameter-free module applying one functional activation."""
    def forward(self, tensor: Tensor) -> Tensor:
        """Applies the activation elementwise.

        Args:
            tensor: any tensor the functional operation accepts.

        Returns:
            The activation's result, with the input's layout.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> F.to_list(nn.ReLU()(F.tensor([-1.0, 2.0])))
            [0.0, 2.0]
        """

class ReLU(_Activation):
    """``relu`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.ReLU()(F.tensor([-1.0, 2.0])))
        [0.0, 2.0]
    """

class Sigmoid(_Activation):
    """``sigmoid`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.Sigmoid()(F.tensor([0.0])))
        [0.5]
    """

class Tanh(_Activation):
    """``tanh`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.Tanh()(F.tensor([0.0])))
        [0.0]
    """

class GELU(_Activation):
    """``gelu`` (exact erf form) as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.GELU()(F.tensor([0.0])))
        [0.0]
    """

class SiLU(_Activation):
    """``silu`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.SiLU()(F.tensor([0.0])))
        [0.0]
    """

class Softplus(_Activation):
    """``softplus`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> round(F.to_list(nn.Softplus()(F.tensor([0.0])))[0], 6)
        0.693147
    """

class ELU(_Activation):
    """``elu`` (alpha 1) as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.ELU()(F.tensor([2.0])))
        [2.0]
    """

class LeakyReLU(_Activation):
    """``leaky_relu`` (slope 0.01) as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.LeakyReLU()(F.tensor([2.0])))
        [2.0]
    """

class MSELoss(Module):
    """Mean squared error ``mean((prediction - target) ** 2.0)``.

    Composed from carrier-dispatched operations, so it works on any carrier
    that supports sub, pow, rearrange and reduce (CPU or Generic).

    Args:
        name: the module's optional name.

    Returns:
        The new loss module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> loss = nn.MSELoss()(F.tensor([[1.0], [3.0]]), F.zeros(2, 1))
        >>> loss.layout, F.item(loss)
        (1:1, 5.0)
    """

    def forward(self, prediction: Tensor, target: Tensor) -> Tensor:
        """The mean squared difference, as an exact ``1:1`` scalar.

        Args:
            prediction: a flat two-mode tensor.
            target: a tensor of the same layout and carrier class.

        Returns:
            A Tensor of layout ``Layout(Shape(1), Stride(1))``; its
            ``backward()`` needs no gradient.

        Raises:
            TypeError: a non-Tensor argument, or carriers of different classes.
            ValueError: a prediction that is not flat two-mode, or layouts that
                differ.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> p = F.tensor([[2.0, 0.0]])
            >>> F.item(nn.MSELoss()(p, F.zeros(1, 2)))
            2.0
        """

class SGD:
    """Plain stochastic gradient descent: ``p -= lr * p.grad`` in place.

    ``step()`` writes every logical element through the parameter's layout,
    so each step bumps the parameters' carrier versions: graphs built before
    a step cannot be backwarded after it. Gradients accumulate across
    ``backward()`` calls until ``zero_grad()``.

    Args:
        parameters: the tensors to update (taken once, as a tuple).
        lr: the learning rate, a positive number.

    Returns:
        The optimizer.

    Raises:
        TypeError: an entry that is not a Tensor.
        ValueError: an lr that is not positive.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> w = F.tensor([1.0])
        >>> F.sum(w * 3.0).backward()
        >>> opt = nn.SGD([w], lr=0.5)
        >>> opt.step()
        >>> F.to_list(w)
        [-0.5]
    """

    lr: float
    def __init__(self, parameters: Iterable[Tensor], lr: float) -> None: ...
    def step(self) -> None:
        """Applies one update to every parameter that has a gradient.

        Every parameter is checked (gradient size, mutability) before any is
        written, so a failing step changes nothing.

        Returns:
            None.

        Raises:
            RuntimeError: a parameter that has a gradient but cannot be written
                (released or immutable storage), a released gradient, or a
                dtype without gradients.
            ValueError: a gradient whose size differs from its parameter's.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> w = F.tensor([2.0])
            >>> nn.SGD([w], lr=1.0).step()  # no gradient yet: unchanged
            >>> F.to_list(w)
            [2.0]
        """
    def zero_grad(self) -> None:
        """Sets every parameter's gradient to None.

        Returns:
            None.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> w = F.tensor([1.0])
            >>> F.sum(w).backward()
            >>> nn.SGD([w], lr=0.1).zero_grad()
            >>> w.grad is None
            True
        """

class Adam:
    """Adam with bias correction, as ``torch.optim.Adam`` without amsgrad.

    For each parameter with a gradient ``g`` (plus ``weight_decay * p``),
    ``step()`` updates the moment estimates ``m = beta1*m + (1-beta1)*g``
    and ``v = beta2*v + (1-beta2)*g**2`` and then
    ``p -= lr * (m / (1-beta1**t)) / (sqrt(v / (1-beta2**t)) + eps)``, where
    ``t`` counts the parameter's steps. A CPU Float32 parameter is updated by
    one library call over its storage (its version rises once a step); other
    carriers element by element. Moments start at zero on a parameter's
    first step.

    Args:
        parameters: the tensors to update (taken once, as a tuple).
        lr: the learning rate, a positive number (default 1e-3).
        betas: the two decays, each in [0, 1) (default (0.9, 0.999)).
        eps: added to the denominator, >= 0 (default 1e-8).
        weight_decay: L2 decay added to the gradient, >= 0 (default 0).

    Returns:
        The optimizer.

    Raises:
        TypeError: an entry that is not a Tensor.
        ValueError: a hyper-parameter out of range.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> w = F.tensor([1.0])
        >>> F.sum(w * 3.0).backward()
        >>> opt = nn.Adam([w], lr=0.1)
        >>> opt.step()
        >>> round(F.to_list(w)[0], 6)
        0.9
    """

    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    def __init__(
        self,
        parameters: Iterable[Tensor],
        lr: float = ...,
        betas: tuple[float, float] = ...,
        eps: float = ...,
        weight_decay: float = ...,
    ) -> None: ...
    def step(self) -> None:
        """Applies one update to every parameter that has a gradient.

        Every parameter is checked first, so a failing step changes nothing.

        Returns:
            None.

        Raises:
            RuntimeError: a parameter that has a gradient but cannot be written
                (released or immutable storage), or a released gradient.
            ValueError: a gradient whose size differs from its parameter's.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> w = F.tensor([2.0])
            >>> nn.Adam([w]).step()  # no gradient yet: unchanged
            >>> F.to_list(w)
            [2.0]
        """
    def zero_grad(self) -> None:
        """Sets every parameter's gradient to None.

        Returns:
            None.

        Examples:
            >>> import strideweave.friendly as F
            >>> import strideweave.nn as nn
            >>> w = F.tensor([1.0])
            >>> F.sum(w).backward()
            >>> nn.Adam([w]).zero_grad()
            >>> w.grad is None
            True
        """
