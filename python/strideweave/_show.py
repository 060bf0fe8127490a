"""Printing and Python values of tensors and carriers (repr, str, tolist, numpy).

The extension's Tensor and Carrier slots call these functions; they read
only the elements they print (at most about 2 * EDGE per mode of a tensor
beyond THRESHOLD elements) and never read a released carrier or promote an
evicted one.
"""

from __future__ import annotations

import math
from typing import Any

# Tensors of more elements print abbreviated, as NumPy's defaults do.
THRESHOLD = 1000
EDGE = 3


def _carrier_state(carrier: Any) -> str | None:
    """'released', 'evicted', or None when the values can be read."""
    try:
        if carrier.is_released():
            return "released"
        is_evicted = getattr(carrier, "is_evicted", None)
        if is_evicted is not None and is_evicted():
            return "evicted"
    except Exception:  # noqa: BLE001 (a broken carrier still prints)
        return "unreadable"
    return None


def _subtensors(tensor: Any) -> int:
    """How many subtensors hold the tensor; their values are not readable
    element by element when there are several."""
    try:
        return len(tensor._representation.subtensors)
    except Exception:  # noqa: BLE001 (a broken carrier still prints)
        return 1


def _dtype_name(obj: Any) -> str:
    try:
        return str(obj.dtype().name)
    except Exception:  # noqa: BLE001
        return "?"


def _indices(extent: int, abbreviate: bool) -> list[int | None]:
    """The coordinates printed along one mode; None marks the '...'."""
    if abbreviate and extent > 2 * EDGE:
        return [*range(EDGE), None, *range(extent - EDGE, extent)]
    return list(range(extent))


def _format_numbers(values: list[Any]) -> list[str]:
    """Formats the printed values alike: floats share one style and width."""
    floats = [v for v in values if isinstance(v, float)]
    if floats and len(floats) == len(values):
        finite = [v for v in floats if math.isfinite(v)]
        if all(v == int(v) for v in finite) and all(abs(v) < 1e16 for v in finite):
            texts = [f"{v:.0f}." if math.isfinite(v) else str(v) for v in floats]
        elif finite and (
            max(abs(v) for v in finite) >= 1e8 or 0 < min(abs(v) for v in finite if v) < 1e-4
        ):
            texts = [f"{v:.4e}" for v in floats]
        else:
            texts = [f"{v:.4f}" if math.isfinite(v) else str(v) for v in floats]
    else:
        texts = [repr(v) for v in values]
    width = max((len(t) for t in texts), default=0)
    return [t.rjust(width) for t in texts]


def _grid(tensor: Any) -> tuple[list[int], bool]:
    extents = list(tensor.shape)
    return extents, tensor.size() > THRESHOLD


def _read(tensor: Any, coord: tuple[int, ...]) -> Any:
    try:
        return tensor[coord] if coord else tensor[0]
    except Exception as e:  # noqa: BLE001 (one bad element does not hide the rest)
        return _Unreadable(type(e).__name__)


class _Unreadable:
    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"


def _values_text(tensor: Any, indent: int) -> str:
    extents, abbreviate = _grid(tensor)
    if not extents:
        return _format_numbers([_read(tensor, ())])[0]
    picks = [_indices(e, abbreviate) for e in extents]
    coords: list[tuple[int, ...]] = []

    def collect(prefix: tuple[int, ...], depth: int) -> None:
        for i in picks[depth]:
            if i is None:
                continue
            if depth + 1 == len(picks):
                coords.append((*prefix, i))
            else:
                collect((*prefix, i), depth + 1)

    collect((), 0)
    texts = iter(_format_numbers([_read(tensor, c) for c in coords]))

    def render(depth: int) -> str:
        pad = " " * (indent + depth + 1)
        last = depth + 1 == len(picks)
        parts = []
        for i in picks[depth]:
            if i is None:
                parts.append("...")
            else:
                parts.append(next(texts) if last else render(depth + 1))
        if last:
            return "[" + ", ".join(parts) + "]"
        separator = "," + "\n" * (len(picks) - depth - 1) + pad
        return "[" + separator.join(parts) + "]"

    return render(0)


def tensor_str(tensor: Any) -> str:
    """The values alone, nested by top-level modes (mode 0 outermost)."""
    state = _carrier_state(tensor.carrier)
    if state is not None:
        return f"<{state}>"
    planes = _subtensors(tensor)
    if planes > 1:
        return f"<{planes} subtensors>"
    return _values_text(tensor, 0)


def tensor_repr(tensor: Any) -> str:
    """Values, dtype, carrier class and layout (CuTe notation)."""
    name = type(tensor).__name__
    carrier = tensor.carrier
    state = _carrier_state(carrier)
    planes = _subtensors(tensor)
    if state is not None:
        values = f"<{state}>"
    elif planes > 1:
        values = f"<{planes} subtensors>"
    else:
        values = _values_text(tensor, len(name) + 1)
    layout = tensor.layout
    text = (
        f"{name}({values}, dtype={_dtype_name(tensor)}, "
        f"carrier={type(carrier).__name__}, layout={layout!r}"
    )
    parameter_name = getattr(tensor, "name", None)
    if isinstance(parameter_name, str):
        text += f", name={parameter_name!r}"
    if layout.depth > 1:
        text += f", hierarchical: values by top-level modes {tensor.shape}"
    return text + ")"


def tolist(tensor: Any) -> Any:
    """Nested lists by top-level modes (mode 0 outermost), in logical order."""
    extents = list(tensor.shape)
    if not extents:
        return tensor[0]

    def build(prefix: tuple[int, ...], depth: int) -> list[Any]:
        if depth + 1 == len(extents):
            return [tensor[(*prefix, i)] for i in range(extents[depth])]
        return [build((*prefix, i), depth + 1) for i in range(extents[depth])]

    return build((), 0)


def to_numpy(tensor: Any) -> Any:
    """A NumPy array: zero-copy through DLPack where the carrier exports, else a copy."""
    import numpy as np

    try:
        array = np.from_dlpack(tensor)
    except (BufferError, TypeError, RuntimeError, ValueError, NotImplementedError):
        array = None
    if array is not None and array.shape == tensor.shape:
        return array
    values = tolist(tensor)
    dtype = {"Float32": np.float32, "Int32": np.int32, "Floating": np.float64}.get(
        _dtype_name(tensor)
    )
    return np.array(values, dtype=dtype if dtype is not None else object)


def carrier_repr(carrier: Any) -> str:
    """Class, size, dtype and state of a carrier."""
    name = type(carrier).__name__
    fields = []
    try:
        fields.append(f"size={carrier.size()}")
    except Exception:  # noqa: BLE001
        fields.append("size=?")
    fields.append(f"dtype={_dtype_name(carrier)}")
    state = _carrier_state(carrier)
    if state is not None:
        fields.append(state)
    return f"{name}({', '.join(fields)})"


def module_repr(module: Any) -> str:
    """PyTorch's form: ``Name(extra)``, or the child modules indented below it."""
    extra = module.extra_repr()
    lines = [
        f"({name}): " + repr(child).replace("\n", "\n  ") for name, child in module._modules.items()
    ]
    head = f"{type(module).__name__}("
    if not lines:
        return head + extra + ")"
    body = ([extra] if extra else []) + lines
    return head + "\n  " + "\n  ".join(body) + "\n)"
