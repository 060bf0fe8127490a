"""The OpenCL carrier: storage in one OpenCL device buffer."""

from collections.abc import Iterable
from typing import Any, SupportsIndex, TypedDict, final

from strideweave.carriers.base import Carrier
from strideweave.carriers.dtype import DType

__all__ = ["OpenCL", "opencl_devices"]

class OpenCLDevice(TypedDict):
    """One entry of ``opencl_devices()``."""

    index: int
    platform: str
    name: str
    type: str
    global_memory: int
    default: bool

@final
class OpenCL(Carrier):
    """Storage in one OpenCL device buffer (a GPU, or the CPU through PoCL).

    The class is final. The arguments are checked before the OpenCL runtime (the ICD loader
    libOpenCL.so.1) is loaded, at the first construction; without a runtime construction raises
    RuntimeError with an install hint. Slots are zero unless empty. Reads are synchronised with
    the device; a write bumps the version by exactly one once the device has confirmed it (a
    failure leaves value and version unchanged). Moves CPU->OpenCL, OpenCL->CPU and
    OpenCL->OpenCL are exact bulk transfers of the physical span. DLPack export is refused.

    Args:
        size: the element count, >= 0.
        mutable: whether the carrier can be written.
        dtype: DType.Float32, DType.Int32 or DType.Bool.
        empty: leave the slots uninitialised.
        device: an index into opencl_devices(); None for the default (the environment variable
            STRIDEWEAVE_OPENCL_DEVICE, else the first GPU, else the first device).

    Returns:
        OpenCL: the carrier.

    Raises:
        TypeError: a non-integer size; 'OpenCL dtype must be a DType'; a subclass.
        ValueError: 'OpenCL size must be non-negative'; 'OpenCL dtype must be DType.Float32,
            DType.Int32 or DType.Bool'; a device index out of range.
        RuntimeError: 'OpenCL runtime is not available: ...' with an install hint.

    Examples:
        >>> import strideweave as sw
        >>> c = sw.OpenCL(3, dtype=sw.DType.Int32)  # doctest: +SKIP
        >>> c[1] = 5  # doctest: +SKIP
        >>> list(c), c.version  # doctest: +SKIP
        ([0, 5, 0], 1)
    """

    def __init__(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType = ...,
        empty: bool = False,
        device: SupportsIndex | None = None,
    ) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
    @property
    def device(self) -> int:
        """The index of the carrier's device in opencl_devices().

        Returns:
            int: the device index.

        Examples:
            >>> OpenCL(1).device  # doctest: +SKIP
            0
        """
    def size(self) -> int:
        """The number of elements; 0 after release.

        Returns:
            int: the element count.

        Examples:
            >>> OpenCL(3).size()  # doctest: +SKIP
            3
        """
    def dtype(self) -> DType:
        """The element type.

        Returns:
            DType: Float32, Int32 or Bool.

        Examples:
            >>> OpenCL(1).dtype()  # doctest: +SKIP
            <DType.Float32: 'Float32'>
        """
    def get_value(self, index: SupportsIndex, /) -> float | int | bool:
        """Reads one element, after every device write and move enqueued before.

        Args:
            index: the element, 0 <= index < size().

        Returns:
            float | int | bool: the value (Float32 widened to double).

        Raises:
            RuntimeError: 'Carrier is released', a device failure.
            IndexError: 'Carrier index out of range'.

        Examples:
            >>> OpenCL(2).get_value(1)  # doctest: +SKIP
            0.0
        """
    def set_value(self, index: SupportsIndex, value: Any, /) -> None:
        """Writes one element once the device confirms it, and bumps the version by exactly one.

        Args:
            index: the element, 0 <= index < size().
            value: a number (an integer for Int32).

        Returns:
            None.

        Raises:
            RuntimeError: 'Carrier is not mutable', 'Carrier is released', a device failure (the
                element and the version are unchanged).
            IndexError: 'Carrier index out of range'.
            TypeError: 'OpenCL value must be a number', 'OpenCL value must be an integer'.
            OverflowError: 'OpenCL value is out of int32 range'.

        Examples:
            >>> c = OpenCL(1)  # doctest: +SKIP
            >>> c.set_value(0, 2.0)  # doctest: +SKIP
            >>> c[0], c.version  # doctest: +SKIP
            (2.0, 1)
        """
    def new_like(
        self, values: Iterable[Any], *, mutable: bool = True, dtype: DType | None = None
    ) -> OpenCL:
        """A fresh OpenCL carrier on the same device holding values (None entries are zero).

        Args:
            values: an iterable of numbers or None.
            mutable: whether the new carrier can be written.
            dtype: the element type; None means this carrier's.

        Returns:
            OpenCL: the new carrier, version 0.

        Raises:
            TypeError: 'OpenCL value must be a number', 'OpenCL value must be an integer'.
            OverflowError: 'OpenCL value is out of int32 range'.

        Examples:
            >>> list(OpenCL(1).new_like([1, 2.5]))  # doctest: +SKIP
            [1.0, 2.5]
        """
    def allocate_like(
        self,
        size: SupportsIndex,
        *,
        mutable: bool = True,
        dtype: DType | None = None,
        empty: bool = False,
    ) -> OpenCL:
        """A fresh OpenCL carrier on the same device (works after release too).

        Args:
            size: the element count, >= 0.
            mutable: whether the new carrier can be written.
            dtype: the element type; None means this carrier's.
            empty: leave the slots uninitialised.

        Returns:
            OpenCL: the new carrier.

        Raises:
            ValueError: 'OpenCL allocation size must be non-negative', an unsupported dtype.

        Examples:
            >>> c = OpenCL(2)  # doctest: +SKIP
            >>> c.allocate_like(4).size()  # doctest: +SKIP
            4
        """
    def dlpack_info(self) -> dict[str, int]:
        """Refused: OpenCL storage is not exported through DLPack.

        Returns:
            dict: never returns.

        Raises:
            BufferError: 'DLPack is not supported for this carrier'.

        Examples:
            >>> OpenCL(1).dlpack_info()  # doctest: +SKIP
            Traceback (most recent call last):
            ...
            BufferError: DLPack is not supported for this carrier
        """
    def supports_storage_dtype(self, dtype: DType, /) -> bool:
        """Whether OpenCL stores dtype: Float32, Int32 and Bool; needs neither the runtime nor an
        initialised instance.

        Args:
            dtype: a DType.

        Returns:
            bool: the answer.

        Raises:
            TypeError: a non-DType.

        Examples:
            >>> import strideweave as sw
            >>> OpenCL.__new__(OpenCL).supports_storage_dtype(sw.DType.Int32)
            True
        """
    def synchronize(self) -> None:
        """Waits until every command enqueued on the carrier's device has completed.

        Returns:
            None.

        Raises:
            RuntimeError: a device failure.

        Examples:
            >>> OpenCL(1).synchronize()  # doctest: +SKIP
        """
    def scatter(
        self,
        to_scatter: Any,
        scatter_onto: Any,
        mapping: Any,
        mapping_offset: Any = 0,
    ) -> None:
        """Atomic scatter: element onto.offset + mapping_offset + mapping(i) becomes to_scatter[i].

        Every value is checked before the device is written; the write is confirmed before the call
        returns and the version rises once. On failure values and version are unchanged.

        Args:
            to_scatter: a Tensor over any carrier.
            scatter_onto: a Tensor over this carrier.
            mapping: a Layout of to_scatter's shape.
            mapping_offset: an offset added to every mapped index, >= 0.

        Returns:
            None.

        Raises:
            IndexError: 'Carrier index out of range'.
            TypeError: 'OpenCL scatter value must be a real number'.
            ValueError: a mapping of another shape, a negative offset, scatter_onto over another
                carrier.
            RuntimeError: 'Carrier is not mutable', 'Carrier is released'.

        Examples:
            >>> import strideweave as sw
            >>> c = sw.OpenCL(4)  # doctest: +SKIP
            >>> src = sw.Tensor(sw.CPU(2).new_like([1.0, 2.0]), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))  # doctest: +SKIP
            >>> c.scatter(src, sw.Tensor(c, 0, sw.Layout(sw.Shape([4]), sw.Stride([1]))), sw.Layout(sw.Shape([2]), sw.Stride([2])))  # doctest: +SKIP
            >>> list(c), c.version  # doctest: +SKIP
            ([1.0, 0.0, 2.0, 0.0], 1)
        """

def opencl_devices() -> list[OpenCLDevice]:
    """The OpenCL devices of every platform, in the order OpenCL(device=...) indexes them.

    Loads the runtime on first use; without one the list is empty.

    Returns:
        list[dict]: one dict per device with 'index', 'platform', 'name', 'type' ('GPU', 'CPU',
        'Accelerator' or 'Other'), 'global_memory' (bytes) and 'default' (the device OpenCL()
        uses when no device is given).

    Examples:
        >>> import strideweave as sw
        >>> isinstance(sw.opencl_devices(), list)
        True
    """
