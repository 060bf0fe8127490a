"""BlockDevice and BlockDeviceCarrier: synchronous raw storage on a Linux block device."""

import os
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Literal, SupportsIndex, final

from typing_extensions import Buffer

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType

__all__ = ["BlockDevice", "BlockDeviceCarrier"]

@final
class BlockDevice:
    """A Linux block device opened with O_DIRECT, handing out extents of whole physical blocks.

    BlockDevice is not a Carrier: its allocate() makes BlockDeviceCarrier objects, each one
    holding Float32 values in an extent of the device. Every transfer goes through buffers
    aligned to the logical block size; interrupted and short transfers are retried, and a
    terminal I/O error or a transfer that makes no progress faults the whole device. One lock
    per device serialises the transfers of all of its carriers.

    Args:
        path: a str or os.PathLike whose __fspath__ gives str; kept exactly as given.

    Returns:
        BlockDevice: the open device.

    Raises:
        TypeError: 'BlockDevice path must have a string filesystem representation'.
        ValueError: 'BlockDevice path has an embedded NUL character'; '<path> is not a block
            device' for anything but a block special file (a regular file is not written).
        OSError: when the device cannot be opened (errno and filename set).

    Examples:
        >>> BlockDevice("/nonexistent/disk")
        Traceback (most recent call last):
        ...
        FileNotFoundError: [Errno 2] BlockDevice cannot open /nonexistent/disk: No such file or directory: '/nonexistent/disk'
    """

    def __new__(cls, path: str | os.PathLike[str]) -> BlockDevice:
        """Create and return a new object.  See help(type) for accurate signature."""
    @property
    def path(self) -> str | os.PathLike[str] | None:
        """The path exactly as given to BlockDevice (None for a device found through a carrier
        whose device object had gone).

        Returns:
            str | os.PathLike | None: the path.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(4096, 512, 4096, path="/dev/test").path
            '/dev/test'
        """
    @property
    def capacity_bytes(self) -> int:
        """The device's size in bytes (read at opening; no I/O).

        Returns:
            int: the capacity.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(8192, 512, 4096).capacity_bytes
            8192
        """
    @property
    def logical_block_size(self) -> int:
        """The device's logical block size in bytes (no I/O).

        Returns:
            int: the size.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(8192, 512, 4096).logical_block_size
            512
        """
    @property
    def physical_block_size(self) -> int:
        """The device's physical block size in bytes (no I/O).

        Returns:
            int: the size.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(8192, 512, 4096).physical_block_size
            4096
        """
    @property
    def allocation_alignment(self) -> int:
        """The alignment of extents in bytes: the physical block size.

        Returns:
            int: the alignment.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(8192, 512, 4096).allocation_alignment
            4096
        """
    def is_closed(self) -> bool:
        """Whether the device is closed.

        Returns:
            bool: True once closed.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(4096, 512, 4096).is_closed()
            False
        """
    def is_faulted(self) -> bool:
        """Whether a terminal I/O error or a transfer without progress has faulted the device.

        Returns:
            bool: True once faulted; then every carrier access and allocation raises RuntimeError.

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(4096, 512, 4096, write_script=[("error", 5)])
            >>> dev.allocate(1)
            Traceback (most recent call last):
            ...
            OSError: [Errno 5] BlockDevice write failed after 0 of 4096 bytes: Input/output error
            >>> dev.is_faulted()
            True
        """
    def allocate(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType = ...,
        empty: bool = False,
    ) -> BlockDeviceCarrier:
        """A new BlockDeviceCarrier of size Float32 slots in a fresh extent of the device.

        The extent starts at the lowest free offset that is a multiple of allocation_alignment and
        spans whole physical blocks; released extents are reused lowest first and merge with their
        free neighbours. A size of 0 has offset 0 and extent 0 and reserves nothing. Unless empty,
        the extent is zero-filled on the device. size is read through __index__ before the
        device's lock is taken.

        Args:
            size: the number of slots.
            mutable: a bool.
            dtype: DType.Float32.
            empty: a bool; True skips the zero fill.

        Returns:
            BlockDeviceCarrier: the carrier.

        Raises:
            TypeError: 'mutable must be a bool', 'empty must be a bool', 'dtype must be a DType'.
            ValueError: 'BlockDeviceCarrier dtype must be DType.Float32'; 'size must be
                non-negative'.
            OverflowError: 'byte length overflows'.
            MemoryError: 'BlockDevice has no aligned extent of N bytes free'.
            RuntimeError: 'BlockDevice is closed'; 'faulted'.
            OSError: the zero fill failed (the device faults; no carrier).

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(8192, 512, 4096)
            >>> c = dev.allocate(3)
            >>> c.device_offset_bytes, c.extent_bytes, c.get_value(2)
            (0, 4096, 0.0)
        """
    def close(self) -> None:
        """Closes the device. Repeated calls do nothing.

        Returns:
            None: nothing.

        Raises:
            RuntimeError: 'BlockDevice cannot close: a Carrier object exists' while any
                BlockDeviceCarrier object of the device exists, even a released one.
            OSError: the descriptor's close failed; the device is closed all the same.

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(4096, 512, 4096)
            >>> dev.close(); dev.close()
            >>> dev.is_closed()
            True
        """
    def __enter__(self) -> BlockDevice:
        """Returns the device itself for a with block.

        Returns:
            BlockDevice: self.

        Examples:
            >>> from strideweave import _native
            >>> with _native._blockdev_scripted(4096, 512, 4096) as dev:
            ...     dev.is_closed()
            False
        """
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Closes the device; never swallows the body's exception. A close error propagates with the
        body's exception as its __context__.

        Args:
            exc_type: the body's exception type, or None.
            exc: the body's exception, or None.
            tb: its traceback, or None.

        Returns:
            bool: False.

        Examples:
            >>> from strideweave import _native
            >>> with _native._blockdev_scripted(4096, 512, 4096) as dev:
            ...     pass
            >>> dev.is_closed()
            True
        """
    def _read_bytes(self, offset: SupportsIndex, count: SupportsIndex, /) -> bytes:
        """For tests: count raw bytes at byte offset of the device.

        Args:
            offset: the byte offset.
            count: the byte count.

        Returns:
            bytes: what the device holds there.

        Raises:
            ValueError: 'byte_offset must be non-negative', 'byte_count must be non-negative',
                'byte range exceeds the device capacity'.
            OverflowError: 'byte endpoint overflows Index'.
            RuntimeError: 'BlockDevice handle is closed'; 'faulted'; 'completed N of M bytes'.
            OSError: a terminal I/O error (the device faults).

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(4096, 512, 4096)._read_bytes(10, 3)
            b'\\x00\\x00\\x00'
        """
    def _write_bytes(self, offset: SupportsIndex, data: Buffer, /) -> None:
        """For tests: writes raw bytes at byte offset of the device, keeping the bytes around them.

        Args:
            offset: the byte offset.
            data: a bytes-like object.

        Returns:
            None: nothing.

        Raises:
            ValueError: as _read_bytes.
            RuntimeError: as _read_bytes.
            OSError: a terminal I/O error (the device faults).

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(4096, 512, 4096)
            >>> dev._write_bytes(1, b"ab")
            >>> dev._read_bytes(0, 4)
            b'\\x00ab\\x00'
        """
    def _zero_fill(self, offset: SupportsIndex, count: SupportsIndex, /) -> None:
        """For tests: writes count zero bytes at byte offset of the device.

        Args:
            offset: the byte offset.
            count: the byte count.

        Returns:
            None: nothing.

        Raises:
            ValueError: as _read_bytes.

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(4096, 512, 4096)
            >>> dev._write_bytes(0, b"xyz")
            >>> dev._zero_fill(1, 1)
            >>> dev._read_bytes(0, 3)
            b'x\\x00z'
        """
    def _attempts(self) -> tuple[int, int, int]:
        """For tests: the (reads, writes, closes) system calls a scripted device has seen.

        Returns:
            tuple[int, int, int]: the counts ((0, 0, 0) for a real device).

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(4096, 512, 4096)
            >>> dev._attempts()
            (0, 0, 0)
        """
    def _carrier_count(self) -> int:
        """For tests: the BlockDeviceCarrier objects of the device that are not collected yet.

        Returns:
            int: the count.

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(4096, 512, 4096)
            >>> c = dev.allocate(2)
            >>> dev._carrier_count()
            1
        """

@final
class BlockDeviceCarrier(Carrier):
    """Float32 values in one extent of a BlockDevice: storage only, of fixed size.

    Made only by BlockDevice.allocate (and allocate_like and new_like). Each scalar access is
    one device transfer; a write's version step comes as its transfer starts, so a write that
    fails still counts. The carrier supports no operation and no DLPack export; it moves only
    to and from CPU, through the exact built-in bulk moves.

    Returns:
        BlockDeviceCarrier: not constructible directly.

    Raises:
        TypeError: 'BlockDeviceCarrier cannot be created directly: use BlockDevice.allocate'.

    Examples:
        >>> BlockDeviceCarrier()
        Traceback (most recent call last):
        ...
        TypeError: BlockDeviceCarrier cannot be created directly: use BlockDevice.allocate
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> BlockDeviceCarrier:
        """Create and return a new object.  See help(type) for accurate signature."""
    @property
    def device(self) -> BlockDevice:
        """The BlockDevice the carrier lives on (a strong reference, kept after release).

        Returns:
            BlockDevice: the device.

        Examples:
            >>> from strideweave import _native
            >>> dev = _native._blockdev_scripted(4096, 512, 4096)
            >>> dev.allocate(1).device is dev
            True
        """
    @property
    def device_offset_bytes(self) -> int:
        """The extent's byte offset on the device (0 after release).

        Returns:
            int: the offset.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(4096, 512, 4096).allocate(1).device_offset_bytes
            0
        """
    @property
    def extent_bytes(self) -> int:
        """The extent's length in bytes, whole physical blocks (0 after release).

        Returns:
            int: the length.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(8192, 512, 4096).allocate(1025).extent_bytes
            8192
        """
    def size(self) -> int:
        """The number of slots (0 after release).

        Returns:
            int: the size.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(4096, 512, 4096).allocate(3).size()
            3
        """
    def dtype(self) -> DType:
        """The element dtype: always DType.Float32.

        Returns:
            DType: DType.Float32.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(4096, 512, 4096).allocate(1).dtype() is DType.Float32
            True
        """
    def get_value(self, index: SupportsIndex, /) -> float:
        """Reads slot index from the device (one transfer).

        Args:
            index: the slot.

        Returns:
            float: the value, a 32-bit float.

        Raises:
            IndexError: 'Carrier index out of range'.
            RuntimeError: 'Carrier is released'; 'faulted'.

        Examples:
            >>> from strideweave import _native
            >>> c = _native._blockdev_scripted(4096, 512, 4096).allocate(2)
            >>> c.set_value(0, 1.1)
            >>> c.get_value(0)
            1.100000023841858
        """
    def set_value(self, index: SupportsIndex, value: Any, /) -> None:
        """Writes slot index on the device (one transfer), as a 32-bit float. Bounds and mutability
        are checked before any I/O; the value's __float__ runs before the device's lock is taken.

        Args:
            index: the slot.
            value: a number.

        Returns:
            None: nothing.

        Raises:
            IndexError: 'Carrier index out of range'.
            RuntimeError: 'Carrier is not mutable'; 'faulted'; 'completed N of 4 bytes'.
            OSError: a terminal I/O error (the device faults; the version still rose).

        Examples:
            >>> from strideweave import _native
            >>> c = _native._blockdev_scripted(4096, 512, 4096).allocate(2)
            >>> c.set_value(1, 2)
            >>> c.get_value(1), c.version
            (2.0, 1)
        """
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> BlockDeviceCarrier:
        """A new carrier on the same device holding values (None entries are 0.0), converted before
        the device's lock is taken.

        Args:
            values: an iterable of numbers or None.
            mutable: whether the new carrier accepts writes.
            dtype: None or DType.Float32.

        Returns:
            BlockDeviceCarrier: the new carrier, version 0.

        Examples:
            >>> from strideweave import _native
            >>> c = _native._blockdev_scripted(8192, 512, 4096).allocate(1)
            >>> list(c.new_like([1.5, None]))
            [1.5, 0.0]
        """
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> BlockDeviceCarrier:
        """A new carrier in a fresh extent of the same device (also from a released carrier).

        Args:
            size: the number of slots.
            mutable: whether the new carrier accepts writes.
            dtype: None or DType.Float32.
            empty: True skips the zero fill.

        Returns:
            BlockDeviceCarrier: the new carrier.

        Raises:
            ValueError: 'BlockDeviceCarrier allocation size must be non-negative'.
            MemoryError: 'no aligned extent'.

        Examples:
            >>> from strideweave import _native
            >>> c = _native._blockdev_scripted(8192, 512, 4096).allocate(1)
            >>> c.allocate_like(2).device_offset_bytes
            4096
        """
    def scatter(
        self,
        to_scatter: Any,
        scatter_onto: Any,
        mapping: Any,
        mapping_offset: Any = 0,
    ) -> None:
        """Not supported: BlockDeviceCarrier is storage only.

        Args:
            to_scatter: ignored.
            scatter_onto: ignored.
            mapping: ignored.
            mapping_offset: ignored.

        Returns:
            None: never returns.

        Raises:
            NotImplementedError: 'BlockDeviceCarrier carriers do not support scatter'.

        Examples:
            >>> from strideweave import _native
            >>> _native._blockdev_scripted(4096, 512, 4096).allocate(1).scatter(None, None, None)
            Traceback (most recent call last):
            ...
            NotImplementedError: BlockDeviceCarrier carriers do not support scatter
        """
