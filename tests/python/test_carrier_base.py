"""The Carrier base class (reference §6): pure virtual hooks, the shared
policy, the ownership protocol, and Python subclasses implementing the hooks
in Python and working with Tensor."""

import gc
import threading
import weakref

import pytest
from helpers_carriers import L, ListCarrier, flat
from strideweave import CPU, Carrier, DType, Generic, Tensor, _native

PURE = {
    "size": lambda c: c.size(),
    "dtype": lambda c: c.dtype(),
    "get_value": lambda c: c.get_value(0),
    "new_like": lambda c: c.new_like([1]),
    "allocate_like": lambda c: c.allocate_like(1),
    "scatter": lambda c: c.scatter(None, None, None),
}


# ------------------------------------------------------------ bare Carrier


def test_bare_carrier_is_constructible():
    c = Carrier()
    assert isinstance(c, Carrier)
    assert c.version == 0
    assert c.is_mutable() is False
    assert c.is_owned() is False
    assert c.is_released() is False


def test_bare_carrier_takes_no_arguments():
    with pytest.raises(TypeError):
        Carrier(1)
    with pytest.raises(TypeError):
        Carrier(x=1)


@pytest.mark.parametrize("name", sorted(PURE))
def test_pure_virtual_hooks(name):
    with pytest.raises(
        RuntimeError, match=rf'^Tried to call pure virtual function "Carrier::{name}"$'
    ):
        PURE[name](Carrier())


@pytest.mark.parametrize("name", ["_is_mutable", "set_value", "_release", "_dispatch_op"])
def test_optional_hooks_are_not_base_attributes(name):
    assert not hasattr(Carrier, name)
    with pytest.raises(AttributeError):
        getattr(Carrier(), name)


def test_cpu_and_generic_define_set_value():
    assert hasattr(CPU, "set_value") and hasattr(Generic, "set_value")


def test_bare_carrier_element_access_calls_size():
    with pytest.raises(RuntimeError, match=r'"Carrier::size"'):
        Carrier()[0]
    # Writing checks mutability first: _is_mutable defaults to False.
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        Carrier()[0] = 1


def test_default_dlpack_info():
    with pytest.raises(BufferError, match=r"^DLPack is not supported for this carrier$"):
        Carrier().dlpack_info()


def test_bare_release():
    c = Carrier()
    c.release()
    assert c.is_released()
    c.release()
    assert c.version == 0
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c[0]


def test_equality_and_hash_by_identity():
    a, b = Carrier(), Carrier()
    assert a == a and a != b
    assert hash(a) == hash(a) and hash(a) != hash(b)
    assert len({a, b, a}) == 2
    c1, c2 = CPU(1), CPU(1)
    assert c1 != c2 and len({c1, c2}) == 2


# ----------------------------------------------------------- Python hooks


def test_python_carrier_reads_and_bounds():
    c = ListCarrier(["a", "b", "c"])
    assert [c[0], c[1], c[2]] == ["a", "b", "c"]
    assert list(c) == ["a", "b", "c"]
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        c[3]
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        c[-1]
    with pytest.raises(TypeError):
        c[1.0]
    with pytest.raises(TypeError):
        c["0"]
    # get_value called directly is the subclass's own.
    assert c.get_value(-1) == "c"


def test_python_carrier_values_round_trip_unchanged():
    marker = object()
    c = ListCarrier([None])
    c[0] = marker
    assert c[0] is marker
    assert c.values[0] is marker
    t = Tensor(c, 0, flat(1))
    assert t[0] is marker
    t[0] = [1, 2]
    assert c.values[0] == [1, 2]


def test_python_carrier_writes_bump_the_version_once():
    c = ListCarrier([0, 0])
    c[0] = 1
    assert c.version == 1 and c.values == [1, 0]
    c[1] = 2
    assert c.version == 2


def test_a_set_value_that_bumps_itself_still_counts_once():
    class Bumping(ListCarrier):
        def set_value(self, index, value):
            self.values[index] = value
            self._increment_version()

    c = Bumping([0])
    c[0] = 5
    assert c.version == 1
    c[0] = 6
    assert c.version == 2


def test_python_carrier_mutability():
    c = ListCarrier([0], mutable=False)
    assert c.is_mutable() is False
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        c[0] = 1
    assert c.version == 0 and c.values == [0]


