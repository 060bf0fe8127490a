import os
from typing import Any

import numpy as np

from strideweave.tensor import Tensor

def cpu_from_array(array: np.ndarray[Any, Any], *, column_major: bool = False) -> Tensor:
    """A fresh CPU tensor holding a copy of a NumPy array's values.

    float arrays become Float32, bool arrays Bool, integer arrays Int32
    (ValueError when a value does not fit). The layout is the compact
    row-major (or column-major) layout of the array's shape.
    """

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
