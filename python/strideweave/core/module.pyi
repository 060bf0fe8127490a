"""Modules and parameters: PyTorch-like structure over tensors."""

from typing import Any, ParamSpec, Protocol, TypeVar

from strideweave.carriers.base import Carrier
from strideweave.core.layout import Layout
from strideweave.tensor import Tensor

__all__ = ["Module", "Parameter"]

_P = ParamSpec("_P")
_R_co = TypeVar("_R_co", covariant=True)

# What calling a module sees: its own forward's parameters and result, so
# that model(x) has the type forward gives (Tensor for the nn modules).
class _Forward(Protocol[_P, _R_co]):
    def forward(self, *args: _P.args, **kwargs: _P.kwargs) -> _R_co: ...

class Parameter(Tensor):
    """A tensor that a Module registers as one of its parameters.

    A Parameter is a plain leaf Tensor with an optional ``name``; every Tensor
    API works on it, and operations on it return plain Tensors.

    Args:
        tensor_or_carrier: a Tensor to alias (its carrier, offset and layout
            are shared; its gradient and context are not), or a Carrier.
        offset: the physical offset; required with a carrier, refused with a
            tensor.
        layout: the Layout; required with a carrier, refused with a tensor.
        name: an optional name that replaces the attribute name in
            ``Module.get_named_parameters``.

    Returns:
        The new parameter.

    Raises:
        TypeError: offset or layout given with a tensor, or missing with a
            carrier; a name that is not a string.
        ValueError: an empty name, or one containing '.'.

    Examples:
        >>> import strideweave as sw
        >>> layout = sw.Layout(sw.Shape([2, 1]), sw.Stride([1, 2]))
        >>> p = sw.Parameter(sw.CPU(2), 0, layout, name="w")
        >>> p.name, p.size(), isinstance(p, sw.Tensor)
        ('w', 2, True)
    """

    name: str | None
    def __init__(
        self,
        tensor_or_carrier: Tensor | Carrier,
        offset: int | None = None,
        layout: Layout | None = None,
        *,
        name: str | None = None,
    ) -> None: ...
    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as ``Parameter(Tensor(carrier, offset, layout))`` plus its attributes.

        The carrier pickles by value where it can (CPU, Generic); the
        gradient and autograd context are not kept.

        Returns:
            The reduce tuple.

        Examples:
            >>> import pickle
            >>> import strideweave as sw
            >>> p = sw.Parameter(sw.CPU(2), 0, sw.Layout(sw.Shape(2), sw.Stride(1)), name="w")
            >>> q = pickle.loads(pickle.dumps(p))
            >>> q.name, q.tolist()
            ('w', [0.0, 0.0])
        """

class Module:
    """Base class of layers: subclasses implement ``forward``.

    Assigning a Parameter or a Module to a public attribute registers it (in
    assignment order) for ``modules()``, ``parameters()`` and
    ``get_named_parameters()``; any other value unregisters the name. Names
    starting with ``_`` and assignments made before ``Module.__init__`` are
    plain attributes.

    Args:
        name: an optional name that replaces the attribute name as this
            module's path segment; validated on every assignment.

    Returns:
        The new module.

    Raises:
        TypeError: a name that is not a string.
        ValueError: an empty name, or one containing '.'.

    Examples:
        >>> import strideweave as sw
        >>> layout = sw.Layout(sw.Shape([1, 1]), sw.Stride([1, 1]))
        >>> root = sw.Module()
        >>> root.weight = sw.Parameter(sw.CPU(1), 0, layout)
        >>> root.child = sw.Module(name="encoder")
        >>> root.child.weight = sw.Parameter(sw.CPU(1), 0, layout, name="kernel")
        >>> [name for name, _ in root.get_named_parameters()]
        ['weight', 'encoder.kernel']
    """

    name: str | None
    def __init__(self, *, name: str | None = None) -> None: ...
    def __setattr__(self, name: str, value: Any) -> None:
        """Sets an attribute and keeps the registries in step with it.

        Args:
            name: the attribute name.
            value: the value; a Parameter or Module under a public name is
                registered, anything else unregisters the name.

        Returns:
            None.

        Examples:
            >>> import strideweave as sw
            >>> m = sw.Module()
            >>> m.child = sw.Module()
            >>> m.child = None
            >>> m.modules() == (m,)
            True
        """
    def __delattr__(self, name: str) -> None:
        """Unregisters a name, then deletes the attribute.

        Args:
            name: the attribute name.

        Returns:
            None.

        Examples:
            >>> import strideweave as sw
            >>> m = sw.Module()
            >>> m.child = sw.Module()
            >>> del m.child
            >>> m.modules() == (m,)
            True
        """
    def extra_repr(self) -> str:
        """The text inside this module's repr before its children; "" here.

        Returns:
            A string that subclasses override with their settings.

        Examples:
            >>> import strideweave as sw
            >>> sw.Module().extra_repr()
            ''
        """
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Computes the module's output; subclasses override it.

        Args:
            args: positional inputs.
            kwargs: keyword inputs.

        Returns:
            The subclass's result.

        Raises:
            NotImplementedError: on the base class.

        Examples:
            >>> import strideweave as sw
            >>> sw.Module().forward()
            Traceback (most recent call last):
            ...
            NotImplementedError: Module subclasses must implement forward
        """
    def __call__(self: _Forward[_P, _R_co], *args: _P.args, **kwargs: _P.kwargs) -> _R_co:
        """Calls ``forward`` with the same arguments (there are no hooks).

        Args:
            args: positional inputs.
            kwargs: keyword inputs.

        Returns:
            What ``forward`` returns.

        Examples:
            >>> import strideweave as sw
            >>> class Twice(sw.Module):
            ...     def forward(self, x):
            ...         return 2 * x
            >>> Twice()(21)
            42
        """
    def modules(self) -> tuple[Module, ...]:
        """This module and its submodules, depth-first, each once.

        Returns:
            A tuple starting with ``self``, then a pre-order walk of the
            submodules in assignment order; a module reachable on several
            paths appears once, at its first.

        Examples:
            >>> import strideweave as sw
            >>> root, a, b = sw.Module(), sw.Module(), sw.Module()
            >>> root.a = a
            >>> a.b = b
            >>> root.b = b
            >>> root.modules() == (root, a, b)
            True
        """
    def parameters(self) -> tuple[Parameter, ...]:
        """The parameters of ``get_named_parameters()``, in the same order.

        Returns:
            A tuple of distinct parameters.

        Examples:
            >>> import strideweave as sw
            >>> m = sw.Module()
            >>> m.parameters()
            ()
        """
    def get_named_parameters(self) -> tuple[tuple[str, Parameter], ...]:
        """Every distinct parameter with its dotted path.

        Each module contributes its own parameters (in assignment order)
        before its submodules'. A path segment is the module's or the
        parameter's ``name`` when set, else its attribute name; the root's own
        name is never a prefix. Names are read at call time.

        Returns:
            A tuple of ``(path, parameter)`` pairs; a parameter or module
            reachable on several paths appears once, at its first.

        Examples:
            >>> import strideweave as sw
            >>> layout = sw.Layout(sw.Shape([1, 1]), sw.Stride([1, 1]))
            >>> m = sw.Module(name="root")
            >>> m.bias = sw.Parameter(sw.CPU(1), 0, layout)
            >>> [name for name, _ in m.get_named_parameters()]
            ['bias']
        """
    def named_parameters(self) -> list[tuple[str, Parameter]]:
        """``get_named_parameters()`` as a list, under PyTorch's name.

        Returns:
            The ``(path, parameter)`` pairs in registration order.

        Examples:
            >>> import strideweave as sw
            >>> import strideweave.nn as nn
            >>> [name for name, _ in nn.Linear(2, 3).named_parameters()]
            ['weight', 'bias']
        """
    def state_dict(self) -> dict[str, Tensor]:
        """Every parameter by its path, as a tensor over the same storage.

        The values are ``detach()``ed views: they share storage with the
        parameters (later steps show through) and carry no autograd history.

        Returns:
            A dict from ``get_named_parameters()`` paths to Tensors.

        Examples:
            >>> import strideweave.nn as nn
            >>> sorted(nn.Linear(2, 3).state_dict())
            ['bias', 'weight']
        """
    def load_state_dict(self, state: Any, strict: bool = True) -> tuple[list[str], list[str]]:
        """Copies values from a state dict into the parameters.

        Every entry is checked before any is written, so a refused call
        changes nothing. The values are copied (one library scatter per
        parameter when the shapes' trees agree, else element by element);
        the parameters keep their carriers and layouts.

        Args:
            state: a mapping from parameter paths to Tensors (as
                ``state_dict()`` or ``strideweave.load`` give).
            strict: refuse missing and unexpected names (the default);
                when false, only the names present in both are copied.

        Returns:
            ``(missing, unexpected)``: the module's names absent from
            state, and state's names the module lacks.

        Raises:
            TypeError: a state that is not a mapping, or a value that is
                not a Tensor.
            KeyError: (strict) missing or unexpected names, all listed.
            ValueError: a value whose shape differs from its parameter's.

        Examples:
            >>> import strideweave.nn as nn
            >>> a, b = nn.Linear(2, 3), nn.Linear(2, 3)
            >>> b.load_state_dict(a.state_dict())
            ([], [])
            >>> b.weight.tolist() == a.weight.tolist()
            True
        """
    @property
    def training(self) -> bool:
        """Whether the module is in training mode (``train()``/``eval()``).

        Returns:
            True unless ``eval()`` or ``train(False)`` was called last.

        Examples:
            >>> import strideweave as sw
            >>> sw.Module().eval().training
            False
        """
    @training.setter
    def training(self, mode: bool) -> None: ...
    def train(self, mode: bool = True) -> Module:
        """Sets training mode on this module and every module below it.

        No built-in layer behaves differently between the modes; the flag
        is for users' layers (as PyTorch's dropout reads it).

        Args:
            mode: True for training, False for evaluation.

        Returns:
            self.

        Examples:
            >>> import strideweave as sw
            >>> m = sw.Module()
            >>> m.train(False) is m, m.training
            (True, False)
        """
    def eval(self) -> Module:
        """``train(False)``.

        Returns:
            self.

        Examples:
            >>> import strideweave as sw
            >>> sw.Module().eval().training
            False
        """
