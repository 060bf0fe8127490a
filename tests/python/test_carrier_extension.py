"""The carrier-extension API: values, registration, storage-only carriers.

Checklist (later-api.md sections 4.1 to 4.4 and 4.6; what is built so far):

- 4.1 import surface: ``test_import_surface``, ``test_top_level_subset``,
  ``test_private_helpers``.
- 4.2 values and their messages: ``test_unsupported``,
  ``test_execution_interface``, ``test_storage_provider``,
  ``test_kernel_values``, ``test_transfer_values``,
  ``test_composite_and_definition``, ``test_completion_and_result``,
  ``test_prepared_records``, ``test_transfer_request``.
- 4.3 registration and sealing: ``test_registration_rejections``,
  ``test_second_definition_and_observation``,
  ``test_capability_registration_refused``, ``test_exact_class_lookup``,
  ``test_registration_races_observation``.
- 4.4 lifecycle: ``test_construction_checks``, ``test_queries``,
  ``test_reads_and_writes``, ``test_factories``, ``test_release``,
  ``test_facets``, ``test_storage_only_dispatch``,
  ``test_garbage_collection_releases``.
- 4.6 shipped carriers are definition-free: ``test_shipped_are_definition_free``.
- 6.4/6.5 route resolution and execution: ``test_moves``, ``test_evictable_tier``,
  ``test_moves_through_routes``, ``test_route_autograd``; ownership, the
  background executor, failures, lifetime and move profiling (6.5, 7):
  ``tests/python/test_move_routes_async.py``.

Kernel patterns, packs, dispatch (section 5) and definition-backed
DependentCarrier classes (4.5) are in ``test_kernel_dispatch``.
"""

from __future__ import annotations

import dataclasses
import gc
import threading

import pytest
import strideweave as sw
from strideweave.carriers import extension as E
from strideweave.carriers.operation_capability import OperationCapability
from strideweave.carriers.operation_policy import resolve_operation_plan
from strideweave.operation_definition import _operation_definition

F32 = sw.DType.Float32


class Log:
    """The calls a storage provider saw."""

    def __init__(self):
        self.calls = []


def provider(log=None, *, dtypes=(F32,), size_lie=0, fallback=False, **override):
    log = log if log is not None else Log()

    def supports_dtype(c, d):
        log.calls.append(("supports_dtype", d))
        return d in dtypes

    def physical_size(c):
        return len(c.values) + size_lie

    def allocate(c, n):
        log.calls.append(("allocate", n))
        c.values = [0.0] * n

    def release(c):
        log.calls.append(("release",))
        c.values = []

    def read(c, i):
        log.calls.append(("read", i))
        return c.values[i]

    def write(c, i, v):
        log.calls.append(("write", i))
        c.values[i] = v

    fields = dict(
        supports_dtype=supports_dtype,
        physical_size=physical_size,
        allocate=allocate,
        release=release,
        read=read,
        write=write,
        elementwise_fallback=fallback,
    )
    fields.update(override)
    return E.StorageProvider(**fields)


def defined(name="Store", log=None, base=sw.Carrier, **kw):
    cls = type(name, (base,), {})
    E.register_carrier_definition(cls, E.CarrierDefinition(provider(log, **kw)))
    return cls


def relu_plan():
    return OperationCapability.from_plan(resolve_operation_plan("relu", F32))


# ------------------------------------------------------------------ 4.1


def test_import_surface():
    assert len(E.__all__) == 19
    for name in E.__all__:
        assert hasattr(E, name)


def test_top_level_subset():
    exported = [
        "CarrierDefinition",
        "StorageProvider",
        "KernelProvider",
        "TransferRoute",
        "CompositeProvider",
        "CarrierFacet",
        "KernelExecutionInterface",
        "KernelPack",
        "KernelPattern",
        "Unsupported",
        "register_carrier_definition",
        "register_kernel_pack",
    ]
    for name in exported:
        assert getattr(sw, name) is getattr(E, name)
    for name in [
        "TransferProvider",
        "PreparedKernel",
        "PreparedTransfer",
        "PreparedComposite",
        "ProviderResult",
        "ProviderCompletion",
        "TransferRequest",
    ]:
        assert not hasattr(sw, name)


