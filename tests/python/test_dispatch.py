"""Dispatch (reference §6.1-§6.2, §7, §8, §11.2): the base policy, its
errors, the native tables of CPU and Generic, and Python subclasses of
Carrier, CPU and Generic that extend the registry with their own names and
delegate the rest through super()._dispatch_op."""

import pytest
import strideweave as sw
from helpers_carriers import ListCarrier
from helpers_ops import L, build, logical, ones_like
from strideweave import (
    CPU,
    Carrier,
    DType,
    FileBacked,
    Generic,
    GenericAddOperation,
    GenericReLUOperation,
    Operation,
    Tensor,
)
from strideweave.carriers.cpu import ops as cpu_ops

GENERIC_TABLE = {
    "add": "GenericAddOperation",
    "div": "GenericDivOperation",
    "elu": "GenericELUOperation",
    "elementwise_mul": "GenericElementwiseMulOperation",
    "exp": "GenericExpOperation",
    "gelu": "GenericGELUOperation",
    "leaky_relu": "GenericLeakyReLUOperation",
    "matmul": "GenericMatmulOperation",
    "mul": "GenericScalarMulOperation",
    "permute": "PermuteOperation",
    "pow": "GenericPowOperation",
    "rearrange": "RearrangeOperation",
    "reduce": "GenericReduceSumOperation",
    "relu": "GenericReLUOperation",
    "sigmoid": "GenericSigmoidOperation",
    "silu": "GenericSiLUOperation",
    "softplus": "GenericSoftplusOperation",
    "sub": "GenericSubOperation",
    "tanh": "GenericTanhOperation",
    "view": "GenericViewOperation",
}

CPU_NATIVE = {
    "add": "_CPUAddOperation",
    "sub": "_CPUSubOperation",
    "mul": "_CPUScalarMulOperation",
    "elementwise_mul": "_CPUElementwiseMulOperation",
    "div": "_CPUDivOperation",
    "exp": "_CPUExpOperation",
    "relu": "_CPUReLUOperation",
    "sigmoid": "_CPUSigmoidOperation",
    "tanh": "_CPUTanhOperation",
    "gelu": "_CPUGELUOperation",
    "silu": "_CPUSiLUOperation",
    "softplus": "_CPUSoftplusOperation",
    "elu": "_CPUELUOperation",
    "leaky_relu": "_CPULeakyReLUOperation",
    "pow": "_CPUPowOperation",
    "reduce": "_CPUReduceSumOperation",
    "matmul": "_CPUMatmulOperation",
}
CPU_TABLE = dict(
    CPU_NATIVE,
    permute="PermuteOperation",
    rearrange="RearrangeOperation",
    view="GenericViewOperation",
)


def vec(values, kind="Generic"):
    return build(kind, L([len(values)], [1]), 0, lambda p: values[p])


class Double(Operation):
    """2 * x, defined in Python."""

    def _forward(self, x):
        out = Tensor(x.carrier.allocate_like(x.layout.cosize), 0, x.layout)
        for i in range(x.size()):
            out[i] = 2 * x[i]
        return out

    def backward(self, gradient):
        return [gradient * 2]


# ----------------------------------------------------------- native tables


@pytest.mark.parametrize("name", sorted(GENERIC_TABLE))
def test_generic_table(name):
    g = Generic([1.0])
    op = g.dispatch_op(name)
    assert type(op).__name__ == GENERIC_TABLE[name] and type(op) is getattr(sw, GENERIC_TABLE[name])
    assert op._operation_name == name and op._dispatch_carrier_class is Generic
    raw = g._dispatch_op(name)
    assert type(raw) is type(op) and raw._operation_name is None and raw is not op
    assert g.dispatch_op(name) is not op


@pytest.mark.parametrize("name", sorted(CPU_TABLE))
def test_cpu_table(name):
    c = CPU(1)
    op = c.dispatch_op(name)
    assert type(op).__name__ == CPU_TABLE[name] and isinstance(op, Operation)
    if name in CPU_NATIVE:
        assert type(op) is getattr(cpu_ops, CPU_NATIVE[name])
    assert op._operation_name == name and op._dispatch_carrier_class is CPU
    assert c._dispatch_op(name)._operation_name is None


def test_cpu_operation_names_are_the_references():
    # The reference names the CPU classes "_CPUAddOperation" and so on; code
    # inspects __name__, __qualname__ and repr.
    names = sorted([*CPU_NATIVE.values(), "_CPUBatchedMatmulOperation"])
    assert sorted(cpu_ops.__all__) == names
    for name in names:
        cls = getattr(cpu_ops, name)
        assert cls.__name__ == name and cls.__qualname__ == name
        assert cls.__module__ == "strideweave.carriers.cpu.ops"
        assert repr(cls) == f"<class 'strideweave.carriers.cpu.ops.{name}'>"
        assert getattr(sw._native, name) is cls
        # No public alias: the reference has none.
        assert not hasattr(cpu_ops, name[1:]) and not hasattr(sw._native, name[1:])
    op = CPU(1).dispatch_op("mul")
    assert repr(op).startswith("<strideweave.carriers.cpu.ops._CPUScalarMulOperation object")


