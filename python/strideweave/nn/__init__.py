"""A minimal layer library and optimizer: Linear, activations, MSELoss, SGD.

Built only from the public primitives and not re-exported by ``import
strideweave``; import it explicitly (``import strideweave.nn as nn``).

Conventions: inputs are flat column-major ``[batch, features]`` tensors and
Linear weights are ``[out_features, in_features]``; ``matmul`` contracts the
second mode of both operands, so ``x @ weight`` is ``[batch, out_features]``.
Without a broadcasting primitive, Linear adds its ``[out_features, 1]`` bias
as ``ones[batch, 1] @ bias``, whose backward pass sums the bias gradient over
the batch.

Examples:
    >>> import random
    >>> import strideweave.friendly as F
    >>> import strideweave.nn as nn
    >>> layer = nn.Linear(2, 3, rng=random.Random(0))
    >>> y = layer(F.ones(4, 2))
    >>> y.layout
    (4,3):(1,4)
    >>> loss = nn.MSELoss()(y, F.zeros(4, 3))
    >>> loss.layout
    1:1
    >>> loss.backward()
    >>> opt = nn.SGD(layer.parameters(), lr=0.1)
    >>> opt.step()
    >>> opt.zero_grad()
    >>> layer.weight.grad is None
    True
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Any

from strideweave import functional
from strideweave._native import _adam_step, _axpy
from strideweave.carriers import CPU, DType
from strideweave.core.module import Module, Parameter
from strideweave.friendly import column_major, mean, ones
from strideweave.functional import matmul, no_grad
from strideweave.nn import init

# Beyond the reference, outside __all__: classification.
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
    "Adam",  # beyond the reference
]


def _is_flat_two_mode(tensor: Tensor) -> bool:
    shape = tensor.layout.shape
    return len(shape) == 2 and shape[0].is_int and shape[1].is_int


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
    ) -> None:
        if in_features <= 0 or out_features <= 0:
            raise ValueError("in_features and out_features must be positive")
        super().__init__(name=name)
        generator = random.Random() if rng is None else rng
        self.in_features = in_features
        self.out_features = out_features
        weight_layout = column_major(out_features, in_features)
        self.weight = Parameter(CPU(weight_layout.cosize), 0, weight_layout)
        init.kaiming_uniform_(self.weight, in_features, rng=generator)
        if bias:
            bias_layout = column_major(out_features, 1)
            self.bias = Parameter(CPU(bias_layout.cosize), 0, bias_layout)
            init.kaiming_uniform_(self.bias, in_features, rng=generator)
        else:
            self.bias = None

    def extra_repr(self) -> str:
        """The layer's sizes, as PyTorch prints them.

        Returns:
            ``in_features=..., out_features=..., bias=...``.

        Examples:
            >>> import strideweave.nn as nn
            >>> nn.Linear(2, 3)
            Linear(in_features=2, out_features=3, bias=True)
        """
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )

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
        if not isinstance(tensor, Tensor):
            raise TypeError("tensor must be a Tensor")
        if not _is_flat_two_mode(tensor):
            raise ValueError("tensor must be a flat two-mode tensor")
        shape = tensor.layout.shape
        features = int(shape[1])
        if features != self.in_features:
            raise ValueError(f"tensor has {features} input features, expected {self.in_features}")
        output = matmul(tensor, self.weight)
        if self.bias is not None:
            # The ones are a constant: no gradient is computed for them.
            output = output + matmul(ones(int(shape[0]), 1).requires_grad_(False), self.bias)
        return output


class _Activation(Module):
    """A parameter-free module applying one functional activation."""

    _function = staticmethod(functional.relu)

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
        return type(self)._function(tensor)


class ReLU(_Activation):
    """``relu`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.ReLU()(F.tensor([-1.0, 2.0])))
        [0.0, 2.0]
    """

    _function = staticmethod(functional.relu)


class Sigmoid(_Activation):
    """``sigmoid`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.Sigmoid()(F.tensor([0.0])))
        [0.5]
    """

    _function = staticmethod(functional.sigmoid)


class Tanh(_Activation):
    """``tanh`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.Tanh()(F.tensor([0.0])))
        [0.0]
    """

    _function = staticmethod(functional.tanh)


class GELU(_Activation):
    """``gelu`` (exact erf form) as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.GELU()(F.tensor([0.0])))
        [0.0]
    """

    _function = staticmethod(functional.gelu)


class SiLU(_Activation):
    """``silu`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.SiLU()(F.tensor([0.0])))
        [0.0]
    """

    _function = staticmethod(functional.silu)


class Softplus(_Activation):
    """``softplus`` as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> round(F.to_list(nn.Softplus()(F.tensor([0.0])))[0], 6)
        0.693147
    """

    _function = staticmethod(functional.softplus)


class ELU(_Activation):
    """``elu`` (alpha 1) as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.ELU()(F.tensor([2.0])))
        [2.0]
    """

    _function = staticmethod(functional.elu)


class LeakyReLU(_Activation):
    """``leaky_relu`` (slope 0.01) as a module.

    Examples:
        >>> import strideweave.friendly as F
        >>> import strideweave.nn as nn
        >>> F.to_list(nn.LeakyReLU()(F.tensor([2.0])))
        [2.0]
    """

    _function = staticmethod(functional.leaky_relu)


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
        if not isinstance(prediction, Tensor):
            raise TypeError("prediction must be a Tensor")
        if not isinstance(target, Tensor):
            raise TypeError("target must be a Tensor")
        if not _is_flat_two_mode(prediction):
            raise ValueError("prediction must be a flat two-mode tensor")
        if prediction.layout != target.layout:
            raise ValueError("prediction and target layouts must match")
        return mean((prediction - target) ** 2.0)


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

    def __init__(self, parameters: Iterable[Tensor], lr: float) -> None:
        taken = tuple(parameters)
        for parameter in taken:
            if not isinstance(parameter, Tensor):
                raise TypeError("SGD parameters must be Tensors")
        if lr <= 0:
            raise ValueError("lr must be positive")
        self._parameters = taken
        self.lr = float(lr)

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
        lr = self.lr
        with no_grad():
            updates = []
            for parameter in self._parameters:
                gradient = parameter.grad
                if gradient is None:
                    continue
                _check_update(parameter, gradient)
                updates.append((parameter, gradient))
            for parameter, gradient in updates:
                _descend(parameter, gradient, lr)

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
        for parameter in self._parameters:
            parameter.grad = None


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

    def __init__(
        self,
        parameters: Iterable[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        taken = tuple(parameters)
        for parameter in taken:
            if not isinstance(parameter, Tensor):
                raise TypeError("Adam parameters must be Tensors")
        beta1, beta2 = betas
        if not lr > 0:
            raise ValueError("lr must be positive")
        if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
            raise ValueError("betas must be in [0, 1)")
        if not eps >= 0:
            raise ValueError("eps must be non-negative")
        if not weight_decay >= 0:
            raise ValueError("weight_decay must be non-negative")
        self._parameters = taken
        self.lr = float(lr)
        self.betas = (float(beta1), float(beta2))
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)
        # Per parameter: its step count and moments (made at its first step).
        self._steps = [0] * len(taken)
        self._moments: list[tuple[Any, Any] | None] = [None] * len(taken)

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
        with no_grad():
            updates = []
            for index, parameter in enumerate(self._parameters):
                gradient = parameter.grad
                if gradient is None:
                    continue
                _check_update(parameter, gradient)
                updates.append((index, parameter, gradient))
            beta1, beta2 = self.betas
            for index, parameter, gradient in updates:
                self._steps[index] += 1
                t = self._steps[index]
                native = _native_pair(parameter, gradient)
                if self._moments[index] is None:
                    self._moments[index] = _zero_moments(parameter, native)
                m, v = self._moments[index]
                if native:
                    _adam_step(
                        parameter,
                        gradient,
                        m,
                        v,
                        self.lr,
                        beta1,
                        beta2,
                        self.eps,
                        self.weight_decay,
                        t,
                    )
                    continue
                c1, c2 = 1.0 - beta1**t, 1.0 - beta2**t
                carrier, source = parameter.carrier, gradient.carrier
                pairs = zip(_physical(parameter), _physical(gradient), strict=True)
                for k, (target, origin) in enumerate(pairs):
                    g = float(source[origin]) + self.weight_decay * float(carrier[target])
                    m[k] = beta1 * m[k] + (1.0 - beta1) * g
                    v[k] = beta2 * v[k] + (1.0 - beta2) * g * g
                    carrier[target] -= self.lr * (m[k] / c1) / (math.sqrt(v[k] / c2) + self.eps)

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
        for parameter in self._parameters:
            parameter.grad = None


def _check_update(parameter: Tensor, gradient: Tensor) -> None:
    """The checks every optimizer makes before it writes anything."""
    if gradient.size() != parameter.size():
        raise ValueError("gradient size must match parameter size")
    if parameter.carrier.is_released() or gradient.carrier.is_released():
        raise RuntimeError("Carrier is released")
    if not parameter.is_mutable():
        raise RuntimeError("Carrier is not mutable")


def _native_pair(parameter: Tensor, gradient: Tensor) -> bool:
    """Whether one library call can update parameter from gradient."""
    return (
        type(parameter.carrier) is type(gradient.carrier) is CPU
        and parameter.dtype() is gradient.dtype() is DType.Float32
        and parameter.layout.shape == gradient.layout.shape
    )


def _zero_moments(parameter: Tensor, native: bool) -> tuple[Any, Any]:
    """Zero moment estimates: tensors with the parameter's layout, or lists."""
    if native:
        layout = parameter.layout
        return (
            Tensor(CPU(layout.cosize), 0, layout),
            Tensor(CPU(layout.cosize), 0, layout),
        )
    n = parameter.size()
    return [0.0] * n, [0.0] * n


def _descend(parameter: Tensor, gradient: Tensor, lr: float) -> None:
    """``parameter -= lr * gradient`` over every logical element.

    CPU Float32 pairs of one shape (what training makes) take one library
    call over the whole storage; other carriers and dtypes go element by
    element in logical order.
    """
    if _native_pair(parameter, gradient):
        _axpy(parameter, -lr, gradient)
        return
    carrier, source = parameter.carrier, gradient.carrier
    for target_index, source_index in zip(_physical(parameter), _physical(gradient), strict=True):
        carrier[target_index] -= lr * source[source_index]


def _physical(tensor: Tensor) -> list[int]:
    """The physical index of every logical element, in logical order."""
    offset = tensor.offset
    index = tensor.layout.index
    return [offset + index(i) for i in range(tensor.size())]
