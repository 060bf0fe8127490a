"""A new kind of storage in Python: float32 values packed in a bytearray.

``PackedStore`` is registered with one CarrierDefinition: six storage
callbacks over a ``bytearray`` and a transfer route to CPU that unpacks the
whole physical span at once. The program then

1. fills a PackedStore carrier and moves a strided tensor on it to CPU
   through the route;
2. uses PackedStore as the secondary tier of an Evictable (eviction copies
   into it element by element, promotion comes back through the route);
3. moves a CPU tensor into PackedStore with autograd on, and runs backward
   through the move: the gradient comes home through the route.

Run: ``python examples/custom_storage.py``.
"""

import struct

import strideweave as sw
from strideweave.carriers.extension import PreparedTransfer, TransferProvider

F32 = sw.DType.Float32


class PackedStore(sw.Carrier):
    """Float32 values packed in a bytearray."""


def allocate(carrier, slots):
    carrier.data = bytearray(4 * slots)


def release(carrier):
    carrier.data = bytearray()


def read(carrier, i):
    return struct.unpack_from("<f", carrier.data, 4 * i)[0]


def write(carrier, i, value):
    struct.pack_into("<f", carrier.data, 4 * i, float(value))


def to_cpu(request):
    """The route: unpack physical_span values from the offset, in one go."""

    def submit():
        span, offset = request.physical_span, request.tensor.offset
        values = struct.unpack_from(f"<{span}f", request.tensor.carrier.data, 4 * offset)
        destination = request.destination
        for i, v in enumerate(values):
            destination[i] = v

    return PreparedTransfer(submit)


sw.register_carrier_definition(
    PackedStore,
    sw.CarrierDefinition(
        sw.StorageProvider(
            supports_dtype=lambda carrier, dtype: dtype == F32,
            physical_size=lambda carrier: len(carrier.data) // 4,
            allocate=allocate,
            release=release,
            read=read,
            write=write,
        ),
        transfers=[
            sw.TransferRoute(PackedStore, sw.CPU, "packed-to-cpu", TransferProvider(to_cpu))
        ],
    ),
)


def main():
    # 1. A strided tensor moved to CPU through the route.
    store = PackedStore(6, dtype=F32)
    for i in range(6):
        store[i] = i * 1.5
    t = sw.Tensor(store, 0, sw.Layout.leaf(3, 2))
    sw.set_grad_enabled(False)
    moved = sw.move(t, sw.CPU(6))
    sw.set_grad_enabled(True)
    print("moved:", [moved[i] for i in range(3)], "source released:", store.is_released())

    # 2. An Evictable tier.
    primary = sw.CPU(4)
    for i in range(4):
        primary[i] = 10.0 + i
    hot = sw.Evictable(primary, PackedStore(4, dtype=F32))
    hot.evict()
    print("evicted into", type(hot.secondary).__name__, "; evicted:", hot.is_evicted())
    hot.promote()
    print("promoted:", [hot[i] for i in range(4)])

    # 3. Autograd across a move into PackedStore.
    x = sw.Tensor(sw.CPU(3), 0, sw.Layout.leaf(3, 1))
    for i in range(3):
        x.carrier[i] = float(i)
    y = sw.move(x, PackedStore(3, dtype=F32))
    g = sw.Tensor(PackedStore(3, dtype=F32), 0, sw.Layout.leaf(3, 1))
    for i in range(3):
        g.carrier[i] = 2.0
    y.backward(g)
    print("gradient on", type(x.grad.carrier).__name__ + ":", [x.grad[i] for i in range(3)])


if __name__ == "__main__":
    main()
