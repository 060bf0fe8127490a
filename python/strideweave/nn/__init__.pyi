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
    """An affine layer ``y = x @ weight + ones @ bias`` on CPU Float32."""

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
    def extra_repr(self) -> str: ...
    def forward(self, tensor: Tensor) -> Tensor: ...

class _Activation(Module):
    def forward(self, tensor: Tensor) -> Tensor: ...

class ReLU(_Activation): ...
class Sigmoid(_Activation): ...
class Tanh(_Activation): ...
class GELU(_Activation): ...
class SiLU(_Activation): ...
class Softplus(_Activation): ...
class ELU(_Activation): ...
class LeakyReLU(_Activation): ...

class MSELoss(Module):
    """Mean squared error ``mean((prediction - target) ** 2.0)``."""

    def forward(self, prediction: Tensor, target: Tensor) -> Tensor: ...

class SGD:
    """Plain stochastic gradient descent: ``p -= lr * p.grad`` in place."""

    lr: float
    def __init__(self, parameters: Iterable[Tensor], lr: float) -> None: ...
    def step(self) -> None: ...
    def zero_grad(self) -> None: ...

class Adam:
    """Adam with bias correction, as ``torch.optim.Adam`` without amsgrad."""

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
    def step(self) -> None: ...
    def zero_grad(self) -> None: ...