def test_private_helpers():
    cls = defined("Peek")
    assert E._peek_carrier_definition(cls) is not None
    assert E._has_carrier_definition(cls)
    assert E._peek_carrier_definition(sw.CPU) is None
    assert not E._has_carrier_definition(type("Plain", (sw.Carrier,), {}))


# ------------------------------------------------------------------ 4.2


def test_unsupported():
    assert E.Unsupported("x").reason == "x"
    with pytest.raises(TypeError, match="reason must be a string"):
        E.Unsupported(3)
    with pytest.raises(ValueError, match="reason must not be empty"):
        E.Unsupported("")
    with pytest.raises(dataclasses.FrozenInstanceError):
        E.Unsupported("x").reason = "y"


def test_execution_interface():
    iface = E.KernelExecutionInterface("2")
    assert iface.compatibility_identity == (E.KernelExecutionInterface, "2")
    with pytest.raises(TypeError, match="version must be a string"):
        E.KernelExecutionInterface(2)
    with pytest.raises(ValueError, match="version must not be empty"):
        E.KernelExecutionInterface("")
    with pytest.raises(AttributeError, match="immutable"):
        iface.version = "3"

    class Sub(E.KernelExecutionInterface):
        __slots__ = ("extra",)

        def __init__(self):
            super().__init__("1")
            object.__setattr__(self, "extra", 5)

    assert Sub().extra == 5
    assert Sub().compatibility_identity == (Sub, "1")


