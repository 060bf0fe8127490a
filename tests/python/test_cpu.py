"""The CPU carrier (reference §8)."""

import array
import gc
import threading
import weakref

import pytest
from helpers_carriers import L, flat
from strideweave import CPU, Carrier, DType, Generic, Tensor

DTYPE_MSG = r"^CPU dtype must be DType.Float32, DType.Int32 or DType.Bool$"


class Floaty:
    def __init__(self, value):
        self.value = value

    def __float__(self):
        return self.value


class Indexy:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


# ---------------------------------------------------------- construction


def test_defaults():
    c = CPU(3)
    assert isinstance(c, Carrier)
    assert c.size() == 3
    assert c.dtype() is DType.Float32
    assert c.is_mutable()
    assert c.version == 0
    assert list(c) == [0.0, 0.0, 0.0]
    assert c.pointer() % 64 == 0


@pytest.mark.parametrize("dtype", [DType.Float32, DType.Int32, DType.Bool])
def test_zero_filled(dtype):
    c = CPU(1000, dtype=dtype)
    assert set(c) == {0}
    assert c.dtype() is dtype


def test_large_allocations():
    c = CPU(1 << 20)
    assert c.size() == 1 << 20
    assert c[(1 << 20) - 1] == 0.0
    assert CPU(1 << 20, empty=True).size() == 1 << 20


def test_size_checks():
    with pytest.raises(ValueError, match=r"^CPU size must be non-negative$"):
        CPU(-1)
    with pytest.raises(ValueError, match=r"^CPU size must be non-negative$"):
        CPU(-(2**70))
    for bad in (2.0, "3", None):
        with pytest.raises(TypeError):
            CPU(bad)
    # A byte length that overflows: refused, not attempted.
    with pytest.raises(
        OverflowError,
        match=r"^CPU size 4611686018427387904 is too large: 4611686018427387904 elements "
        r"of DType.Float32 \(4 bytes each\) overflow the byte length$",
    ):
        CPU(2**62)
    with pytest.raises(OverflowError, match=r"DType.Int32 \(4 bytes each\) overflow"):
        CPU(2**61, dtype=DType.Int32)
    with pytest.raises(OverflowError, match=r"DType.Bool \(1 bytes each\) overflow"):
        CPU(2**63 - 1, dtype=DType.Bool)
    assert CPU(True).size() == 1
    assert CPU(Indexy(2)).size() == 2
    assert CPU(0).size() == 0


@pytest.mark.parametrize("dtype", [DType.Any, DType.Floating, "Float32", 1])
def test_dtype_checks(dtype):
    with pytest.raises(ValueError, match=DTYPE_MSG):
        CPU(1, dtype=dtype)


def test_keyword_only_arguments():
    with pytest.raises(TypeError):
        CPU(3, None, True)
    assert CPU(1, mutable=0).is_mutable() is False
    assert CPU(1, mutable=[1]).is_mutable() is True


# ---------------------------------------------------------- pointers


def test_pointer_checks():
    for bad in (1.5, "123", [1]):
        with pytest.raises(TypeError, match=r"^CPU pointer must be an integer address or None$"):
            CPU(1, bad)
    for bad in (0, -8, -(2**80)):
        with pytest.raises(ValueError, match=r"^CPU pointer must be a positive integer address$"):
            CPU(1, bad)


def test_pointer_byte_length_and_alignment():
    buf = array.array("f", [1.5, 2.5, 3.5, 4.5])
    address = buf.buffer_info()[0]
    # The byte length of the elements must fit, and so must their end.
    with pytest.raises(OverflowError, match=r"^CPU size 4611686018427387904 is too large: "):
        CPU(2**62, address)
    with pytest.raises(OverflowError, match=r"DType.Int32 \(4 bytes each\) overflow"):
        CPU(2**61, address, dtype=DType.Int32)
    with pytest.raises(
        OverflowError,
        match=r"^CPU pointer 0xfffffffffffffff8 plus 16 bytes overflows the address space$",
    ):
        CPU(16, 2**64 - 8, dtype=DType.Bool)
    # Float32 and Int32 elements need 4-byte alignment; Bool any address.
    for off, dtype in ((1, None), (2, DType.Float32), (3, DType.Int32)):
        with pytest.raises(
            ValueError,
            match=rf"^CPU pointer {hex(address + off)} is not aligned to 4 bytes, as "
            rf"DType.{'Int32' if dtype is DType.Int32 else 'Float32'} elements require$",
        ):
            CPU(2, address + off, dtype=dtype)
    c = CPU(3, address + 1, dtype=DType.Bool, empty=True)
    assert c.pointer() == address + 1 and c.size() == 3
    assert list(buf) == [1.5, 2.5, 3.5, 4.5]