def test_mutable_without_set_value_uses_the_default():
    class NoSet(Carrier):
        def size(self):
            return 1

        def _is_mutable(self):
            return True

    c = NoSet()
    assert c.is_mutable()
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        c[0] = 1
    assert c.version == 0


def test_python_carrier_release():
    c = ListCarrier([1, 2])
    c[0] = 3
    c.release()
    assert c.is_released()
    assert c.release_calls == 1
    c.release()
    assert c.release_calls == 1
    assert c.version == 1
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c[0]
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c[0] = 1


def test_python_carrier_without_init_call():
    # The carrier is made by Carrier.__new__, so a subclass may skip
    # Carrier.__init__.
    class Lazy(Carrier):
        def __init__(self, n):
            self.n = n

        def size(self):
            return self.n

        def get_value(self, index):
            return index

    c = Lazy(3)
    assert c[2] == 2
    assert Tensor(c, 1, flat(2))[1] == 2


def test_python_carrier_with_tensor():
    c = ListCarrier([10, 20, 30, 40], dtype=DType.Floating)
    t = Tensor(c, 1, L([3], [1]))
    assert t.carrier is c
    assert [t[0], t[1], t[2]] == [20, 30, 40]
    assert t.dtype() is DType.Floating
    assert t.is_differentiable()
    assert t.carrier_type() is ListCarrier
    t[2] = "x"
    assert c.values[3] == "x"
    assert t.version == c.version == 1
    assert t.is_mutable()
    c.mutable = False
    assert not t.is_mutable()
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        t[0] = 1


def test_tensor_storage_check_calls_size():
    c = ListCarrier([1, 2])
    with pytest.raises(ValueError, match=r"^Tensor storage exceeds carrier size$"):
        Tensor(c, 0, flat(3))
    c.values.append(3)
    assert Tensor(c, 0, flat(3))[2] == 3


def test_python_subclass_state_survives_through_a_tensor():
    c = ListCarrier([1, 2])
    c.tag = "kept"
    ref = weakref.ref(c)
    t = Tensor(c, 0, flat(2))
    del c
    gc.collect()
    assert ref() is not None
    assert t.carrier.tag == "kept"
    del t
    gc.collect()
    assert ref() is None


def test_python_carrier_cycle_is_collected():
    c = ListCarrier([1])
    c.me = c
    ref = weakref.ref(c)
    del c
    gc.collect()
    assert ref() is None


# ------------------------------------------------ errors from user hooks


class Boom(Exception):
    pass


def failing(hook, exc):
    class Failing(ListCarrier):
        pass

    def raiser(self, *args, **kwargs):
        raise exc

    setattr(Failing, hook, raiser)
    return Failing([1, 2], dtype=DType.Floating)


def test_get_value_errors_propagate_unchanged():
    exc = KeyError("boom")
    c = failing("get_value", exc)
    with pytest.raises(KeyError) as info:
        c[0]
    assert info.value is exc
    t = Tensor(c, 0, flat(2))
    with pytest.raises(KeyError) as info:
        t[1]
    assert info.value is exc


def test_size_errors_propagate_unchanged():
    exc = Boom("size")
    c = ListCarrier([1])
    t = Tensor(c, 0, flat(1))
    c.size = lambda: (_ for _ in ()).throw(exc)
    with pytest.raises(Boom) as info:
        c[0]
    assert info.value is exc
    with pytest.raises(Boom) as info:
        t[0]
    assert info.value is exc
    with pytest.raises(Boom) as info:
        Tensor(c, 0, flat(1))
    assert info.value is exc


def test_size_must_be_an_integer():
    c = ListCarrier([1])
    c.size = lambda: "3"
    with pytest.raises(TypeError):
        Tensor(c, 0, flat(1))


def test_set_value_errors_propagate_and_leave_the_version():
    exc = Boom("set")
    c = failing("set_value", exc)
    with pytest.raises(Boom) as info:
        c[0] = 5
    assert info.value is exc
    assert c.version == 0
    with pytest.raises(Boom):
        Tensor(c, 0, flat(2))[1] = 5
    assert c.version == 0