def test_storage_provider():
    p = provider()
    assert p.elementwise_fallback is False
    assert dataclasses.replace(p, elementwise_fallback=True).elementwise_fallback
    for name in ("supports_dtype", "physical_size", "allocate", "release", "read", "write"):
        with pytest.raises(TypeError, match=f"{name} must be callable"):
            provider(**{name: 3})
    with pytest.raises(TypeError, match="elementwise_fallback must be a bool"):
        provider(fallback=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.read = None


def test_kernel_values():
    relu = _operation_definition("relu")
    plan = relu_plan()
    prep = lambda inv, iface: E.Unsupported("no")  # noqa: E731
    pattern = E.KernelPattern(relu, iter([plan]), "k1", prep, 5)
    assert pattern.plans == (plan,) and pattern.preference == 5
    assert E.KernelPattern(relu, [plan], "k1", prep, preference=-2).preference == -2
    with pytest.raises(ValueError, match="must not be empty"):
        E.KernelPattern(relu, [], "k", prep)
    with pytest.raises(ValueError, match="duplicate"):
        E.KernelPattern(relu, [plan, plan], "k", prep)
    add = OperationCapability.from_plan(resolve_operation_plan("add", F32, F32))
    with pytest.raises(ValueError, match=r"operation\.name"):
        E.KernelPattern(relu, [add], "k", prep)
    with pytest.raises(TypeError, match="signed integer"):
        E.KernelPattern(relu, [plan], "k", prep, True)
    with pytest.raises(TypeError):
        E.KernelPattern("relu", [plan], "k", prep)
    with pytest.raises(TypeError):
        E.KernelPattern(relu, [plan], "k", 3)

    iface = E.KernelExecutionInterface("1")
    kp = E.KernelProvider(iface, [pattern])
    assert kp.patterns == (pattern,)
    assert E.KernelProvider(iface).patterns == ()
    with pytest.raises(TypeError, match="KernelExecutionInterface"):
        E.KernelProvider("1")
    with pytest.raises(TypeError, match="KernelPattern"):
        E.KernelProvider(iface, [3])
    with pytest.raises(ValueError):
        E.KernelProvider(iface, [pattern, pattern])

    pack = E.KernelPack("acme", "1", sw.Carrier, iface, (p for p in [pattern]))
    assert pack.patterns == (pattern,)
    with pytest.raises(ValueError, match="must not be empty"):
        E.KernelPack("acme", "1", sw.Carrier, iface, [])
    other = E.KernelPattern(relu, [plan], "k1", prep)
    with pytest.raises(ValueError, match="duplicate kernel_id"):
        E.KernelPack("acme", "1", sw.Carrier, iface, [pattern, other])


def test_transfer_values():
    tp = E.TransferProvider(lambda request: None)
    with pytest.raises(TypeError):
        E.TransferProvider(None)
    route = E.TransferRoute(sw.Carrier, sw.CPU, "r", tp)
    assert route.route_id == "r"
    with pytest.raises(TypeError, match="source_class"):
        E.TransferRoute(int, sw.CPU, "r", tp)
    with pytest.raises(TypeError, match="destination_class"):
        E.TransferRoute(sw.Carrier, object, "r", tp)
    with pytest.raises(ValueError, match="route_id must not be empty"):
        E.TransferRoute(sw.Carrier, sw.CPU, "", tp)
    with pytest.raises(TypeError, match="provider must be a TransferProvider"):
        E.TransferRoute(sw.Carrier, sw.CPU, "r", lambda r: None)


def test_composite_and_definition():
    fn = lambda *a: ()  # noqa: E731
    E.CompositeProvider(fn, fn, fn)
    for i in range(3):
        args = [fn, fn, fn]
        args[i] = 1
        with pytest.raises(TypeError, match="must be callable"):
            E.CompositeProvider(*args)
    storage = provider()
    tp = E.TransferProvider(lambda r: None)
    routes = iter([E.TransferRoute(sw.Carrier, sw.CPU, "a", tp)])

    @dataclasses.dataclass(frozen=True, slots=True)
    class Facet(E.CarrierFacet):
        n: int

    d = E.CarrierDefinition(storage, transfers=routes, facets=iter([Facet(1)]))
    assert isinstance(d.transfers, tuple) and len(d.transfers) == 1
    assert d.facets == (Facet(1),)
    with pytest.raises(TypeError):
        E.CarrierDefinition(3)
    with pytest.raises(TypeError):
        E.CarrierDefinition(storage, kernels=3)
    with pytest.raises(TypeError):
        E.CarrierDefinition(storage, transfers=[3])
    with pytest.raises(TypeError):
        E.CarrierDefinition(storage, facets=[3])
    two = [E.TransferRoute(sw.Carrier, sw.CPU, n, tp) for n in "ab"]
    with pytest.raises(ValueError, match="duplicate exact transfer routes"):
        E.CarrierDefinition(storage, transfers=two)
    with pytest.raises(ValueError, match="duplicate exact facet types"):
        E.CarrierDefinition(storage, facets=[Facet(1), Facet(2)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.storage = storage


def test_completion_and_result():
    class Done:
        done = True

        def wait(self):
            return None

    assert isinstance(Done(), E.ProviderCompletion)
    c = Done()
    assert E._require_provider_completion(c) is c

    class BadDone(Done):
        done = 1

    with pytest.raises(TypeError, match="done must be a bool"):
        E._require_provider_completion(BadDone())
    with pytest.raises(TypeError):
        E._require_provider_completion(object())

    class Coroutine(Done):
        def __await__(self):
            yield

    with pytest.raises(TypeError, match="must not expose a coroutine"):
        E._require_provider_completion(Coroutine())

    t = sw.Tensor(sw.CPU(2), 0, sw.Layout.leaf(2, 1))
    assert E.ProviderResult(iter([t])).outputs == (t,)
    with pytest.raises(ValueError, match="outputs must not be empty"):
        E.ProviderResult([])
    with pytest.raises(TypeError, match="Tensor values"):
        E.ProviderResult([1])


def test_prepared_records():
    iface = E.KernelExecutionInterface("1")
    assert E.PreparedKernel(iface, lambda: None).interface is iface
    for make in (E.PreparedTransfer, E.PreparedComposite):
        with pytest.raises(TypeError, match="submit must be callable"):
            make(3)
        p = make(lambda: 7)
        assert p._take()() == 7
        with pytest.raises(RuntimeError, match="already submitted"):
            p._take()
    with pytest.raises(TypeError, match="submit must be callable"):
        E.PreparedKernel(iface, 3)
    with pytest.raises(TypeError):
        E.PreparedKernel("1", lambda: None)


def test_transfer_request():
    t = sw.Tensor(sw.CPU(5), 0, sw.Layout.leaf(3, 2))
    r = E.TransferRequest(t, sw.CPU(5), sw.CPU, sw.CPU, F32, t.layout)
    assert r.physical_span == t.layout.cosize == 5


# ------------------------------------------------------------------ 4.3


def test_registration_rejections():
    d = E.CarrierDefinition(provider())
    with pytest.raises(TypeError, match="concrete Carrier subclass"):
        E.register_carrier_definition(sw.Carrier, d)
    with pytest.raises(TypeError, match="concrete Carrier subclass"):
        E.register_carrier_definition(int, d)
    with pytest.raises(TypeError, match="CarrierDefinition"):
        E.register_carrier_definition(type("A", (sw.Carrier,), {}), 3)
    for shipped in (sw.Generic, sw.CPU, sw.FileBacked, sw.BlockDeviceCarrier, sw.Evictable):
        with pytest.raises(TypeError, match="definition-free shipped carrier"):
            E.register_carrier_definition(shipped, d)
    with pytest.raises(TypeError, match="definition-free shipped carrier"):
        E.register_carrier_definition(type("SubCPU", (sw.CPU,), {}), d)
    cls = type("Routed", (sw.Carrier,), {})
    tp = E.TransferProvider(lambda r: None)
    wrong = E.CarrierDefinition(
        provider(), transfers=[E.TransferRoute(sw.Carrier, sw.CPU, "r", tp)]
    )
    with pytest.raises(TypeError, match="exact source_class"):
        E.register_carrier_definition(cls, wrong)
    fn = lambda *a: ()  # noqa: E731
    composite = E.CompositeProvider(fn, fn, fn)
    with pytest.raises(TypeError, match="must not supply a composite"):
        E.register_carrier_definition(cls, E.CarrierDefinition(provider(), composite=composite))
    dep = type("Dep", (sw.DependentCarrier,), {})
    with pytest.raises(TypeError, match="requires composite"):
        E.register_carrier_definition(dep, E.CarrierDefinition(provider()))
    kernels = E.KernelProvider(E.KernelExecutionInterface("1"))
    with pytest.raises(TypeError, match="forbids kernels"):
        E.register_carrier_definition(
            dep, E.CarrierDefinition(provider(), kernels=kernels, composite=composite)
        )
    # Nothing was registered by the rejections.
    assert not E._has_carrier_definition(cls) and not E._has_carrier_definition(dep)


def test_second_definition_and_observation():
    cls = defined("Twice")
    with pytest.raises(TypeError, match="already has a CarrierDefinition"):
        E.register_carrier_definition(cls, E.CarrierDefinition(provider()))
    seen = type("Seen", (sw.Carrier,), {})
    seen()  # constructing an instance observes the class
    with pytest.raises(TypeError, match="already observed"):
        E.register_carrier_definition(seen, E.CarrierDefinition(provider()))
    queried = type("Queried", (sw.Carrier,), {})
    queried().operation_capabilities()
    with pytest.raises(TypeError, match="already observed"):
        E.register_carrier_definition(queried, E.CarrierDefinition(provider()))


def test_capability_registration_refused():
    cls = defined("NoManual")
    with pytest.raises(TypeError, match="CarrierDefinition"):
        sw.carriers.operation_capability.register_operation_capabilities(cls, [relu_plan()])


def test_exact_class_lookup():
    cls = defined("Parent")
    sub = type("Child", (cls,), {})
    assert not E._has_carrier_definition(sub)
    with pytest.raises(TypeError, match="definition-free Carrier construction"):
        sub(1, dtype=F32)


def test_registration_races_observation():
    # Registration and a construction racing it: either the definition is
    # registered first (the instance is definition-backed) or the class was
    # observed first (registration fails with "already observed").
    for _ in range(20):
        cls = type("Race", (sw.Carrier,), {})
        outcome = {}

        def register(cls=cls, outcome=outcome):
            try:
                E.register_carrier_definition(cls, E.CarrierDefinition(provider()))
                outcome["registered"] = True
            except TypeError as e:
                outcome["registered"] = False
                assert "already observed" in str(e)

        def observe(cls=cls, outcome=outcome):
            try:
                outcome["instance"] = cls(2, dtype=F32)
            except TypeError:
                outcome["instance"] = cls()

        threads = [threading.Thread(target=register), threading.Thread(target=observe)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        has = E._has_carrier_definition(cls)
        assert has == outcome["registered"]


# ------------------------------------------------------------------ 4.4


def test_construction_checks():
    log = Log()
    cls = defined("Checked", log)

    class Configured(sw.Carrier):
        def __init__(self, slots, *, dtype, tag):
            self.tag = tag
            super().__init__(slots, dtype=dtype)

    seen = []
    E.register_carrier_definition(
        Configured,
        E.CarrierDefinition(provider(supports_dtype=lambda c, d: seen.append(c.tag) or True)),
    )
    Configured(2, dtype=F32, tag=7)
    assert seen == [7], "supports_dtype saw the fully configured instance, once"

    c = cls(3, dtype=F32)
    assert [k for k, *_ in log.calls] == ["supports_dtype", "allocate"]
    assert c.size() == 3

    bad_bool = defined("BadBool", supports_dtype=lambda c, d: 1)
    with pytest.raises(TypeError, match="supports_dtype must return a bool"):
        bad_bool(1, dtype=F32)
    log2 = Log()
    refusing = defined("Refusing", log2, dtypes=())
    with pytest.raises(TypeError, match="does not support storage dtype Float32"):
        refusing(1, dtype=F32)
    assert [k for k, *_ in log2.calls] == ["supports_dtype"], "allocate never called"

    def alloc_returns(c, n):
        c.values = [0.0] * n
        return 5

    with pytest.raises(TypeError, match="allocate must return None"):
        defined("AllocRet", allocate=alloc_returns)(1, dtype=F32)
    with pytest.raises(TypeError, match="must return an integer"):
        defined("SizeStr", physical_size=lambda c: "3")(1, dtype=F32)
    with pytest.raises(ValueError, match="must not return a negative"):
        defined("SizeNeg", physical_size=lambda c: -1)(1, dtype=F32)
    with pytest.raises(ValueError, match="requested physical size"):
        defined("SizeLie", size_lie=1)(2, dtype=F32)
    with pytest.raises(TypeError, match="dtype"):
        cls(2)


def test_queries():
    log = Log()
    cls = defined("Queries", log)
    c = cls(2, dtype=F32, mutable=False)
    assert c.dtype() is F32
    assert not c.is_mutable()
    assert cls(1, dtype=F32).is_mutable()
    before = len(log.calls)
    assert c.supports_storage_dtype(F32)
    assert not c.supports_storage_dtype(sw.DType.Int32)
    assert len(log.calls) == before + 2, "asked every time"
    c.release()
    assert c.supports_storage_dtype(F32), "even after release"
    assert c.operation_capabilities() == ()


def test_reads_and_writes():
    log = Log()
    cls = defined("RW", log)
    c = cls(3, dtype=F32)
    c[2] = 1.5
    assert c.version == 1 and c[2] == 1.5 and c.get_value(2) == 1.5
    calls = len(log.calls)
    with pytest.raises(IndexError):
        c[3]
    with pytest.raises(IndexError):
        c[3] = 1.0
    assert len(log.calls) == calls, "range is checked before the provider"

    def write_returns(c, i, v):
        c.values[i] = v
        return True

    bad = defined("WriteRet", write=write_returns)(2, dtype=F32)
    with pytest.raises(TypeError, match="write must return None"):
        bad[0] = 1.0
    assert bad.version == 0, "a failed write bumps no version"
    frozen = cls(2, dtype=F32, mutable=False)
    with pytest.raises(RuntimeError, match="mutable"):
        frozen[0] = 1.0

    def read_raises(c, i):
        raise KeyError("provider")

    with pytest.raises(KeyError, match="provider"):
        defined("ReadRaise", read=read_raises)(1, dtype=F32)[0]


def test_factories():
    cls = defined("Factories")
    c = cls(2, dtype=F32)
    c[0] = 1.0
    n = c.new_like([4.0, 5.0, 6.0], mutable=False)
    assert type(n) is cls and n.version == 0 and list(n) == [4.0, 5.0, 6.0]
    assert not n.is_mutable()
    a = c.allocate_like(4)
    assert type(a) is cls and a.size() == 4 and a.version == 0
    with pytest.raises(TypeError, match="does not support storage dtype Int32"):
        c.allocate_like(2, dtype=sw.DType.Int32)


def test_release():
    log = Log()
    cls = defined("Releasing", log)
    c = cls(2, dtype=F32)
    c.release()
    c.release()
    assert [k for k, *_ in log.calls].count("release") == 1
    assert c.is_released() and c.size() == 0
    with pytest.raises(RuntimeError, match="released"):
        c[0]
    with pytest.raises(RuntimeError) as info:
        c.dispatch_op("no such operation")
    assert str(info.value) == "Releasing is released"

    refusing = [True]

    def refuse(c):
        return "no" if refusing[0] else None

    stubborn = defined("Stubborn", release=refuse)(2, dtype=F32)
    with pytest.raises(TypeError, match="release must return None"):
        stubborn.release()
    assert not stubborn.is_released() and stubborn.size() == 2
    refusing[0] = False
    stubborn.release()
    assert stubborn.is_released()


def test_facets():
    @dataclasses.dataclass(frozen=True, slots=True)
    class Alignment(E.CarrierFacet):
        n: int

    class Other(E.CarrierFacet):
        pass

    cls = type("Faceted", (sw.Carrier,), {})
    facet = Alignment(64)
    E.register_carrier_definition(cls, E.CarrierDefinition(provider(), facets=[facet]))
    c = cls(1, dtype=F32)
    assert c.facet(Alignment) is facet and c.require_facet(Alignment) is facet
    assert c.facet(Other) is None
    with pytest.raises(NotImplementedError, match="Other"):
        c.require_facet(Other)
    with pytest.raises(TypeError, match="CarrierFacet subclass"):
        c.facet(int)
    assert sw.Generic([1.0]).facet(Alignment) is None
    with pytest.raises(NotImplementedError):
        sw.Generic([1.0]).require_facet(Alignment)


def test_storage_only_dispatch():
    c = defined("StorageOnly")(2, dtype=F32)
    with pytest.raises(NotImplementedError, match="storage-only"):
        c.dispatch_op("relu")
    cls = type("Kernelled", (sw.Carrier,), {})
    kernels = E.KernelProvider(E.KernelExecutionInterface("1"))
    E.register_carrier_definition(cls, E.CarrierDefinition(provider(), kernels=kernels))
    with pytest.raises(NotImplementedError, match="no kernel"):
        cls(1, dtype=F32).dispatch_op("relu")


def test_garbage_collection_releases():
    log = Log()
    cls = defined("Collected", log)
    c = cls(2, dtype=F32)
    del c
    gc.collect()
    assert [k for k, *_ in log.calls].count("release") == 1


def test_shipped_are_definition_free():
    for shipped in (sw.Generic, sw.CPU, sw.FileBacked, sw.Evictable):
        assert E._peek_carrier_definition(shipped) is None
        assert not E._has_carrier_definition(shipped)


# ------------------------------------------------------------------ 6.4


def routed_class(name, log, *, refuse=None, submit_result=None, completion=None):
    """A storage class with a route to CPU that copies physical_span slots."""
    cls = type(name, (sw.Carrier,), {})

    def prepare(request):
        log.calls.append(("prepare", sw.is_grad_enabled(), request.physical_span))
        if refuse:
            return E.Unsupported(refuse)

        def submit():
            log.calls.append(("submit",))
            src, dst = request.tensor.carrier, request.destination
            for i in range(request.physical_span):
                dst[i] = src.values[request.tensor.offset + i]
            if completion is not None:
                return completion
            return submit_result

        return E.PreparedTransfer(submit)

    route = E.TransferRoute(cls, sw.CPU, "to-cpu", E.TransferProvider(prepare))
    E.register_carrier_definition(cls, E.CarrierDefinition(provider(), transfers=[route]))
    return cls


def test_moves_through_routes():
    log = Log()
    cls = routed_class("ViaRoute", log)
    src = cls(5, dtype=F32)
    src[2], src[4] = 2.0, 4.0
    t = sw.Tensor(src, 0, sw.Layout.leaf(3, 2))
    with _grad_off():
        moved = sw.move(t, sw.CPU(5))
    assert [moved[i] for i in range(3)] == [0.0, 2.0, 4.0]
    assert src.is_released()
    assert log.calls[0] == ("prepare", False, 5), "prepare runs with the graph off"
    assert ("submit",) in log.calls

    refusing = routed_class("Refuses", Log(), refuse="alignment")
    x = sw.Tensor(refusing(2, dtype=F32), 0, sw.Layout.leaf(2, 1))
    with _grad_off(), pytest.raises(NotImplementedError, match="Refuses, CPU: alignment"):
        sw.move(x, sw.CPU(2))
    assert not x.carrier.is_released()

    bad = routed_class("BadSubmit", Log(), submit_result=object())
    y = sw.Tensor(bad(2, dtype=F32), 0, sw.Layout.leaf(2, 1))
    with _grad_off(), pytest.raises(TypeError):
        sw.move(y, sw.CPU(2))
    assert not y.carrier.is_released(), "a failed transfer leaves the source live"

    class Completion:
        def __init__(self, value):
            self.value, self.waits = value, 0

        @property
        def done(self):
            return True

        def wait(self):
            self.waits += 1
            return self.value

    good = Completion(None)
    waited = routed_class("Waited", Log(), completion=good)
    z = sw.Tensor(waited(2, dtype=F32), 0, sw.Layout.leaf(2, 1))
    with _grad_off():
        sw.move(z, sw.CPU(2))
    assert good.waits == 1, "a completion is waited exactly once"
    wrong = routed_class("WrongYield", Log(), completion=Completion(3))
    w = sw.Tensor(wrong(2, dtype=F32), 0, sw.Layout.leaf(2, 1))
    with _grad_off(), pytest.raises(TypeError, match="must yield None"):
        sw.move(w, sw.CPU(2))


def test_route_autograd():
    # CPU -> ViaGrad copies element by element (a definition-free source);
    # the gradient comes back through ViaGrad's route to CPU.
    cls = routed_class("ViaGrad", Log())
    x = sw.Tensor(sw.CPU(3), 0, sw.Layout.leaf(3, 1))
    for i in range(3):
        x.carrier[i] = float(i)
    moved = sw.move(x, cls(3, dtype=F32))
    assert type(moved.carrier) is cls
    g = sw.Tensor(cls(3, dtype=F32), 0, sw.Layout.leaf(3, 1))
    for i in range(3):
        g.carrier[i] = 1.0 + i
    moved.backward(g)
    assert type(x.grad.carrier) is sw.CPU
    assert [x.grad[i] for i in range(3)] == [1.0, 2.0, 3.0]


def test_moves():
    store = defined("MoveStore")
    tensor = sw.Tensor(store(3, dtype=F32), 0, sw.Layout.leaf(3, 1))
    with _grad_off():
        with pytest.raises(NotImplementedError, match="no transfer route for MoveStore, CPU"):
            sw.move(tensor, sw.CPU(3))
        # Both sides allow elementwise copies.
        a = defined("FallA", fallback=True)
        b = defined("FallB", fallback=True)
        src = a(3, dtype=F32)
        src[1] = 2.0
        moved = sw.move(sw.Tensor(src, 0, sw.Layout.leaf(3, 1)), b(3, dtype=F32))
        assert type(moved.carrier) is b and moved[1] == 2.0 and src.is_released()
        # A definition-free source copies into a definition-backed class.
        cpu = sw.CPU(3)
        cpu[0] = 4.0
        moved = sw.move(sw.Tensor(cpu, 0, sw.Layout.leaf(3, 1)), store(3, dtype=F32))
        assert moved[0] == 4.0
    # Recording needs a route back.
    x = sw.Tensor(sw.CPU(3), 0, sw.Layout.leaf(3, 1))
    with pytest.raises(NotImplementedError, match="reverse route"):
        sw.move(x, store(3, dtype=F32))
    with pytest.raises(RuntimeError, match="TransferRoute"):
        sw.carriers.move.register_move_operation(store, sw.CPU, sw.ElementwiseMoveOperation)


class _grad_off:
    def __enter__(self):
        self.before = sw.is_grad_enabled()
        sw.set_grad_enabled(False)

    def __exit__(self, *exc):
        sw.set_grad_enabled(self.before)


def test_evictable_tier():
    # A definition-backed class as the secondary tier: eviction copies into
    # it element by element, promotion comes back through its route.
    cls = routed_class("Tier", Log())
    primary = sw.CPU(3)
    for i in range(3):
        primary[i] = float(i) + 0.5
    hot = sw.Evictable(primary, cls(3, dtype=F32))
    hot.evict()
    assert hot.is_evicted() and type(hot.secondary) is cls
    hot.promote()
    assert not hot.is_evicted() and [hot[i] for i in range(3)] == [0.5, 1.5, 2.5]
    with pytest.raises(NotImplementedError, match="no transfer route"):
        sw.Evictable(sw.CPU(3), defined("NoRouteTier")(3, dtype=F32))