def test_pointer_aliases_caller_memory():
    buf = array.array("f", [1.5, 2.5, 3.5])
    address = buf.buffer_info()[0]
    c = CPU(3, address, empty=True)
    assert c.pointer() == address
    assert list(c) == [1.5, 2.5, 3.5]  # empty=True never touches it
    c[1] = 9.0
    assert buf[1] == 9.0
    buf[2] = -1.0
    assert c[2] == -1.0
    c.release()
    assert c.pointer() == 0
    assert list(buf) == [1.5, 9.0, -1.0]  # not freed, not changed


def test_pointer_int32_alias():
    buf = array.array("i", [1, 2])
    c = CPU(2, buf.buffer_info()[0], dtype=DType.Int32, mutable=False)
    assert list(c) == [1, 2]
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        c[0] = 5


# ------------------------------------------------------------ reading


def test_get_value():
    c = CPU(2)
    c[1] = 0.1
    assert c.get_value(1) == 0.10000000149011612
    assert type(c.get_value(0)) is float
    i = CPU(1, dtype=DType.Int32)
    assert type(i.get_value(0)) is int
    b = CPU(1, dtype=DType.Bool)
    assert b.get_value(0) is False
    for bad in (-1, 2, 2**70):
        with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
            c.get_value(bad)
    with pytest.raises(TypeError):
        c.get_value(0.0)


# ------------------------------------------------------------ writing


def test_float32_writes():
    c = CPU(1)
    for value, stored in [
        (1, 1.0),
        (True, 1.0),
        (0.5, 0.5),
        (Floaty(2.5), 2.5),
        (Indexy(3), 3.0),
        (2**200, float("inf")),
        (-(2**2000), float("-inf")),
        (1e300, float("inf")),
        (2**70, float(2**70)),
    ]:
        c[0] = value
        assert c[0] == stored


@pytest.mark.parametrize("value", ["1.5", None, [1], object()])
def test_float32_non_numbers(value):
    c = CPU(1)
    with pytest.raises(TypeError, match=r"^CPU value must be a number$"):
        c[0] = value
    with pytest.raises(TypeError, match=r"^CPU value must be a number$"):
        c.set_value(0, value)
    assert c.version == 0


def test_conversion_errors_from_python_propagate():
    class Bad:
        def __float__(self):
            raise ZeroDivisionError("no float")

        def __index__(self):
            raise ZeroDivisionError("no index")

    with pytest.raises(ZeroDivisionError, match="no float"):
        CPU(1)[0] = Bad()
    with pytest.raises(ZeroDivisionError, match="no index"):
        CPU(1, dtype=DType.Int32)[0] = Bad()


def test_int32_writes():
    c = CPU(1, dtype=DType.Int32)
    for value, stored in [(7, 7), (True, 1), (Indexy(-5), -5), (2**31 - 1, 2**31 - 1)]:
        c[0] = value
        assert c[0] == stored
    c[0] = -(2**31)
    assert c[0] == -(2**31)
    for bad in (1.5, 2.0, "3", None, Floaty(1.0)):
        with pytest.raises(TypeError, match=r"^CPU value must be an integer$"):
            c[0] = bad
    for bad in (2**31, -(2**31) - 1, 2**100, -(2**100)):
        with pytest.raises(OverflowError, match=r"^CPU value is out of int32 range$"):
            c[0] = bad
    assert c.version == 5


def test_bool_writes():
    c = CPU(1, dtype=DType.Bool)
    for value, stored in [(True, True), (0, False), (2.5, True), (0.0, False), (2**90, True)]:
        c[0] = value
        assert c[0] is stored
    with pytest.raises(TypeError, match=r"^CPU value must be a number$"):
        c[0] = "yes"


def test_set_value():
    c = CPU(2)
    c.set_value(1, 4)
    assert c[1] == 4.0 and c.version == 1
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        c.set_value(2, 1.0)
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        c.set_value(-1, 1.0)
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        CPU(1, mutable=False).set_value(0, 1.0)
    with pytest.raises(TypeError):
        c.set_value(0)


# --------------------------------------------------------- factories


def test_new_like():
    c = CPU(1, dtype=DType.Int32)
    r = c.new_like(iter([1, None, 3]))
    assert type(r) is CPU
    assert r.dtype() is DType.Int32
    assert list(r) == [1, 0, 3]
    assert r.version == 0 and r.is_mutable()
    f = c.new_like([0.5, None], dtype=DType.Float32, mutable=False)
    assert list(f) == [0.5, 0.0] and f.dtype() is DType.Float32
    assert not f.is_mutable()
    assert list(c.new_like([], dtype=DType.Bool)) == []
    with pytest.raises(TypeError, match=r"^CPU value must be an integer$"):
        c.new_like([1.5])
    with pytest.raises(TypeError, match=r"^CPU value must be a number$"):
        CPU(1).new_like(["x"])
    with pytest.raises(ValueError, match=DTYPE_MSG):
        c.new_like([1], dtype=DType.Floating)
    with pytest.raises(TypeError):
        c.new_like(5)


