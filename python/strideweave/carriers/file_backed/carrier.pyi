"""The FileBacked carrier: raw numeric values in a binary file."""

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, SupportsIndex

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType

__all__ = ["FileBacked"]

class FileBacked(Carrier):
    """Raw numeric values in a binary file, in native byte order.

    Floating values are 8-byte doubles, Float32 and Int32 values 4 bytes. A new carrier has size
    0; _allocate and allocate_like make room (zero-filled). Elements are read and written in the
    file directly, so memory use does not grow with the file. With no filename the file is a
    private temporary without a name in the file system, gone on release, on garbage collection
    and however the process ends. A filename is a path that is created exclusively (empty,
    reserving the name), made absolute and kept; a move that grows the empty file shows its
    values under the name only once they are all written. I/O failures raise OSError and leave
    the carrier and its values as they were. For storage and movement only: FileBacked carriers
    run no computation.

    Args:
        filename: None, or the path of a file to create (str, bytes or os.PathLike).
        mutable: whether the carrier can be written.
        dtype: DType.Floating, DType.Float32 or DType.Int32.

    Returns:
        FileBacked: the carrier.

    Raises:
        TypeError: 'FileBacked dtype must be a DType'.
        ValueError: 'FileBacked dtype must be DType.Floating, DType.Float32, or DType.Int32'.
        FileExistsError: the file exists already.
        OSError: the file cannot be created.

    Examples:
        >>> f = FileBacked(dtype=DType.Int32)
        >>> f.size()
        0
        >>> f._allocate(3)
        >>> f[2] = 7
        >>> list(f), f.size()
        ([0, 0, 7], 3)
        >>> f.path.exists()
        False
    """

    def __init__(
        self,
        filename: str | bytes | os.PathLike[str] | os.PathLike[bytes] | None = None,
        *,
        mutable: bool = True,
        dtype: DType = ...,
    ) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    @classmethod
    def open(
        cls,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        *,
        dtype: DType = ...,
        mutable: bool = False,
        offset: SupportsIndex | None = None,
        size: SupportsIndex | None = None,
    ) -> FileBacked:
        """Opens an existing raw file as a FileBacked carrier, beside the constructor (which always
        creates its file): the size is the file's length over the dtype's item size and the values
        are its bytes in native order. With mutable=True writes go to the file. The file is kept
        after release and never removed.

        With offset or size, the carrier is a window of the file: size elements (default: the
        whole elements up to the end) whose first one is at byte offset (default 0). The rest of
        the file is never read or written, and a window's size is fixed (it cannot be resized,
        so it does not grow as a move's destination). ``sw.load(path, file_backed=True)`` opens
        the tensors of a safetensors file this way.

        Args:
            path: the file (str, bytes or os.PathLike).
            dtype: DType.Floating (8-byte floats), DType.Float32 or DType.Int32.
            mutable: whether the carrier may be written (the file is opened read-write).
            offset: the byte offset of a window's first element, an int >= 0, or None.
            size: a window's element count, an int >= 0, or None.

        Returns:
            FileBacked: the carrier.

        Raises:
            TypeError: an offset or size that is not an int.
            ValueError: another dtype, a path that is not a regular file, a length that is not a
                multiple of the item size, a negative offset or size, or a window that passes the
                end of the file.
            FileNotFoundError: no such file (OSError for other failures).

        Examples:
            >>> import os, struct, tempfile
            >>> from strideweave import DType, FileBacked
            >>> path = os.path.join(tempfile.mkdtemp(), "raw.bin")
            >>> with open(path, "wb") as f:
            ...     _ = f.write(bytes(8))
            >>> c = FileBacked.open(path, dtype=DType.Float32)
            >>> c.size(), c[1], c.is_mutable()
            (2, 0.0, False)
            >>> with open(path, "wb") as f:
            ...     _ = f.write(b"head" + struct.pack("<2f", 1.5, 2.5))
            >>> w = FileBacked.open(path, dtype=DType.Float32, offset=4)
            >>> w.size(), w[0], w[1]
            (2, 1.5, 2.5)
        """
    @property
    def path(self) -> Path:
        """The file's absolute path.

        A temporary has no name in the file system; its path is the directory it lives in joined
        with strideweave-<pid>-<n>, a name that does not exist.

        Returns:
            pathlib.Path: the path (resolved at construction).

        Examples:
            >>> FileBacked().path.is_absolute()
            True
        """
    def size(self) -> int:
        """The number of elements in the file, read from the file on each call; 0 after release.

        Returns:
            int: the file size divided by the item size.

        Examples:
            >>> FileBacked().size()
            0
        """
    def dtype(self) -> DType:
        """The element type.

        Returns:
            DType: Floating, Float32 or Int32.

        Examples:
            >>> FileBacked().dtype()
            <DType.Floating: 'Floating'>
        """
    def get_value(self, index: SupportsIndex, /) -> float | int:
        """Reads one element from the file.

        Args:
            index: the element, 0 <= index < size().

        Returns:
            float | int: the value (Float32 values widened to double).

        Raises:
            RuntimeError: 'Carrier is released'.
            IndexError: 'Carrier index out of range'.
            OSError: the read failed.

        Examples:
            >>> f = FileBacked()
            >>> f._allocate(1)
            >>> f.get_value(0)
            0.0
        """
    def set_value(self, index: SupportsIndex, value: Any, /) -> None:
        """Writes one element to the file and bumps the version.

        Args:
            index: the element, 0 <= index < size().
            value: a number (an integer for Int32).

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is not mutable', 'Carrier is released'.
            IndexError: 'Carrier index out of range'.
            TypeError: 'FileBacked value must be a number', 'FileBacked value must be an integer'.
            OverflowError: 'FileBacked value is out of int32 range'.
            OSError: the write failed; the element is unchanged.

        Examples:
            >>> f = FileBacked(dtype=DType.Float32)
            >>> f._allocate(1)
            >>> f.set_value(0, 0.1)
            >>> f[0], f.version
            (0.10000000149011612, 1)
        """
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> FileBacked:
        """A new temporary FileBacked holding values (None entries are zero; exact FileBacked only).

        Args:
            values: an iterable of numbers or None.
            mutable: whether the new carrier can be written.
            dtype: the element type; None means this carrier's.

        Returns:
            FileBacked: the new carrier.

        Raises:
            NotImplementedError: 'FileBacked carrier factory only supports exact FileBacked
                carriers' on a subclass.

        Examples:
            >>> list(FileBacked().new_like([1, None, 2.5]))
            [1.0, 0.0, 2.5]
        """
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> FileBacked:
        """A new temporary FileBacked of size zero elements.

        Args:
            size: the element count, >= 0.
            mutable: whether the new carrier can be written.
            dtype: the element type; None means this carrier's.
            empty: ignored (files are zero-filled).

        Returns:
            FileBacked: the new carrier.

        Raises:
            ValueError: 'FileBacked allocation size must be non-negative'.

        Examples:
            >>> FileBacked().allocate_like(4).size()
            4
        """
    def _allocate(self, size: SupportsIndex, /) -> None:
        """Truncates or extends the file to size elements (new ones are zero).

        Args:
            size: the element count, >= 0.

        Returns:
            None.

        Raises:
            ValueError: 'FileBacked allocation size must be non-negative'.
            RuntimeError: 'Carrier is released'.

        Examples:
            >>> f = FileBacked()
            >>> f._allocate(2)
            >>> f.size()
            2
        """
    def scatter(
        self,
        to_scatter: Any,
        scatter_onto: Any,
        mapping: Any,
        mapping_offset: Any = 0,
    ) -> None:
        """Not supported: FileBacked carriers are for storage and movement.

        Args:
            to_scatter: ignored.
            scatter_onto: ignored.
            mapping: ignored.
            mapping_offset: ignored.

        Returns:
            None: never returns.

        Raises:
            NotImplementedError: 'FileBacked carriers do not support scatter'.

        Examples:
            >>> FileBacked().scatter(None, None, None)
            Traceback (most recent call last):
            ...
            NotImplementedError: FileBacked carriers do not support scatter
        """