def test_is_mutable_errors_propagate():
    exc = Boom("mutable")
    c = failing("_is_mutable", exc)
    with pytest.raises(Boom) as info:
        c.is_mutable()
    assert info.value is exc
    with pytest.raises(Boom):
        c[0] = 1
    with pytest.raises(Boom):
        Tensor(c, 0, flat(2)).is_mutable()


def test_dtype_errors_propagate():
    exc = Boom("dtype")
    c = failing("dtype", exc)
    t = Tensor(c, 0, flat(2))
    with pytest.raises(Boom) as info:
        t.dtype()
    assert info.value is exc
    with pytest.raises(Boom):
        t.is_differentiable()


def test_dtype_must_be_a_dtype():
    c = ListCarrier([1])
    c.kind = "Floating"
    t = Tensor(c, 0, flat(1))
    with pytest.raises(TypeError, match=r"dtype\(\) must return a DType"):
        t.dtype()


def test_release_errors_propagate():
    exc = Boom("release")
    c = failing("_release", exc)
    with pytest.raises(Boom) as info:
        c.release()
    assert info.value is exc


# ----------------------------------------------------------- ownership


def make_cpu():
    return CPU(2)


def make_generic():
    return Generic([0, 0])


def make_python():
    return ListCarrier([0, 0])


MAKERS = [make_cpu, make_generic, make_python]


@pytest.mark.parametrize("make", MAKERS)
def test_claim_and_relinquish(make):
    c = make()
    token = c._claim_ownership()
    assert isinstance(token, int) and token >= 1
    assert c.is_owned()
    assert c.is_mutable() is False
    assert c._has_owner_access() is False
    with pytest.raises(RuntimeError, match=r"^Carrier is already owned by another carrier$"):
        c._claim_ownership()
    with pytest.raises(RuntimeError, match=r"^Carrier is not mutable$"):
        c[0] = 1
    owned = "^Carrier is owned by another carrier and cannot be modified directly$"
    with pytest.raises(RuntimeError, match=owned):
        c._increment_version()
    with pytest.raises(RuntimeError, match=owned):
        c.release()
    assert not c.is_released()
    with pytest.raises(RuntimeError, match=r"^Invalid carrier ownership token$"):
        c._relinquish_ownership(token + 1000)
    c._relinquish_ownership(token)
    assert not c.is_owned() and c.is_mutable()
    with pytest.raises(RuntimeError, match=r"^Invalid carrier ownership token$"):
        c._relinquish_ownership(token)


def test_tokens_come_from_one_counter():
    a, b = CPU(1), Generic([1])
    ta, tb = a._claim_ownership(), b._claim_ownership()
    assert tb > ta >= 1


@pytest.mark.parametrize("make", MAKERS)
def test_owner_access(make):
    c = make()
    token = c._claim_ownership()
    c._begin_owner_access(token)
    assert c._has_owner_access()
    assert c.is_mutable()
    c[0] = 1
    c._increment_version()
    assert c.version == 2
    # Re-entrant on one thread.
    c._begin_owner_access(token)
    c._end_owner_access(token)
    assert c._has_owner_access()
    with pytest.raises(
        RuntimeError,
        match=r"^Carrier ownership cannot be relinquished during owner access$",
    ):
        c._relinquish_ownership(token)
    c._end_owner_access(token)
    assert not c._has_owner_access()
    assert not c.is_mutable()
    c._relinquish_ownership(token)


def test_owner_access_tokens():
    c = CPU(1)
    with pytest.raises(RuntimeError, match=r"^Invalid carrier ownership token$"):
        c._begin_owner_access(1)
    token = c._claim_ownership()
    for call in (c._begin_owner_access, c._end_owner_access, c._relinquish_ownership):
        with pytest.raises(RuntimeError, match=r"^Invalid carrier ownership token$"):
            call(token + 1)
        with pytest.raises(RuntimeError, match=r"^Invalid carrier ownership token$"):
            call(2**80)
        with pytest.raises(TypeError):
            call("1")
    with pytest.raises(
        RuntimeError,
        match=r"^Carrier owner access must end on the thread where it began$",
    ):
        c._end_owner_access(token)