def test_new_like_bulk():
    values = [float(i % 7) for i in range(50000)]
    r = CPU(1).new_like(values)
    assert r.size() == 50000 and r[49999] == values[49999]


def test_new_like_after_release():
    c = CPU(3)
    c.release()
    assert list(c.new_like([1, 2])) == [1.0, 2.0]


def test_allocate_like():
    c = CPU(2, dtype=DType.Int32)
    r = c.allocate_like(4)
    assert type(r) is CPU and r.size() == 4 and r.dtype() is DType.Int32
    assert list(r) == [0, 0, 0, 0]
    assert c.allocate_like(3, dtype=DType.Bool).dtype() is DType.Bool
    assert c.allocate_like(3, empty=True).size() == 3
    assert not c.allocate_like(1, mutable=False).is_mutable()
    assert c.allocate_like(100000).size() == 100000
    with pytest.raises(ValueError, match=r"^CPU allocation size must be non-negative$"):
        c.allocate_like(-1)
    with pytest.raises(TypeError):
        c.allocate_like(2.0)
    with pytest.raises(ValueError, match=DTYPE_MSG):
        c.allocate_like(1, dtype=DType.Any)
    with pytest.raises(TypeError):
        c.allocate_like(1, True)


# ------------------------------------------------- release and pointers


def test_release():
    c = CPU(3)
    c[0] = 1.0
    assert c.pointer() != 0
    c.release()
    assert c.is_released() and c.size() == 0 and c.pointer() == 0
    assert c.version == 1
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c[0]
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c[0] = 1.0
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c.get_value(0)
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c.set_value(0, 1.0)
    assert c.dlpack_info() == {"pointer": 0, "device_type": 1, "device_id": 0}


def test_dlpack_info():
    c = CPU(2)
    assert c.dlpack_info() == {"pointer": c.pointer(), "device_type": 1, "device_id": 0}


# ------------------------------------------------------------ scatter


def cpu_tensor(values, layout=None, dtype=DType.Float32):
    c = CPU(0, dtype=dtype).new_like(values)
    return Tensor(c, 0, layout or flat(len(values)))


def test_scatter():
    dst = CPU(6)
    onto = Tensor(dst, 1, L([2], [1]))
    src = cpu_tensor([1, 2, 3, 4], L([2, 2], [2, 1]))  # reads 1, 3, 2, 4
    dst.scatter(src, onto, L([2, 2], [1, 2]), 0)
    assert list(dst) == [0.0, 1.0, 3.0, 2.0, 4.0, 0.0]
    assert dst.version == 1
    dst.scatter(cpu_tensor([7]), onto, flat(1), mapping_offset=4)
    assert dst[5] == 7.0 and dst.version == 2


def test_scatter_converts_int32_to_float32():
    dst = CPU(2)
    dst.scatter(cpu_tensor([5, 6], dtype=DType.Int32), Tensor(dst, 0, flat(2)), flat(2))
    assert list(dst) == [5.0, 6.0]
    b = CPU(2, dtype=DType.Bool)
    b.scatter(cpu_tensor([0, 3], dtype=DType.Int32), Tensor(b, 0, flat(2)), flat(2))
    assert list(b) == [False, True]


def test_scatter_bulk():
    n = 1 << 16
    dst = CPU(2 * n)
    src = Tensor(CPU(0).new_like(range(n)), 0, flat(n))
    dst.scatter(src, Tensor(dst, 0, flat(2 * n)), L([n], [2]))
    assert dst[2 * (n - 1)] == float(n - 1) and dst[1] == 0.0
    assert dst.version == 1