def test_unknown_names():
    with pytest.raises(
        NotImplementedError, match="^Generic carrier does not support operation 'x'$"
    ):
        Generic([]).dispatch_op("x")
    with pytest.raises(
        NotImplementedError, match="^Generic carrier does not support operation 'x'$"
    ):
        Generic([])._dispatch_op("x")
    with pytest.raises(NotImplementedError, match="^CPU carrier does not support operation 'x'$"):
        CPU(1).dispatch_op("x")
    with pytest.raises(NotImplementedError, match="^CPU carrier does not support operation 'x'$"):
        CPU(1)._dispatch_op("x")
    with pytest.raises(NotImplementedError, match="^Carrier class does not support operation 'x'$"):
        Carrier().dispatch_op("x")
    with pytest.raises(
        NotImplementedError, match="^Carrier class does not support operation 'relu'$"
    ):
        FileBacked().dispatch_op("relu")
    with pytest.raises(
        NotImplementedError, match="^Carrier class does not support operation 'add'$"
    ):
        ListCarrier([1.0]).dispatch_op("add")


def test_dispatch_op_is_an_instance_method():
    for cls in (Carrier, Generic, CPU, FileBacked):
        with pytest.raises(TypeError):
            cls.dispatch_op("relu")
    with pytest.raises(TypeError):
        Generic([]).dispatch_op(1)
    with pytest.raises(TypeError):
        Generic([]).dispatch_op()
    assert not hasattr(Carrier, "_dispatch_op") and not hasattr(FileBacked, "_dispatch_op")
    assert hasattr(CPU, "_dispatch_op") and hasattr(Generic, "_dispatch_op")


# ------------------------------------------------------------ the policy


def test_dispatch_requires_an_operation():
    class Bad(Generic):
        def _dispatch_op(self, name):
            return "relu"

    with pytest.raises(TypeError, match=r"^Carrier\._dispatch_op must return an Operation$"):
        Bad([1.0]).dispatch_op("relu")
    with pytest.raises(TypeError, match=r"^Carrier\._dispatch_op must return an Operation$"):
        sw.relu(Tensor(Bad([1.0]), 0, L([1], [1])))


def test_dispatch_requires_a_fresh_operation():
    cache = {}

    class Caching(CPU):
        def _dispatch_op(self, name):
            if name not in cache:
                cache[name] = super()._dispatch_op(name)
            return cache[name]

    c = Caching(2)
    first = c.dispatch_op("relu")
    first.ctx["mark"] = 1
    with pytest.raises(
        TypeError, match=r"^Carrier\._dispatch_op must return a fresh Operation instance$"
    ):
        c.dispatch_op("relu")
    assert first._operation_name == "relu" and first._dispatch_carrier_class is Caching
    assert first.ctx == {"mark": 1}
    dispatched = Generic([]).dispatch_op("add")

    class Returning(Generic):
        def _dispatch_op(self, name):
            return dispatched

    with pytest.raises(TypeError, match="fresh Operation instance"):
        Returning([]).dispatch_op("add")
    assert dispatched._dispatch_carrier_class is Generic


def test_dispatch_errors_propagate():
    class Raising(Generic):
        def _dispatch_op(self, name):
            raise KeyError(name)

    with pytest.raises(KeyError):
        Raising([1.0]).dispatch_op("relu")
    with pytest.raises(KeyError):
        sw.relu(Tensor(Raising([1.0]), 0, L([1], [1])))


# ----------------------------------------------- Python subclasses: Carrier


class Doubles(ListCarrier):
    """A Python carrier with its own registry: 'double' and 'add'."""

    def _dispatch_op(self, name):
        if name == "double":
            return Double()
        if name == "add":
            return GenericAddOperation()
        if name == "mul":
            return sw.GenericScalarMulOperation()
        raise NotImplementedError(f"Doubles does not support operation '{name}'")

    def new_like(self, values, *, mutable=True):
        return Doubles(values, mutable=mutable, dtype=self.kind)

    def allocate_like(self, size, *, mutable=True, dtype=None, empty=False):
        return Doubles([0] * size, mutable=mutable, dtype=dtype or self.kind)


def test_python_carrier_registry():
    c = Doubles([1.0, 2.0], dtype=DType.Floating)
    t = Tensor(c, 0, L([2], [1]))
    op = c.dispatch_op("double")
    assert type(op) is Double and op._operation_name == "double"
    assert op._dispatch_carrier_class is Doubles
    y = op.forward(t)
    assert logical(y) == [2.0, 4.0] and type(y.carrier) is Doubles
    s = sw.add(t, t)
    assert logical(s) == [2.0, 4.0]
    assert s.autograd_ctx._dispatch_carrier_class is Doubles
    with pytest.raises(NotImplementedError, match="^Doubles does not support operation 'relu'$"):
        sw.relu(t)


