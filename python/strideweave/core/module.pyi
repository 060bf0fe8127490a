"""Modules and parameters: PyTorch-like structure over tensors."""

from typing import Any

from strideweave.carriers.base import Carrier
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["Module", "Parameter"]

class Parameter(Tensor):
    """A tensor that a Module registers as one of its parameters."""

    name: str | None
    def __init__(
        self,
        tensor_or_carrier: Tensor | Carrier,
        offset: int | None = None,
        layout: Layout | None = None,
        *,
        name: str | None = None,
    ) -> None: ...

class Module:
    """Base class of layers: subclasses implement ``forward``."""

    name: str | None
    def __init__(self, *, name: str | None = None) -> None: ...
    def __setattr__(self, name: str, value: Any) -> None: ...
    def __delattr__(self, name: str) -> None: ...
    def extra_repr(self) -> str: ...
    def forward(self, *args: Any, **kwargs: Any) -> Any: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def modules(self) -> tuple[Module, ...]: ...
    def parameters(self) -> tuple[Parameter, ...]: ...
    def get_named_parameters(self) -> tuple[tuple[str, Parameter], ...]: ...