def test_scatter_checks_in_order():
    dst = CPU(4)
    onto = Tensor(dst, 0, flat(4))
    src = cpu_tensor([1, 2])
    m = flat(2)
    with pytest.raises(ValueError, match=r"^mapping_offset must be non-negative$"):
        dst.scatter(src, onto, m, -1)
    with pytest.raises(TypeError):
        dst.scatter(src, onto, m, 1.0)
    with pytest.raises(TypeError, match=r"^scatter_onto must be a Tensor$"):
        dst.scatter(src, dst, m)
    g = Generic([0, 0, 0, 0])
    with pytest.raises(TypeError, match=r"^scatter_onto must be backed by a CPU carrier$"):
        dst.scatter(src, Tensor(g, 0, flat(4)), m)
    with pytest.raises(ValueError, match=r"^scatter_onto must be backed by this carrier$"):
        dst.scatter(src, Tensor(CPU(4), 0, flat(4)), m)
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        frozen = CPU(4, mutable=False)
        frozen.scatter(src, Tensor(frozen, 0, flat(4)), m)
    with pytest.raises(TypeError, match=r"^to_scatter must be a Tensor$"):
        dst.scatter([1, 2], onto, m)
    with pytest.raises(TypeError, match=r"^to_scatter must be backed by a CPU carrier$"):
        dst.scatter(Tensor(Generic([1, 2]), 0, flat(2)), onto, m)
    with pytest.raises(TypeError, match=r"^mapping must be a Layout$"):
        dst.scatter(src, onto, (2,))
    with pytest.raises(ValueError, match=r"^mapping shape must match to_scatter layout shape$"):
        dst.scatter(src, onto, L([1, 2], [1, 1]))
    with pytest.raises(
        TypeError, match=r"^cannot scatter Float32 values into an Int32 CPU carrier$"
    ):
        idst = CPU(4, dtype=DType.Int32)
        idst.scatter(src, Tensor(idst, 0, flat(4)), m)
    with pytest.raises(ValueError, match=r"^scatter mapping exceeds destination carrier size$"):
        dst.scatter(src, onto, L([2], [3]), 1)
    with pytest.raises(ValueError, match=r"^scatter mapping exceeds destination carrier size$"):
        dst.scatter(src, onto, m, 2**70)
    assert dst.version == 0 and list(dst) == [0.0] * 4


def test_scatter_released_carriers():
    dst = CPU(4)
    onto = Tensor(dst, 0, flat(4))
    src = cpu_tensor([1, 2])
    src.carrier.release()
    with pytest.raises(RuntimeError, match=r"^to_scatter carrier is released$"):
        dst.scatter(src, onto, flat(2))
    dst.release()
    with pytest.raises(RuntimeError, match=r"^scatter_onto carrier is released$"):
        dst.scatter(cpu_tensor([1, 2]), onto, flat(2))


@pytest.mark.threads
def test_scatter_runs_beside_other_threads():
    n = 1 << 18
    dst = CPU(n)
    src = Tensor(CPU(n), 0, flat(n))
    src.carrier[n - 1] = 3.0
    errors = []

    def work():
        try:
            for _ in range(4):
                dst.scatter(src, Tensor(dst, 0, flat(n)), flat(n))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert dst[n - 1] == 3.0 and dst.version == 8


# -------------------------------------------------------- subclasses


class Tagged(CPU):
    def __init__(self, n, tag):
        super().__init__(n, dtype=DType.Int32)
        self.tag = tag


def test_python_subclass():
    c = Tagged(3, "t")
    assert isinstance(c, CPU) and c.tag == "t"
    assert c.size() == 3 and c.dtype() is DType.Int32
    c[0] = 4
    assert c[0] == 4
    assert type(c.allocate_like(2)) is CPU
    assert type(c.new_like([1])) is CPU
    ref = weakref.ref(c)
    t = Tensor(c, 0, flat(3))
    del c
    gc.collect()
    assert t.carrier.tag == "t" and t[0] == 4
    del t
    gc.collect()
    assert ref() is None


def test_subclass_that_skips_init():
    class Broken(CPU):
        def __init__(self):
            pass

    c = Broken()
    with pytest.raises(TypeError, match=r"__init__\(\) must be called when overriding __init__"):
        c.size()
    with pytest.raises(TypeError, match=r"__init__\(\) must be called when overriding __init__"):
        _ = c.version
    with pytest.raises(TypeError, match=r"__init__\(\) must be called when overriding __init__"):
        c[0]
    with pytest.raises(TypeError, match=r"__init__\(\) must be called when overriding __init__"):
        Tensor(c, 0, flat(1))


def test_init_twice():
    c = CPU(1)
    with pytest.raises(RuntimeError, match=r"must not be called twice"):
        c.__init__(2)
    assert c.size() == 1


def test_backend_methods_need_their_backend():
    with pytest.raises(TypeError):
        CPU.pointer(Generic([1]))
    with pytest.raises(TypeError):
        CPU.size(Carrier())


@pytest.mark.threads
def test_release_beside_gil_free_work():
    """A release while scatters run without the GIL takes effect at once; a
    scatter already running finishes on the storage it pinned, later ones
    report the release."""
    n = 1 << 22
    dst = CPU(n)
    src = Tensor(CPU(n), 0, flat(n))
    onto = Tensor(dst, 0, flat(n))
    started = threading.Event()
    outcome = []

    def work():
        started.set()
        try:
            for _ in range(20):
                dst.scatter(src, onto, flat(n))
        except RuntimeError as e:
            outcome.append(str(e))

    thread = threading.Thread(target=work)
    thread.start()
    started.wait()
    src.carrier.release()  # never refused
    assert src.carrier.is_released() and src.carrier.size() == 0
    thread.join()
    assert outcome in ([], ["to_scatter carrier is released"])
