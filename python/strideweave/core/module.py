"""Modules and parameters: PyTorch-like structure over tensors.

A ``Module`` registers the ``Parameter`` and ``Module`` values assigned to its
public attributes, so that ``modules()``, ``parameters()`` and
``get_named_parameters()`` can walk the tree in a fixed order.
"""

from __future__ import annotations

from typing import Any

from strideweave._native import Carrier, Layout, Tensor

__all__ = ["Module", "Parameter"]


def _check_name(name: object) -> None:
    """Raises unless name is None or a non-empty string without a dot."""
    if name is None:
        return
    if not isinstance(name, str):
        raise TypeError("name must be a string or None")
    if not name:
        raise ValueError("name must be non-empty")
    if "." in name:
        raise ValueError("name must not contain '.'")


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
    ) -> None:
        if isinstance(tensor_or_carrier, Tensor):
            if offset is not None or layout is not None:
                raise TypeError(
                    "Parameter constructed from a Tensor does not accept offset or layout"
                )
            _check_name(name)
            source = tensor_or_carrier
            super().__init__(source.carrier, source.offset, source.layout)
        else:
            if offset is None or layout is None:
                raise TypeError(
                    "Parameter requires offset and layout when constructed from a carrier"
                )
            _check_name(name)
            super().__init__(tensor_or_carrier, offset, layout)
        self.name = name

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
        return (Parameter, (Tensor(self.carrier, self.offset, self.layout),), dict(self.__dict__))


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

    def __init__(self, *, name: str | None = None) -> None:
        _check_name(name)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "name", name)

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
        registries = self.__dict__.get("_parameters"), self.__dict__.get("_modules")
        if name.startswith("_") or registries[0] is None or registries[1] is None:
            object.__setattr__(self, name, value)
            return
        parameters, modules = registries
        if name == "name":
            _check_name(value)
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Parameter):
            modules.pop(name, None)
            parameters[name] = value
        elif isinstance(value, Module):
            parameters.pop(name, None)
            modules[name] = value
        else:
            parameters.pop(name, None)
            modules.pop(name, None)
        object.__setattr__(self, name, value)

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
        for registry in (self.__dict__.get("_parameters"), self.__dict__.get("_modules")):
            if registry is not None:
                registry.pop(name, None)
        object.__delattr__(self, name)

    def extra_repr(self) -> str:
        """The text inside this module's repr before its children; "" here.

        Returns:
            A string that subclasses override with their settings.

        Examples:
            >>> import strideweave as sw
            >>> sw.Module().extra_repr()
            ''
        """
        return ""

    def __repr__(self) -> str:
        """The module tree as PyTorch prints it: each child as ``(name): repr``.

        Returns:
            ``Name(extra)`` for a module without children, else the children
            indented one per line.

        Examples:
            >>> import strideweave as sw
            >>> root = sw.Module()
            >>> root.child = sw.Module()
            >>> print(root)
            Module(
              (child): Module()
            )
        """
        from strideweave._show import module_repr

        return module_repr(self)

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
        raise NotImplementedError("Module subclasses must implement forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
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
        return self.forward(*args, **kwargs)

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
        return tuple(module for module, _ in self._walk())

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
        return tuple(parameter for _, parameter in self.get_named_parameters())

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
        seen: set[int] = set()
        named: list[tuple[str, Parameter]] = []
        for module, prefix in self._walk():
            for attribute, parameter in module._parameters.items():
                if id(parameter) not in seen:
                    seen.add(id(parameter))
                    named.append((prefix + (parameter.name or attribute), parameter))
        return tuple(named)

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
        return list(self.get_named_parameters())

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
        return {name: parameter.detach() for name, parameter in self.get_named_parameters()}

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
        from collections.abc import Mapping

        if not isinstance(state, Mapping):
            raise TypeError("load_state_dict needs a mapping from names to Tensors")
        own = dict(self.get_named_parameters())
        missing = [name for name in own if name not in state]
        unexpected = [name for name in state if name not in own]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys {missing}")
            if unexpected:
                parts.append(f"unexpected keys {unexpected}")
            raise KeyError("load_state_dict: " + ", ".join(parts))
        pairs = []
        for name, parameter in own.items():
            if name not in state:
                continue
            value = state[name]
            if not isinstance(value, Tensor):
                raise TypeError(f"load_state_dict: the value of {name!r} is not a Tensor")
            if value.shape != parameter.shape:
                raise ValueError(
                    f"load_state_dict: {name!r} has shape {value.shape} in the state"
                    f" but {parameter.shape} in the module"
                )
            pairs.append((parameter, value))
        for parameter, value in pairs:
            target = Tensor(parameter.carrier, parameter.offset, parameter.layout)
            if value.layout.shape == parameter.layout.shape:
                parameter.carrier.scatter(value, target, parameter.layout)
            else:
                for i in range(parameter.size()):
                    target[i] = value[i]
        return missing, unexpected

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
        return bool(self.__dict__.get("_training", True))

    @training.setter
    def training(self, mode: bool) -> None:
        object.__setattr__(self, "_training", bool(mode))

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
        for module in self.modules():
            module.training = bool(mode)
        return self

    def eval(self) -> Module:
        """``train(False)``.

        Returns:
            self.

        Examples:
            >>> import strideweave as sw
            >>> sw.Module().eval().training
            False
        """
        return self.train(False)

    def _walk(self) -> list[tuple[Module, str]]:
        """Pre-order walk: each distinct module once, with its path prefix."""
        seen = {id(self)}
        order: list[tuple[Module, str]] = [(self, "")]
        # Iterators instead of recursion, so deep chains cannot overflow.
        stack = [(iter(self._modules.items()), "")]
        while stack:
            children, prefix = stack[-1]
            entry = next(children, None)
            if entry is None:
                stack.pop()
                continue
            attribute, child = entry
            if id(child) in seen:
                continue
            seen.add(id(child))
            child_prefix = prefix + (child.name or attribute) + "."
            order.append((child, child_prefix))
            stack.append((iter(child._modules.items()), child_prefix))
        return order
