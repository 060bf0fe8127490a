"""Capabilities (strideweave.carriers.operation_capability): descriptors and
their messages, exact matching, the class registry (declaration, sealing by
observation, shipped sets, isolation), the reason sentences, instance
queries, storage dtypes, DependentCarrier snapshots, a declaration racing
observers, and a property: every resolvable plan matches exactly one
capability of each carrier that executes it."""

import dataclasses
import gc
import subprocess
import sys
import threading

import pytest
import strideweave as sw
from hypothesis import given
from hypothesis import strategies as st
from strideweave import _native
from strideweave.carriers import _built_in_capabilities as built_ins
from strideweave.carriers import operation_capability as oc
from strideweave.carriers.operation_capability import (
    DependentCarrier,
    OperandCapability,
    OperationCapability,
    UnsupportedOperationPlan,
    capabilities_for_carrier_class,
    carrier_operation_capabilities,
    matching_capability,
    register_operation_capabilities,
    require_capability,
    supports_operation_plan,
    unsupported_plan_reason,
)
from strideweave.carriers.operation_policy import (
    Accumulation,
    Arithmetic,
    OperandRole,
    registered_operations,
    resolve_operation_plan,
)

D = sw.DType
F32, I32, FLT, ANY, BOOL = D.Float32, D.Int32, D.Floating, D.Any, D.Bool
T = OperandRole.TENSOR
W = OperandRole.WEAK_SCALAR


def plan(name, *args):
    return resolve_operation_plan(name, *args)


def cap(name, *args):
    return OperationCapability.from_plan(plan(name, *args))


def fresh(name="Custom", base=sw.Carrier):
    return type(name, (base,), {})


# ----------------------------------------------------------- descriptors


def test_operand_capability_rules():
    assert OperandCapability(T, F32, F32).dtype is F32
    assert OperandCapability(W, None, F32).dtype is None
    with pytest.raises(TypeError, match="role must be an OperandRole"):
        OperandCapability("tensor", F32, F32)
    with pytest.raises(TypeError, match="tensor operand capability needs a storage dtype"):
        OperandCapability(T, None, F32)
    with pytest.raises(TypeError, match="weak scalar operand capability has no storage dtype"):
        OperandCapability(W, F32, F32)
    with pytest.raises(TypeError, match="convert_to must be a SimpleDType"):
        OperandCapability(T, F32, "Float32")