def test_python_carrier_autograd():
    c = Doubles([1.0, 2.0], dtype=DType.Floating)
    t = Tensor(c, 0, L([2], [1]))
    y = c.dispatch_op("double").forward(t)
    z = c.dispatch_op("add").forward(y, t)
    z.backward(Tensor(Doubles([1.0, 1.0], dtype=DType.Floating), 0, z.layout))
    assert logical(t.grad) == [3.0, 3.0] and type(t.grad.carrier) is Doubles


def test_distinct_python_carrier_classes_do_not_mix():
    class Other(Doubles):
        pass

    a = Tensor(Doubles([1.0], dtype=DType.Floating), 0, L([1], [1]))
    b = Tensor(Other([1.0], dtype=DType.Floating), 0, L([1], [1]))
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        sw.add(a, b)
    assert b.carrier.dispatch_op("add")._dispatch_carrier_class is Other


# ------------------------------------------- Python subclasses: CPU, Generic


class MyCPU(CPU):
    def _dispatch_op(self, name):
        if name == "double":
            return Double()
        return super()._dispatch_op(name)


class MyGeneric(Generic):
    def _dispatch_op(self, name):
        if name == "double":
            return Double()
        return super()._dispatch_op(name)


class PlainCPU(CPU):
    pass


class PlainGeneric(Generic):
    pass


@pytest.mark.parametrize("cls", [MyCPU, MyGeneric])
def test_subclass_extends_the_native_table(cls):
    c = cls(2) if issubclass(cls, CPU) else cls([0.0, 0.0])
    c[0], c[1] = 1.0, -2.0
    t = Tensor(c, 0, L([2], [1]))
    op = c.dispatch_op("double")
    assert type(op) is Double and op._dispatch_carrier_class is cls
    assert logical(op.forward(t)) == [2.0, -4.0]
    relu = c.dispatch_op("relu")
    assert relu._dispatch_carrier_class is cls and relu._operation_name == "relu"
    r = sw.relu(t)
    assert r.autograd_ctx._dispatch_carrier_class is cls
    assert logical(r) == [1.0, 0]
    native = "CPU" if issubclass(cls, CPU) else "Generic"
    with pytest.raises(
        NotImplementedError, match=f"^{native} carrier does not support operation 'x'$"
    ):
        c.dispatch_op("x")


@pytest.mark.parametrize("cls", [PlainCPU, PlainGeneric])
def test_subclass_without_override_uses_the_native_table(cls):
    c = cls(1) if issubclass(cls, CPU) else cls([1.0])
    op = c.dispatch_op("exp")
    assert op._dispatch_carrier_class is cls
    t = Tensor(c, 0, L([1], [1]))
    y = sw.exp(t)
    assert y.autograd_ctx._dispatch_carrier_class is cls
    y.backward()
    assert t.grad is not None


def test_exact_class_tags():
    assert CPU(1).dispatch_op("add")._dispatch_carrier_class is CPU
    assert Generic([]).dispatch_op("add")._dispatch_carrier_class is Generic
    # Results of operations are plain built-in carriers.
    t = Tensor(PlainCPU(1), 0, L([1], [1]))
    y = sw.exp(t)
    assert type(y.carrier) is CPU
    assert sw.exp(y).autograd_ctx._dispatch_carrier_class is CPU


def test_monkeypatched_dispatch_is_seen():
    class Patchable(Generic):
        pass

    c = Patchable([1.0])
    Patchable._dispatch_op = lambda self, name: Double()
    try:
        assert type(c.dispatch_op("relu")) is Double
    finally:
        del Patchable._dispatch_op
    assert type(c.dispatch_op("relu")) is GenericReLUOperation


def test_cpu_subclass_autograd_end_to_end():
    c = MyCPU(2)
    c[0], c[1] = 1.0, 3.0
    t = Tensor(c, 0, L([2], [1]))
    y = sw.mul(c.dispatch_op("double").forward(t), 3)
    y.backward(ones_like(y))
    assert logical(t.grad) == [6.0, 6.0]
    assert type(t.grad.carrier) is CPU


def test_operation_defined_dispatch_is_recorded_by_every_path():
    seen = []

    class Tracing(Generic):
        def _dispatch_op(self, name):
            seen.append(name)
            return super()._dispatch_op(name)

    t = Tensor(Tracing([1.0, 2.0]), 0, L([2], [1]))
    results = [t + t, -t, t * 2, t[0:1]]
    assert len(results) == 4
    sw.permute(t, 0)
    sw.reduce(Tensor(Tracing([1.0]), 0, L([1, 1], [1, 1])))
    assert seen == ["add", "mul", "mul", "view", "permute", "reduce"]


def test_generic_subclass_results_are_plain_generic():
    t = Tensor(PlainGeneric([1.0, 2.0]), 0, L([2], [1]))
    y = sw.add(t, t)
    assert type(y.carrier) is Generic and logical(y) == [2.0, 4.0]
    with pytest.raises(NotImplementedError):
        t.carrier.new_like([1])


def test_host_dispatch_tags_are_vec_independent():
    a = vec([1.0], "CPU")
    b = vec([1.0], "Generic")
    with pytest.raises(TypeError, match="^Tensor backing carriers must match$"):
        a + b
