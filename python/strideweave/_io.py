"""Saving and loading tensors in the safetensors format, and copies of
foreign arrays into CPU carriers.

A safetensors file is an 8-byte little-endian header length, a JSON header
naming each tensor's dtype, shape and byte range, and the raw values in
row-major (C) order. ``save`` writes one from a Tensor, a dict of Tensors
or a Module's ``state_dict()``; ``load`` reads one back, including files
written by the ``safetensors`` package for NumPy or PyTorch.

Values move in bulk: a tensor is read with ``Tensor.numpy()`` and a file's
bytes reach a fresh CPU carrier through one library scatter from a
borrowed view of the buffer, never element by element. With
``file_backed=True`` the F32 and I32 entries are not read at all: each
becomes a read-only FileBacked window over its bytes in the file.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from strideweave.carriers import CPU, DType, FileBacked, Generic
from strideweave.core.layout import Layout, Shape, Stride
from strideweave.tensor import Tensor

if TYPE_CHECKING:
    import numpy as np

# The safetensors dtype names and the NumPy types of their bytes.
_FILE_DTYPES: dict[str, str] = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "U16": "<u2",
    "U32": "<u4",
    "BOOL": "?",
}
_SUPPORTED = "F32, F16, BF16, F64, I64, I32, I16, I8, U8, U16, U32 or BOOL"
_HEADER_LIMIT = 100 * 1024 * 1024  # as the safetensors package bounds it


def _row_major(shape: tuple[int, ...]) -> Layout:
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return Layout(Shape(*shape), Stride(*reversed(strides)))


def _column_major(shape: tuple[int, ...]) -> Layout:
    strides: list[int] = []
    step = 1
    for extent in shape:
        strides.append(step)
        step *= extent
    return Layout(Shape(*shape), Stride(*strides))


def cpu_from_array(array: np.ndarray, *, column_major: bool = False) -> Tensor:
    """A fresh CPU tensor holding a copy of a NumPy array's values.

    float arrays become Float32, bool arrays Bool, integer arrays Int32
    (ValueError when a value does not fit). The layout is the compact
    row-major (or column-major) layout of the array's shape.
    """
    import numpy as np

    shape = tuple(int(d) for d in array.shape)
    if any(d == 0 for d in shape):
        raise ValueError(f"cannot hold an array of shape {shape}: modes have at least one element")
    kind = array.dtype.kind
    if kind == "b":
        dtype, npdtype = DType.Bool, np.dtype("?")
    elif kind == "f":
        dtype, npdtype = DType.Float32, np.dtype(np.float32)
    elif kind in "iu":
        dtype, npdtype = DType.Int32, np.dtype(np.int32)
        if array.size and (array.min() < -(2**31) or array.max() >= 2**31):
            raise ValueError("integer values outside Int32 cannot be held by a CPU carrier")
    else:
        raise TypeError(f"cannot copy an array of dtype {array.dtype} (bool, int or float)")
    order = "F" if column_major else "C"
    data = np.require(array.astype(npdtype, order=order, copy=False), requirements=[order, "A"])
    layout = (_column_major if column_major else _row_major)(shape)
    count = max(1, int(data.size))
    fresh = CPU(count, dtype=dtype)
    borrowed = CPU(count, data.ctypes.data, mutable=False, dtype=dtype)
    try:
        flat = Layout(Shape(count), Stride(1))
        fresh.scatter(Tensor(borrowed, 0, flat), Tensor(fresh, 0, flat), flat)
    finally:
        borrowed.release()
    return Tensor(fresh, 0, layout)


def _to_array(tensor: Tensor) -> tuple[str, np.ndarray]:
    """The safetensors dtype name and the values of tensor, row-major."""
    import numpy as np

    dtype = tensor.dtype()
    names = {DType.Float32: "F32", DType.Int32: "I32", DType.Bool: "BOOL", DType.Floating: "F64"}
    if dtype not in names:
        raise TypeError(
            f"cannot save a tensor of dtype {dtype.name} (Float32, Int32, Bool or Floating)"
        )
    if tensor.carrier.is_released():
        raise RuntimeError("Carrier is released")
    array = np.asarray(tensor.numpy())
    npdtype = np.dtype(_FILE_DTYPES[names[dtype]])
    return names[dtype], np.ascontiguousarray(array.astype(npdtype, copy=False))


def _entries(obj: Any) -> tuple[dict[str, Tensor], str]:
    """The named tensors to save and the kind recorded in the metadata."""
    from strideweave.core.module import Module

    if isinstance(obj, Tensor):
        return {"tensor": obj}, "tensor"
    if isinstance(obj, Module):
        return obj.state_dict(), "state_dict"
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError("save: dict keys must be strings")
            if not isinstance(value, Tensor):
                raise TypeError(f"save: the value of {key!r} is not a Tensor")
        return dict(obj), "dict"
    raise TypeError("save takes a Tensor, a dict of Tensors or a Module")


def save(obj: Any, path: str | os.PathLike[str]) -> None:
    """Writes a Tensor, a dict of Tensors or a Module's state to a safetensors file.

    Tensors are stored by their logical values in row-major order with
    their top-level shape (a hierarchical mode as its size): Float32 as
    F32, Int32 as I32, Bool as BOOL, Floating as F64. The file is written
    to a temporary name beside ``path`` and renamed, so a failure leaves no
    partial file.

    Args:
        obj: a Tensor (stored under the name ``"tensor"``), a dict from
            strings to Tensors, or a Module (its ``state_dict()``).
        path: the file to write (replaced if it exists).

    Returns:
        None

    Raises:
        TypeError: another object, a non-string key, a non-Tensor value, or
            a dtype other than Float32, Int32, Bool and Floating.
        RuntimeError: a released carrier.
        OSError: the file cannot be written.

    Examples:
        >>> import os, tempfile
        >>> import strideweave as sw
        >>> import strideweave.friendly as F
        >>> path = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> sw.save({"w": F.tensor([[1.0, 2.0]])}, path)
        >>> sw.load(path)["w"].tolist()
        [[1.0, 2.0]]
    """
    entries, kind = _entries(obj)
    header: dict[str, Any] = {"__metadata__": {"format": "strideweave", "kind": kind}}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(entries):
        dtype, array = _to_array(entries[name])
        blob = array.tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(entries[name].shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    target = os.fspath(path)
    partial = f"{target}.partial-{os.getpid()}"
    try:
        with open(partial, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for blob in blobs:
                f.write(blob)
        os.replace(partial, target)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise


def _bad(path: str, why: str) -> ValueError:
    return ValueError(f"{path} is not a safetensors file: {why}")


def _read_header(path: str, f: Any, size: int) -> tuple[dict[str, Any], int]:
    head = f.read(8)
    if len(head) < 8:
        raise _bad(path, "shorter than its header length")
    (length,) = struct.unpack("<Q", head)
    if length > min(_HEADER_LIMIT, size - 8):
        raise _bad(path, "the header length passes the end of the file")
    try:
        header = json.loads(f.read(length).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(path, f"the header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    return header, 8 + length


def _check_entry(
    path: str, name: str, entry: Any, data_size: int
) -> tuple[str, tuple[int, ...], int, int]:
    import numpy as np

    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise _bad(path, f"entry {name!r} lacks dtype, shape or data_offsets")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype != "BF16" and dtype not in _FILE_DTYPES:
        raise ValueError(f"{path}: entry {name!r} has dtype {dtype!r}; supported: {_SUPPORTED}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise _bad(path, f"entry {name!r} has a bad shape")
    if not (
        isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(v, int) for v in offsets)
    ):
        raise _bad(path, f"entry {name!r} has bad data_offsets")
    begin, end = offsets
    itemsize = 2 if dtype == "BF16" else np.dtype(_FILE_DTYPES[dtype]).itemsize
    count = 1
    for d in shape:
        count *= d
    if not 0 <= begin <= end <= data_size or end - begin != count * itemsize:
        raise _bad(path, f"entry {name!r} has data_offsets that do not fit its shape or the file")
    return dtype, tuple(shape), begin, end


def _array_of(dtype: str, raw: bytes, shape: tuple[int, ...]) -> np.ndarray:
    import numpy as np

    if dtype == "BF16":
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=_FILE_DTYPES[dtype]).reshape(shape)


def _tensor_of(dtype: str, array: np.ndarray) -> Tensor:
    if dtype == "F64":
        shape = tuple(int(d) for d in array.shape)
        values = [float(v) for v in array.reshape(-1)] or [0.0]
        return Tensor(Generic(values, dtype=DType.Floating), 0, _row_major(shape))
    return cpu_from_array(array)


# The entries a window can show as they are: little-endian 4-byte values.
_WINDOW_DTYPES = {"F32": DType.Float32, "I32": DType.Int32}


def load(path: str | os.PathLike[str], *, file_backed: bool = False) -> Any:
    """Reads a safetensors file into fresh tensors.

    F32 entries become CPU Float32 tensors, I32 and the other integer types
    CPU Int32 (ValueError when a value does not fit), BOOL CPU Bool, F16
    and BF16 CPU Float32 (exact), F64 Generic Floating tensors; each has
    the compact row-major layout of its shape (a rank-0 entry the layout
    ``():()``).

    With ``file_backed=True`` nothing of the F32 and I32 entries is read:
    each becomes a Tensor over a read-only FileBacked window of the file
    (``FileBacked.open(path, offset=..., size=...)``), so a checkpoint
    larger than memory can be opened and used; its values are read when
    used (move one to a CPU carrier to have it in memory). Each window
    keeps the file open until its carrier is released or collected. The
    other dtypes need a conversion and are read into memory as above, as
    are all entries on a big-endian machine.

    Args:
        path: the file.
        file_backed: whether F32 and I32 entries stay in the file.

    Returns:
        The Tensor when the file was saved from one by ``save``, else a
        dict from names to Tensors (the order of the file's header).

    Raises:
        ValueError: a file that is not safetensors (the message says why),
            an unsupported dtype, or an entry with an empty mode.
        OSError: the file cannot be read.

    Examples:
        >>> import os, tempfile
        >>> import strideweave as sw
        >>> import strideweave.friendly as F
        >>> path = os.path.join(tempfile.mkdtemp(), "t.safetensors")
        >>> sw.save(F.tensor([1.0, 2.0]), path)
        >>> sw.load(path).tolist()
        [1.0, 2.0]
    """
    if not isinstance(file_backed, bool):
        raise TypeError("file_backed must be a bool")
    name_of_path = os.fspath(path)
    text_path = name_of_path if isinstance(name_of_path, str) else os.fsdecode(name_of_path)
    in_place = file_backed and sys.byteorder == "little"
    with open(name_of_path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header, start = _read_header(text_path, f, size)
        metadata = header.pop("__metadata__", None)
        checked = {
            name: _check_entry(text_path, name, entry, size - start)
            for name, entry in header.items()
        }
        out: dict[str, Tensor] = {}
        for name, (dtype, shape, begin, end) in checked.items():
            if any(d == 0 for d in shape):
                raise ValueError(f"{text_path}: entry {name!r} has an empty mode {shape}")
            if in_place and dtype in _WINDOW_DTYPES:
                window = FileBacked.open(
                    name_of_path,
                    dtype=_WINDOW_DTYPES[dtype],
                    offset=start + begin,
                    size=(end - begin) // 4,
                )
                out[name] = Tensor(window, 0, _row_major(shape))
                continue
            f.seek(start + begin)
            raw = f.read(end - begin)
            out[name] = _tensor_of(dtype, _array_of(dtype, raw, shape))
    kind = metadata.get("kind") if isinstance(metadata, dict) else None
    if kind == "tensor" and list(out) == ["tensor"]:
        return out["tensor"]
    return out


# ---------------------------------------------------------------- pickling
#
# CPU and Generic carriers pickle by value (a copy of every element) and
# tensors as (carrier, offset, layout), so tensors that share a carrier
# still share one after a round trip; Shape, Stride, Layout and DType
# already pickle. A released carrier refuses (RuntimeError); carriers of
# other classes keep pickle's TypeError.


def _restore_cpu(dtype_name: str, data: bytes, mutable: bool) -> CPU:
    import numpy as np

    dtype = DType[dtype_name]
    npdtype = {"Float32": "<f4", "Int32": "<i4", "Bool": "?"}[dtype_name]
    values = np.frombuffer(data, dtype=npdtype)
    if not mutable:
        return CPU(0, dtype=dtype).new_like(values.tolist(), mutable=False, dtype=dtype)
    carrier = cpu_from_array(values).carrier
    assert isinstance(carrier, CPU)
    return carrier


def _reduce_cpu(carrier: CPU) -> tuple[Any, ...]:
    if carrier.is_released():
        raise RuntimeError("Carrier is released")
    n = carrier.size()
    flat = Tensor(carrier, 0, Layout(Shape(n), Stride(1))) if n else None
    import numpy as np

    data = b"" if flat is None else np.ascontiguousarray(np.asarray(flat.numpy())).tobytes()
    return (_restore_cpu, (carrier.dtype().name, data, carrier.is_mutable()))


def _restore_generic(values: list[Any], dtype_name: str, mutable: bool) -> Generic:
    return Generic(values, mutable=mutable, dtype=DType[dtype_name])


def _reduce_generic(carrier: Generic) -> tuple[Any, ...]:
    if carrier.is_released():
        raise RuntimeError("Carrier is released")
    values = [carrier.get_value(i) for i in range(carrier.size())]
    return (_restore_generic, (values, carrier.dtype().name, carrier.is_mutable()))


def _reduce_tensor(tensor: Tensor) -> tuple[Any, ...]:
    return (Tensor, (tensor.carrier, tensor.offset, tensor.layout))


def _register_pickling() -> None:
    import copyreg

    copyreg.pickle(CPU, _reduce_cpu)
    copyreg.pickle(Generic, _reduce_generic)
    copyreg.pickle(Tensor, _reduce_tensor)


_register_pickling()