@pytest.mark.threads
def test_owner_access_is_per_thread():
    c = CPU(1)
    token = c._claim_ownership()
    c._begin_owner_access(token)
    seen = {}

    def other():
        seen["has"] = c._has_owner_access()
        seen["mutable"] = c.is_mutable()
        for name in ("_begin_owner_access", "_end_owner_access"):
            try:
                getattr(c, name)(token)
            except RuntimeError as e:
                seen[name] = str(e)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == {
        "has": False,
        "mutable": False,
        "_begin_owner_access": "Carrier is already being accessed by its owner on another thread",
        "_end_owner_access": "Carrier owner access must end on the thread where it began",
    }
    c._end_owner_access(token)


def test_claim_on_a_released_carrier():
    c = CPU(1)
    c.release()
    with pytest.raises(RuntimeError, match=r"^Carrier is released$"):
        c._claim_ownership()


def test_release_with_owner_access():
    c = Generic([1])
    token = c._claim_ownership()
    c._begin_owner_access(token)
    c.release()
    assert c.is_released()
    c._end_owner_access(token)


# ------------------------------------------------------- item protocol


@pytest.mark.parametrize("make", MAKERS)
def test_item_keys(make):
    c = make()
    for bad in (1.0, "0", None, [0]):
        with pytest.raises(TypeError):
            c[bad]
        with pytest.raises(TypeError):
            c[bad] = 0
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        c[-1]
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        c[2**70]
    with pytest.raises(IndexError, match=r"^Carrier index out of range$"):
        c[-1] = 0
    assert c[True] == c[1]
    with pytest.raises(TypeError):
        del c[0]


def test_every_successful_write_bumps_once():
    for c in (CPU(2), Generic([0, 0]), ListCarrier([0, 0])):
        for k in range(5):
            c[k % 2] = k
        assert c.version == 5


def test_version_is_read_only():
    c = CPU(1)
    with pytest.raises(AttributeError):
        c.version = 3


def test_carriers_support_weak_references():
    for c in (Carrier(), CPU(1), Generic([]), ListCarrier()):
        assert weakref.ref(c)() is c


# ------------------------------------------- factory hooks run by the library


class Recording(ListCarrier):
    """Records how the library calls the factory hooks."""

    def __init__(self, values=(), **kwargs):
        super().__init__(values, **kwargs)
        self.calls = []

    def new_like(self, values, *, mutable=True, **kwargs):
        self.calls.append(("new_like", list(values), mutable, kwargs))
        self.made = ListCarrier(values, mutable=mutable)
        return self.made

    def allocate_like(self, size, *, mutable=True, dtype=None, empty=False):
        self.calls.append(("allocate_like", size, mutable, dtype, empty))
        self.made = ListCarrier([None] * size, mutable=mutable, dtype=dtype)
        return self.made


def test_library_allocate_like_runs_the_hook():
    c = Recording([1], dtype=DType.Floating)
    r = _native._debug_allocate_like(c, 3)
    assert r is c.made  # the object the hook returned, not a copy
    assert c.calls == [("allocate_like", 3, True, DType.Floating, False)]
    r = _native._debug_allocate_like(c, 0, DType.Any)
    assert r is c.made and c.calls[-1][3] is DType.Any


def test_library_new_like_runs_the_hook():
    marker = object()
    c = Recording([1], dtype=DType.Any)
    r = _native._debug_new_like(c, [1, None, marker])
    assert r is c.made
    # The base signature has no dtype: it is passed only when it differs.
    assert c.calls == [("new_like", [1, None, marker], True, {})]
    assert r.values[2] is marker


def test_library_factory_hook_errors():
    class Bad(ListCarrier):
        def allocate_like(self, size, **kwargs):
            return [None] * size

        def new_like(self, values, **kwargs):
            raise Boom("new_like")

    with pytest.raises(TypeError, match=r"allocate_like\(\) must return a Carrier"):
        _native._debug_allocate_like(Bad(), 2)
    with pytest.raises(Boom, match="new_like"):
        _native._debug_new_like(Bad(), [1])
    with pytest.raises(RuntimeError, match=r'"Carrier::allocate_like"'):
        _native._debug_allocate_like(Carrier(), 2, DType.Any)


def test_library_factories_of_built_in_carriers():
    r = _native._debug_allocate_like(CPU(1, dtype=DType.Int32), 2)
    assert type(r) is CPU and list(r) == [0, 0]
    r = _native._debug_new_like(Generic([], dtype=DType.Any), [1, None])
    assert type(r) is Generic and list(r) == [1, None] and r.dtype() is DType.Any