def test_operation_capability_rules():
    o = (OperandCapability(T, F32, F32),)
    ok = OperationCapability("relu", o, Arithmetic.BINARY32, None, None, F32)
    assert ok == cap("relu", F32)
    assert OperationCapability("relu", list(o), Arithmetic.BINARY32, None, None, F32) == ok
    with pytest.raises(ValueError, match="needs at least one operand"):
        OperationCapability("relu", (), Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(TypeError, match="operation must be a str"):
        OperationCapability(5, o, Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(TypeError, match="compute must be an Arithmetic"):
        OperationCapability("relu", o, "binary32", None, None, F32)
    with pytest.raises(TypeError, match="accumulation must be an Accumulation"):
        OperationCapability("relu", o, Arithmetic.BINARY32, "floating", None, F32)
    with pytest.raises(TypeError, match="accumulator_dtype must be a SimpleDType"):
        OperationCapability("relu", o, Arithmetic.BINARY32, None, "F32", F32)
    with pytest.raises(TypeError, match="output must be a SimpleDType"):
        OperationCapability("relu", o, Arithmetic.BINARY32, None, None, None)
    with pytest.raises(TypeError, match="must be OperandCapability entries"):
        OperationCapability("relu", ("x",), Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(ValueError, match="unknown operation 'nope'"):
        OperationCapability("nope", o, Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(ValueError, match="unknown operation 'view'"):
        OperationCapability("view", o, Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(TypeError, match="accumulator_dtype needs an accumulation"):
        OperationCapability("relu", o, Arithmetic.BINARY32, None, F32, F32)
    with pytest.raises(TypeError, match="an accumulation needs an accumulator_dtype"):
        OperationCapability("reduce_sum", o, Arithmetic.BINARY32, Accumulation.FLOATING, None, F32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ok.output = I32
    assert hash(ok) == hash(cap("relu", F32))
    assert len({ok, cap("relu", F32), cap("relu", I32)}) == 2


def test_matching_is_exact():
    p = plan("add", I32, I32)
    c = OperationCapability.from_plan(p)
    assert c.matches(p)
    assert not c.matches(plan("add", I32, F32))
    assert not c.matches(plan("sub", I32, I32))
    assert not cap("reduce_sum", F32).matches(plan("relu", F32))
    swapped = OperationCapability.from_plan(plan("mul", 3, I32))
    assert not swapped.matches(plan("mul", I32, 3))
    with pytest.raises(TypeError, match="must be an OperationPlan"):
        c.matches(c)
    with pytest.raises(TypeError, match="must be an OperationPlan"):
        OperationCapability.from_plan("add")


# -------------------------------------------------------------- registry


def test_declare_and_query():
    X = fresh()
    caps = [cap("relu", F32), cap("add", F32, F32), cap("reduce_sum", I32)]
    register_operation_capabilities(X, caps)
    got = capabilities_for_carrier_class(X)
    assert [c.operation for c in got] == ["add", "reduce_sum", "relu"]
    assert isinstance(got, tuple) and set(got) == set(caps)
    assert capabilities_for_carrier_class(X, "relu") == (cap("relu", F32),)
    assert capabilities_for_carrier_class(X, "exp") == ()
    assert capabilities_for_carrier_class(X) is got
    p = plan("relu", F32)
    assert matching_capability(X, p) == cap("relu", F32)
    assert supports_operation_plan(X, p) is True
    assert unsupported_plan_reason(X, p) is None
    assert require_capability(X, p) == cap("relu", F32)
    assert X().operation_capabilities() == got
    assert X().supports_operation_plan(p)


def test_empty_declaration_is_complete():
    X = fresh()
    register_operation_capabilities(X, [])
    assert capabilities_for_carrier_class(X) == ()
    with pytest.raises(TypeError, match="has already declared"):
        register_operation_capabilities(X, [])


def test_rejected_declarations_leave_the_class_open():
    X = fresh("Rejected")
    with pytest.raises(ValueError, match="Rejected already declares a capability: relu with"):
        register_operation_capabilities(X, [cap("relu", F32), cap("relu", F32)])
    assert _native._class_state(X) == 0
    with pytest.raises(TypeError, match="must be OperationCapability entries"):
        register_operation_capabilities(X, [cap("relu", F32), plan("relu", F32)])
    with pytest.raises(TypeError, match="must be OperationCapability entries"):
        register_operation_capabilities(X, 5)
    assert _native._class_state(X) == 0
    register_operation_capabilities(X, [cap("relu", F32)])
    assert capabilities_for_carrier_class(X) == (cap("relu", F32),)


def test_second_declaration_and_late_declarations():
    X = fresh("Twice")
    register_operation_capabilities(X, [cap("exp", F32)])
    with pytest.raises(
        TypeError, match="^Twice has already declared its operation-plan capabilities$"
    ):
        register_operation_capabilities(X, [cap("exp", I32)])
    assert capabilities_for_carrier_class(X) == (cap("exp", F32),)

    Q = fresh("Queried")
    assert capabilities_for_carrier_class(Q) == ()
    with pytest.raises(TypeError, match="Queried was first observed without a declaration"):
        register_operation_capabilities(Q, [cap("exp", F32)])
    assert capabilities_for_carrier_class(Q) == ()

    for query in (matching_capability, supports_operation_plan, unsupported_plan_reason):
        Y = fresh("Observed")
        query(Y, plan("exp", F32))
        with pytest.raises(TypeError, match="first observed without a declaration"):
            register_operation_capabilities(Y, [])
    Z = fresh("Required")
    with pytest.raises(UnsupportedOperationPlan):
        require_capability(Z, plan("exp", F32))
    with pytest.raises(TypeError, match="first observed without a declaration"):
        register_operation_capabilities(Z, [])

    C = fresh("Built")
    C()
    with pytest.raises(TypeError, match="Built was already observed"):
        register_operation_capabilities(C, [cap("exp", F32)])
    S = fresh("BuiltCPU", sw.CPU)
    S(1)
    with pytest.raises(TypeError, match="BuiltCPU was already observed"):
        register_operation_capabilities(S, [])


def test_which_classes_may_declare():
    for shipped in (sw.CPU, sw.Generic, sw.FileBacked, sw.Evictable):
        with pytest.raises(TypeError, match="is a shipped backend"):
            register_operation_capabilities(shipped, [])
    with pytest.raises(TypeError, match="not a Carrier implementation"):
        register_operation_capabilities(object, [])
    with pytest.raises(TypeError, match="not a Carrier implementation"):
        register_operation_capabilities(int, [])
    with pytest.raises(TypeError, match="cannot be declared for the Carrier base class"):
        register_operation_capabilities(sw.Carrier, [])
    with pytest.raises(TypeError, match="is a DependentCarrier implementation"):
        register_operation_capabilities(fresh(base=DependentCarrier), [])
    with pytest.raises(TypeError, match="must be a carrier class"):
        register_operation_capabilities(fresh()(), [])
    # A subclass of a shipped backend is a custom class of its own.
    Sub = fresh("SubCPU", sw.CPU)
    register_operation_capabilities(Sub, [cap("exp", F32)])
    assert capabilities_for_carrier_class(Sub) == (cap("exp", F32),)


def test_lookups_use_the_exact_class():
    Base = fresh("Base")
    register_operation_capabilities(Base, [cap("exp", F32)])
    Child = fresh("Child", Base)
    Sibling = fresh("Sibling")
    assert capabilities_for_carrier_class(Child) == ()
    assert capabilities_for_carrier_class(Sibling) == ()
    Parent = fresh("Parent")
    Kid = fresh("Kid", Parent)
    register_operation_capabilities(Kid, [cap("relu", F32)])
    assert capabilities_for_carrier_class(Parent) == ()
    assert capabilities_for_carrier_class(Kid) == (cap("relu", F32),)
    assert capabilities_for_carrier_class(fresh("SubCPU", sw.CPU)) == ()


def test_query_arguments():
    with pytest.raises(TypeError, match="must be a carrier class"):
        capabilities_for_carrier_class(sw.CPU(1))
    with pytest.raises(TypeError, match="not a Carrier implementation"):
        capabilities_for_carrier_class(object)
    with pytest.raises(TypeError, match="operation must be a str or None"):
        capabilities_for_carrier_class(sw.CPU, 3)
    with pytest.raises(TypeError, match="must be an OperationPlan"):
        supports_operation_plan(sw.CPU, "add")
    with pytest.raises(TypeError, match="must be an OperationPlan"):
        supports_operation_plan(sw.CPU, cap("add", F32, F32))
    with pytest.raises(TypeError, match="must be an OperationPlan"):
        unsupported_plan_reason(sw.CPU, None)


def test_reason_sentences():
    X = fresh("Custom")
    register_operation_capabilities(X, [cap("add", F32, F32)])
    assert (
        unsupported_plan_reason(X, plan("relu", F32))
        == "Custom declares no operation-plan capability for 'relu'"
    )
    want = (
        "Custom declares no operation-plan capability for this 'add' plan: add with operands "
        "(tensor Int32->Int32, tensor Int32->Int32), int32_exact_checked compute, no "
        "accumulation, Int32 output"
    )
    assert unsupported_plan_reason(X, plan("add", I32, I32)) == want
    with pytest.raises(UnsupportedOperationPlan) as info:
        require_capability(X, plan("add", I32, I32))
    assert str(info.value) == want
    assert isinstance(info.value, NotImplementedError)
    with pytest.raises(UnsupportedOperationPlan, match="^Custom declares no"):
        X().require_operation_plan(plan("add", I32, I32))
    reason = unsupported_plan_reason(sw.CPU, plan("matmul", ANY, ANY))
    assert reason == (
        "CPU declares no operation-plan capability for this 'matmul' plan: matmul with "
        "operands (tensor Any->Any, tensor Any->Any), host compute, host accumulation in Any, "
        "Any output"
    )


# ---------------------------------------------------------------- shipped


def test_shipped_sets():
    names = {s.name for s in registered_operations()}
    for cls in (sw.CPU, sw.Generic):
        caps = capabilities_for_carrier_class(cls)
        assert {c.operation for c in caps} == names
        assert len(set(caps)) == len(caps) == 53
        ops = [c.operation for c in caps]
        assert ops == sorted(ops)
        assert _native._class_state(cls) == 4
    assert capabilities_for_carrier_class(sw.FileBacked) == ()
    assert capabilities_for_carrier_class(sw.BlockDeviceCarrier) == ()
    assert _native._class_state(sw.BlockDeviceCarrier) == 4
    assert capabilities_for_carrier_class(sw.Evictable) == ()
    assert built_ins.__all__ == []
    assert sw.Evictable not in built_ins._BUILT_INS
    assert built_ins._BUILT_INS == (
        sw.CPU,
        sw.Generic,
        sw.FileBacked,
        sw.BlockDeviceCarrier,
        sw.OpenCL,
    )
    # OpenCL runs the CPU's operations: the same shipped plans, no runtime needed.
    assert capabilities_for_carrier_class(sw.OpenCL) == capabilities_for_carrier_class(sw.CPU)
    assert _native._class_state(sw.OpenCL) == 4
    for cls in built_ins._BUILT_INS:
        with pytest.raises(RuntimeError, match="already declared"):
            built_ins._declare_built_in_capabilities(cls)
    with pytest.raises(TypeError, match="not a Carrier implementation"):
        built_ins._declare_built_in_capabilities(object)
    with pytest.raises(TypeError, match="Carrier base class"):
        built_ins._declare_built_in_capabilities(sw.Carrier)
    before = capabilities_for_carrier_class(sw.CPU)
    built_ins._initialize_built_in_capabilities()
    assert capabilities_for_carrier_class(sw.CPU) == before
    assert not any(name.startswith("declare") for name in dir(oc))
    # Both CPU families of mul, with the scalar on either side.
    assert supports_operation_plan(sw.CPU, plan("mul", 3, I32))
    assert supports_operation_plan(sw.CPU, plan("mul", F32, 0.5))
    assert not supports_operation_plan(sw.Generic, plan("mul", F32, 0.5))
    assert supports_operation_plan(sw.Generic, plan("pow", ANY, 2))


FIRST_IMPORTS = [
    "strideweave",
    "strideweave.carriers",
    "strideweave.carriers.operation_capability",
    "strideweave.carriers.operation_policy",
    "strideweave.carriers._built_in_capabilities",
    "strideweave.carriers.cpu",
    "strideweave.functional",
]


@pytest.mark.parametrize("module", FIRST_IMPORTS)
def test_shipped_sets_are_sealed_whatever_is_imported_first(module):
    code = (
        f"import importlib; importlib.import_module({module!r})\n"
        "from strideweave import _native, CPU, Generic, FileBacked\n"
        "assert [_native._class_state(c) for c in (CPU, Generic, FileBacked)] == [4, 4, 4]\n"
        "from strideweave.carriers.operation_capability import capabilities_for_carrier_class\n"
        "assert len(capabilities_for_carrier_class(CPU)) == 53\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -------------------------------------------------------- instance queries


def test_instance_queries_read_the_class():
    c = sw.CPU(2)
    caps = c.operation_capabilities()
    assert caps == capabilities_for_carrier_class(sw.CPU)
    assert any(x.output is I32 for x in caps), "a Float32 CPU still lists Int32 plans"
    assert c.operation_capabilities("relu") == capabilities_for_carrier_class(sw.CPU, "relu")
    assert c.operation_capabilities(operation_name="exp") == capabilities_for_carrier_class(
        sw.CPU, "exp"
    )
    assert isinstance(caps, tuple)
    assert not hasattr(caps[0], "executor")
    p = plan("add", I32, I32)
    assert c.supports_operation_plan(p) and c.unsupported_plan_reason(p) is None
    assert c.require_operation_plan(p) == OperationCapability.from_plan(p)
    g = sw.Generic([1.0])
    assert not g.supports_operation_plan(p)
    assert g.unsupported_plan_reason(p).startswith("Generic declares no")
    with pytest.raises(TypeError, match="must be an OperationPlan"):
        c.supports_operation_plan("add")
    with pytest.raises(TypeError, match="operation must be a str or None"):
        c.operation_capabilities(5)
    assert carrier_operation_capabilities(c) == caps
    with pytest.raises(TypeError, match="not a class"):
        carrier_operation_capabilities(sw.CPU)
    with pytest.raises(TypeError, match="must be a Carrier instance"):
        carrier_operation_capabilities(object())
    c.release()
    assert c.operation_capabilities() == caps


def test_evictable_instance_snapshots():
    assert capabilities_for_carrier_class(sw.Evictable) == ()
    e = sw.Evictable(sw.CPU(2), sw.CPU(2))
    assert e.operation_capabilities() == capabilities_for_carrier_class(sw.CPU)
    assert e.supports_operation_plan(plan("add", I32, I32))
    f = sw.Evictable(sw.Generic([1.0, 2.0]), sw.FileBacked())
    got = f.operation_capabilities()
    generic = capabilities_for_carrier_class(sw.Generic)
    assert got == tuple(c for c in generic if c.output is FLT)
    assert f.supports_operation_plan(plan("exp", ANY))
    assert not f.supports_operation_plan(plan("relu", ANY))
    assert f.unsupported_plan_reason(plan("relu", ANY)).startswith(
        "Evictable declares no operation-plan capability for this 'relu' plan"
    )


def test_supports_storage_dtype():
    table = {
        sw.CPU(1): {F32, I32, BOOL},
        sw.Generic([1.0]): {F32, I32, BOOL, ANY, FLT},
        sw.FileBacked(): {F32, I32, FLT},
        sw.Evictable(sw.CPU(2), sw.CPU(2)): {F32, I32, BOOL},
        sw.Evictable(sw.Generic([1.0]), sw.FileBacked()): {F32, I32, FLT},
    }
    for carrier, want in table.items():
        assert {d for d in D if carrier.supports_storage_dtype(d)} == want, carrier
    c = sw.CPU(1, dtype=F32)
    assert c.supports_storage_dtype(I32), "whatever the current dtype"
    c.release()
    assert c.supports_storage_dtype(BOOL), "after release too"
    with pytest.raises(TypeError, match="dtype must be a DType"):
        c.supports_storage_dtype("Float32")

    class Mine(sw.Carrier):
        def dtype(self):
            return I32

    assert {d for d in D if Mine().supports_storage_dtype(d)} == {I32}

    class Broken(sw.Carrier):
        pass

    with pytest.raises(RuntimeError, match="pure virtual"):
        Broken().supports_storage_dtype(I32)


# ----------------------------------------------------------- dependent


class Tiered(DependentCarrier):
    calls = 0

    def __init__(self, caps):
        super().__init__()
        self._caps = caps

    def _generate_operation_capabilities(self):
        type(self).calls += 1
        yield from self._caps

    def size(self):
        return 0

    def dtype(self):
        return F32

    def __eq__(self, other):
        return isinstance(other, Tiered)

    def __hash__(self):
        return 0


def test_dependent_carrier_lifecycle():
    t = Tiered([cap("relu", F32), cap("add", F32, F32)])
    for query in (
        lambda: t.operation_capabilities(),
        lambda: t.supports_operation_plan(plan("relu", F32)),
        lambda: t.unsupported_plan_reason(plan("relu", F32)),
        lambda: t.require_operation_plan(plan("relu", F32)),
        lambda: t._operation_capability_snapshot(),
        lambda: oc._instance_capabilities(t),
        lambda: carrier_operation_capabilities(t),
    ):
        with pytest.raises(RuntimeError, match="Tiered has not finalized"):
            query()
    Tiered.calls = 0
    t._finalize_dependent_capabilities()
    assert Tiered.calls == 1
    assert [c.operation for c in t.operation_capabilities()] == ["add", "relu"]
    assert t._operation_capability_snapshot("relu") == (cap("relu", F32),)
    assert t.supports_operation_plan(plan("relu", F32))
    assert t.unsupported_plan_reason(plan("relu", I32)).startswith(
        "Tiered declares no operation-plan capability for this 'relu' plan"
    )
    with pytest.raises(RuntimeError, match="Tiered capabilities are already finalized"):
        t._finalize_dependent_capabilities()
    assert Tiered.calls == 1
    # Equal instances keep separate snapshots.
    u = Tiered([cap("exp", F32)])
    assert u == t
    u._finalize_dependent_capabilities()
    assert [c.operation for c in u.operation_capabilities()] == ["exp"]
    assert [c.operation for c in t.operation_capabilities()] == ["add", "relu"]


def test_dependent_finalization_failures_leave_it_open():
    t = Tiered([cap("relu", F32), cap("relu", F32)])
    with pytest.raises(ValueError, match="Tiered generated two capabilities equal to: relu"):
        t._finalize_dependent_capabilities()
    t._caps = [cap("relu", F32), "x"]
    with pytest.raises(TypeError, match="must be OperationCapability entries"):
        t._finalize_dependent_capabilities()
    with pytest.raises(RuntimeError, match="has not finalized"):
        t.operation_capabilities()
    t._caps = []
    t._finalize_dependent_capabilities()
    assert t.operation_capabilities() == ()


def test_dependent_base_and_registry():
    class Legacy(DependentCarrier):
        pass

    x = Legacy()
    with pytest.raises(NotImplementedError, match="Legacy must implement"):
        x._finalize_dependent_capabilities()
    with pytest.raises(TypeError, match="must be a DependentCarrier instance"):
        oc._instance_capabilities(sw.CPU(1))
    assert capabilities_for_carrier_class(Legacy) == ()
    t = Tiered([cap("exp", F32)])
    t._finalize_dependent_capabilities()
    assert t in oc._FROZEN
    n = len(oc._FROZEN)
    del t
    gc.collect()
    assert len(oc._FROZEN) == n - 1


def test_dead_classes_are_forgotten():
    def make():
        X = fresh("Transient")
        register_operation_capabilities(X, [cap("exp", F32)])
        return id(X)

    key = make()
    gc.collect()
    assert key not in _native._capability_guards
    # Many classes come and go; none inherits another's set.
    for _ in range(200):
        Y = fresh("Reused")
        assert _native._class_state(Y) == 0
        register_operation_capabilities(Y, [])
        del Y
    gc.collect()


# ------------------------------------------------------------------ race


@pytest.mark.threads
def test_declaration_racing_observers_is_all_or_nothing():
    full = (cap("add", F32, F32), cap("reduce_sum", F32), cap("relu", F32))
    for _ in range(50):
        X = fresh("Raced")
        barrier = threading.Barrier(5)
        seen = []
        outcome = []

        def observe(X=X, barrier=barrier, seen=seen):
            barrier.wait()
            seen.append(capabilities_for_carrier_class(X))

        def declare(X=X, barrier=barrier, outcome=outcome):
            barrier.wait()
            try:
                register_operation_capabilities(X, full)
                outcome.append(True)
            except TypeError as e:
                assert "first observed without a declaration" in str(e)
                outcome.append(False)

        threads = [threading.Thread(target=observe) for _ in range(4)]
        threads.append(threading.Thread(target=declare))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(seen) == 4 and len(outcome) == 1
        want = tuple(sorted(full, key=lambda c: c.operation)) if outcome[0] else ()
        assert all(s == want for s in seen)
        assert capabilities_for_carrier_class(X) == want


# -------------------------------------------------------------- property

CPU_TENSORS = st.sampled_from([F32, I32])
GENERIC_TENSORS = st.sampled_from([FLT, ANY])
SCALARS = st.one_of(
    st.integers(-(2**40), 2**40),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
SPECS = registered_operations()
EVICTABLE_CPU = sw.Evictable(sw.CPU(2), sw.CPU(2))
EVICTABLE_GENERIC = sw.Evictable(sw.Generic([1.0, 2.0]), sw.Generic([]))


@given(
    spec=st.sampled_from(SPECS),
    family=st.sampled_from(["cpu", "generic"]),
    data=st.data(),
    scalar_first=st.booleans(),
)
def test_every_plan_matches_exactly_one_capability(spec, family, data, scalar_first):
    tensors = CPU_TENSORS if family == "cpu" else GENERIC_TENSORS
    args = [data.draw(tensors if role is T else SCALARS) for _, role in spec.operands]
    if spec.name == "mul" and scalar_first:
        args.reverse()
    p = resolve_operation_plan(spec.name, *args)
    executing = [sw.CPU, EVICTABLE_CPU] if family == "cpu" else [sw.Generic, EVICTABLE_GENERIC]
    other = sw.Generic if family == "cpu" else sw.CPU
    for carrier in executing:
        if isinstance(carrier, type):
            caps = capabilities_for_carrier_class(carrier)
            assert supports_operation_plan(carrier, p)
        else:
            caps = carrier.operation_capabilities()
            assert carrier.supports_operation_plan(p)
        assert sum(c.matches(p) for c in caps) == 1
    assert not supports_operation_plan(other, p)


def test_docstring_examples_run():
    import doctest

    from strideweave.carriers import operation_policy

    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = []
    for module in (oc, operation_policy):
        tests += finder.find(module)
    for name in (
        "operation_capabilities",
        "supports_operation_plan",
        "unsupported_plan_reason",
        "require_operation_plan",
        "supports_storage_dtype",
    ):
        tests += finder.find(getattr(sw.Carrier, name), f"Carrier.{name}")
    assert len(tests) >= 20
    for test in tests:
        runner.run(test)
    assert runner.failures == 0
