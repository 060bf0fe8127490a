"""The Operation base (reference §11.1, §11.3, §11.4, §4.2): construction,
Python-defined operations, forward/backward rules, ctx, store_inputs,
lowered execution, and the exported native classes."""

import gc
import weakref

import pytest
import strideweave as sw
from helpers_ops import L, build, logical, ones_like
from strideweave import (
    CPU,
    DType,
    Generic,
    GenericReLUOperation,
    Node,
    Operation,
    Tensor,
    Tree,
)
from strideweave.carriers import cpu, generic, operation_helpers, shared_ops
from strideweave.carriers.cpu.ops import _CPUAddOperation
from strideweave.carriers.operation_helpers import execute_lowered_operation

GENERIC_CLASSES = [
    "GenericAddOperation",
    "GenericSubOperation",
    "GenericScalarMulOperation",
    "GenericElementwiseMulOperation",
    "GenericDivOperation",
    "GenericPowOperation",
    "GenericExpOperation",
    "GenericReLUOperation",
    "GenericSigmoidOperation",
    "GenericTanhOperation",
    "GenericGELUOperation",
    "GenericSiLUOperation",
    "GenericSoftplusOperation",
    "GenericELUOperation",
    "GenericLeakyReLUOperation",
    "GenericReduceSumOperation",
    "GenericMatmulOperation",
]
SHARED_CLASSES = ["GenericViewOperation", "PermuteOperation", "RearrangeOperation"]


def vec(values, kind="Generic", dtype=None):
    return build(kind, L([len(values)], [1]), 0, lambda p: values[p], dtype)


class Scale(Operation):
    """x * k in Python, with its backward."""

    def _forward(self, x, k):
        self.ctx["k"] = k
        return Tensor(x.carrier.new_like([x[i] * k for i in range(x.size())]), 0, x.layout)

    def backward(self, gradient):
        return [gradient * self.ctx["k"]]


class Plus(Operation):
    def _forward(self, a, b):
        return sw.add(a, b)

    def backward(self, gradient):
        return (gradient, gradient)


# ------------------------------------------------------------------ basics


def test_base_construction_and_identity():
    op = Operation()
    assert isinstance(op, Operation)
    assert op.ctx == {} and op.ctx is op.ctx
    op.ctx["a"] = 1
    assert op.ctx == {"a": 1}
    assert op.inputs() == () and op.input_versions() == ()
    assert op._operation_name is None and op._dispatch_carrier_class is None
    assert op == op and op != Operation() and hash(op) == hash(op)
    with pytest.raises(TypeError):
        Operation(1)
    with pytest.raises(AttributeError):
        op.ctx = {}
    with pytest.raises(AttributeError):
        op._operation_name = "x"
    with pytest.raises(AttributeError):
        op._dispatch_carrier_class = CPU
    assert Operation.__module__ == "strideweave.carriers.operation_helpers"
    assert operation_helpers.Operation is sw.Operation


def test_missing_hooks():
    x = vec([1.0])
    with pytest.raises(TypeError, match=r"^Operation\._forward must be implemented$"):
        Operation()._forward()
    with pytest.raises(TypeError, match=r"^Operation\._forward must be implemented$"):
        Operation().forward(x)

    class NoForward(Operation):
        pass

    with pytest.raises(TypeError, match=r"^Operation\._forward must be implemented$"):
        NoForward().forward(x)
    with pytest.raises(TypeError, match=r"^Operation\._forward must be implemented$"):
        NoForward()._execute_lowered(x)
    with pytest.raises(
        RuntimeError, match=r'^Tried to call pure virtual function "Operation::backward"$'
    ):
        Operation().backward(x)
    with pytest.raises(
        RuntimeError, match=r'^Tried to call pure virtual function "Operation::backward"$'
    ):
        NoForward().backward(x)


def test_subclass_state_and_init():
    class WithInit(Scale):
        def __init__(self, k):
            super().__init__()
            self.k = k

    op = WithInit(3)
    assert op.k == 3 and op.__dict__ == {"k": 3}
    x = vec([1.0, 2.0])
    assert logical(op.forward(x, op.k)) == [3.0, 6.0]
    r = weakref.ref(op)
    del op
    gc.collect()
    assert r() is None


def test_forward_is_positional_only():
    with pytest.raises(TypeError):
        Scale().forward(x=vec([1.0]), k=2)
    with pytest.raises(TypeError):
        GenericReLUOperation().forward(tensor=vec([1.0]))


def test_forward_must_return_a_tensor():
    class Bad(Operation):
        def _forward(self, *inputs):
            return 5

    with pytest.raises(TypeError, match=r"^Operation\._forward must return a Tensor$"):
        Bad().forward(vec([1.0]))
    with pytest.raises(TypeError, match=r"^Operation\._forward must return a Tensor$"):
        Bad()._execute_lowered(vec([1.0]))
    with pytest.raises(TypeError, match=r"^Operation\._forward must return a Tensor$"):
        execute_lowered_operation(Bad(), vec([1.0]))


def test_forward_exceptions_propagate():
    class Boom(Operation):
        def _forward(self, x):
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        Boom().forward(vec([1.0]))


# ------------------------------------------------------ forward recording


def test_python_forward_records_context_and_inputs():
    x = vec([1.0, 2.0])
    op = Scale()
    y = op.forward(x, 3)
    assert logical(y) == [3.0, 6.0]
    assert y.autograd_ctx is op
    assert op.inputs() == (x,) and op.inputs()[0] is x
    assert op.input_versions() == (0,)
    assert op.ctx == {"k": 3}


def test_python_forward_receives_original_arguments():
    seen = []

    class Spy(Operation):
        def _forward(self, *inputs):
            seen.append(inputs)
            return inputs[0]

    x = vec([1.0])
    marker = object()
    key = (slice(1, 2), [3])
    Spy().forward(x, 2, 2.5, True, None, marker, key, Tree(1))
    (args,) = seen
    assert args[0] is x and args[5] is marker and args[6] is key
    assert args[1:5] == (2, 2.5, True, None) and type(args[3]) is bool
    assert type(args[7]) is Tree


def test_result_that_is_an_input_stays_a_leaf():
    class Identity(Operation):
        def _forward(self, x):
            return x

    x = vec([1.0])
    assert Identity().forward(x) is x
    assert x.autograd_ctx is None


def test_store_rules():
    x = vec([1.0])
    i = vec([1], "CPU", DType.Int32)
    a = vec([1], dtype=DType.Any)
    # No differentiable input: nothing saved, no context.
    op = Scale()
    y = op.forward(a, 2)
    assert op.inputs() == () and y.autograd_ctx is None
    # Mixed Any + Floating: both saved, Floating result gets the context.
    op = Plus()
    y = op.forward(a, x)
    assert op.inputs() == (a, x) and y.autograd_ctx is op
    # Non-differentiable result: context cleared, inputs cleared.
    op = GenericReLUOperation()
    op2 = Scale()
    r = op2.forward(x, 2)
    assert op2.inputs() == (x,)

    class ToInt(Operation):
        def _forward(self, x):
            return i

    op3 = ToInt()
    assert op3.forward(x) is i and op3.inputs() == () and i.autograd_ctx is None
    # Grad mode off: nothing saved.
    with sw.no_grad():
        r = op2.forward(x, 2)
    assert op2.inputs() == () and r.autograd_ctx is None
    del op, r


def test_forward_twice_overwrites_state():
    x, z = vec([1.0]), vec([2.0])
    op = Scale()
    y1 = op.forward(x, 2)
    y2 = op.forward(z, 3)
    assert op.inputs() == (z,) and op.ctx["k"] == 3
    assert y1.autograd_ctx is op and y2.autograd_ctx is op


def test_non_tensor_arguments_are_not_saved():
    x = vec([1.0])
    op = Scale()
    op.forward(x, 2)
    assert op.inputs() == (x,)
    p = sw.PermuteOperation()
    m = build("Generic", L([2, 3], [1, 2]), 0, float)
    p.forward(m, 1, 0)
    assert p.inputs() == (m,)


# ------------------------------------------------------ lowered execution


def test_execute_lowered_records_nothing():
    x = vec([1.0, 2.0])
    op = Scale()
    y = op._execute_lowered(x, 2)
    assert logical(y) == [2.0, 4.0] and y.autograd_ctx is None and op.inputs() == ()
    op.forward(x, 2)
    versions = op.input_versions()
    op._execute_lowered(vec([5.0]), 2)
    assert op.inputs() == (x,) and op.input_versions() == versions
    native = sw.GenericExpOperation()
    y = native._execute_lowered(x)
    assert y.autograd_ctx is None and native.inputs() == ()


def test_execute_lowered_operation_is_sealed():
    calls = []

    class Overriding(Scale):
        def _execute_lowered(self, *inputs):
            calls.append(inputs)
            return inputs[0]

    x = vec([1.0])
    op = Overriding()
    assert op._execute_lowered(x, 2) is x and calls
    y = execute_lowered_operation(op, x, 2)
    assert y is not x and logical(y) == [2.0] and len(calls) == 1
    with pytest.raises(TypeError):
        execute_lowered_operation("not an op", x)
    assert logical(execute_lowered_operation(GenericReLUOperation(), vec([-1.0]))) == [0]


# -------------------------------------------------------------- backward


def test_python_backward_through_the_engine():
    x = vec([1.0, 2.0])
    y = Scale().forward(x, 3)
    y.backward(ones_like(y))
    assert logical(x.grad) == [3.0, 3.0]


def test_backward_result_validation():
    class WrongCount(Scale):
        def backward(self, gradient):
            return [gradient, gradient]

    class NotSequence(Scale):
        def backward(self, gradient):
            return 5

    class NotTensor(Scale):
        def backward(self, gradient):
            return ["x"]

    class NoneGrad(Scale):
        def backward(self, gradient):
            return [None]

    x = vec([1.0])
    y = WrongCount().forward(x, 2)
    with pytest.raises(ValueError, match="^Operation backward returned wrong number of gradients$"):
        y.backward()
    with pytest.raises(TypeError):
        NotSequence().forward(x, 2).backward()
    with pytest.raises(TypeError, match="^Tensor.backward requires a Tensor gradient$"):
        NotTensor().forward(x, 2).backward()
    NoneGrad().forward(x, 2).backward()
    assert x.grad is None


def test_backward_gradient_entries_for_non_differentiable_inputs_are_ignored():
    class Mixed(Operation):
        def _forward(self, a, b):
            return Tensor(b.carrier.new_like([a[0] + b[0]]), 0, b.layout)

        def backward(self, gradient):
            return ["ignored", gradient]

    a = vec([1], dtype=DType.Any)
    b = vec([2.0])
    Mixed().forward(a, b).backward()
    assert logical(b.grad) == [1.0]


def test_backward_layout_mismatch():
    class WrongLayout(Scale):
        def backward(self, gradient):
            return [vec([1.0, 2.0])]

    with pytest.raises(ValueError, match="^Tensor gradient layout must match tensor layout$"):
        WrongLayout().forward(vec([1.0]), 2).backward()


def test_native_backward_direct():
    x = vec([1.0, -2.0])
    op = sw.GenericReLUOperation()
    y = op.forward(x)
    (gx,) = op.backward(ones_like(y))
    assert logical(gx) == [1.0, 0.0]
    with pytest.raises(TypeError, match="^gradient must be a Tensor$"):
        op.backward(5)
    with pytest.raises(RuntimeError):
        sw.GenericReLUOperation().backward(ones_like(y))
    a, b = vec([2.0]), vec([3.0])
    op = sw.GenericDivOperation()
    y = op.forward(a, b)
    ga, gb = op.backward(ones_like(y))
    assert ga[0] == pytest.approx(1 / 3) and gb[0] == pytest.approx(-2 / 9)


def test_store_inputs():
    x, z = vec([1.0]), vec([2.0])
    op = Scale()
    op.forward(x, 2)
    x[0] = 5.0
    op.store_inputs(z, x)
    assert op.inputs() == (z, x)
    assert op.input_versions()[0] == 0  # versions are kept, not re-read
    with pytest.raises(TypeError):
        op.store_inputs(1)
    op.store_inputs()
    assert op.inputs() == ()


def test_validate_input_versions():
    x = vec([1.0])
    op = Scale()
    op.forward(x, 2)
    op.validate_input_versions()
    x[0] = 2.0
    with pytest.raises(
        RuntimeError,
        match=r"^A tensor needed for gradient computation was modified in-place: "
        r"expected version 0, got version 1$",
    ):
        op.validate_input_versions()


# ---------------------------------------------------------- native classes


@pytest.mark.parametrize("name", GENERIC_CLASSES)
def test_generic_classes(name):
    cls = getattr(sw, name)
    assert cls is getattr(generic.ops, name) and cls.__name__ == name
    assert cls.__module__ == "strideweave.carriers.generic.ops"
    assert issubclass(cls, Operation)
    op = cls()
    assert type(op) is cls and op._operation_name is None and op.ctx == {}
    assert cls.__doc__ and "Examples:" in cls.__doc__


@pytest.mark.parametrize("name", SHARED_CLASSES)
def test_shared_classes(name):
    cls = getattr(sw, name)
    assert cls is getattr(shared_ops, name) and cls.__name__ == name
    assert cls.__module__ == "strideweave.carriers.shared_ops"
    assert type(cls()) is cls
    opname = {"GenericViewOperation": "view", "PermuteOperation": "permute"}.get(name, "rearrange")
    assert type(CPU(1).dispatch_op(opname)) is cls
    assert type(Generic([]).dispatch_op(opname)) is cls


@pytest.mark.parametrize("name", cpu.ops.__all__)
def test_cpu_classes(name):
    cls = getattr(cpu.ops, name)
    assert not hasattr(sw, name)
    assert issubclass(cls, Operation) and cls.__name__ == name
    op = cls()
    assert type(op) is cls and op._operation_name is None


def test_native_classes_round_trip_through_the_library():
    x = vec([1.0, 2.0])
    y = sw.relu(x)
    op = y.autograd_ctx
    assert type(op) is GenericReLUOperation
    assert y.autograd_ctx is op  # one object per operation (peer)
    c = vec([1.0], "CPU")
    assert type(sw.add(c, c).autograd_ctx) is _CPUAddOperation


def test_subclass_of_native_class_keeps_native_computation():
    class MyReLU(GenericReLUOperation):
        pass

    op = MyReLU()
    y = op.forward(vec([-1.0, 1.0]))
    assert logical(y) == [0, 1.0] and y.autograd_ctx is op and type(op) is MyReLU


def test_native_op_arity_errors():
    x = vec([1.0], "CPU")
    with pytest.raises(TypeError, match="^CPU add requires lhs and rhs tensors$"):
        _CPUAddOperation().forward(x)
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        sw.GenericAddOperation().forward(vec([1.0]))
    with pytest.raises(TypeError, match="^lhs must be backed by a CPU carrier$"):
        _CPUAddOperation().forward(vec([1.0]), vec([1.0]))


# ---------------------------------------------------------------- op.ctx


def test_ctx_values():
    x = vec([0.0, 1.0])
    assert sw.sigmoid(x).autograd_ctx.ctx["saved_values"] == [0.5, sw.sigmoid(x)[1]]
    assert sw.exp(x).autograd_ctx.ctx["saved_values"] == logical(sw.exp(x))
    assert sw.tanh(x).autograd_ctx.ctx["saved_values"] == logical(sw.tanh(x))
    assert sw.silu(x).autograd_ctx.ctx["saved_values"] == [0.5, sw.sigmoid(x)[1]]
    for name in ("relu", "gelu", "softplus", "elu", "leaky_relu"):
        assert getattr(sw, name)(x).autograd_ctx.ctx["saved_values"] == [None, None]
    c = vec([0.0, 1.0], "CPU")
    assert sw.sigmoid(c).autograd_ctx.ctx == {}
    assert sw.mul(x, 2).autograd_ctx.ctx == {"scalar": 2}
    assert sw.mul(c, 0.1).autograd_ctx.ctx == {"scalar": 0.10000000149011612}
    assert sw.pow(x, 2).autograd_ctx.ctx == {"exponent": 2}
    assert sw.pow(c, 2).autograd_ctx.ctx == {"exponent": 2.0}
    assert sw.add(x, x).autograd_ctx.ctx == {}
    # A directly used operation fills its ctx whether or not it records.
    op = sw.GenericScalarMulOperation()
    with sw.no_grad():
        op.forward(x, 4)
    assert op.ctx == {"scalar": 4}
    op = sw.RearrangeOperation()
    m = build("Generic", L([2, 3], [1, 2]), 0, float)
    r = op._forward(m, Tree(Node.id(1), Node.id(0)))
    assert op.ctx["output_layout"] is r.layout and op.ctx["selection"] == Tree(1, 1)


def test_ctx_survives_the_python_object():
    x = vec([1.0])
    y = sw.mul(x, 2)
    op_id = id(y.autograd_ctx)
    gc.collect()
    assert id(y.autograd_ctx) == op_id and y.autograd_ctx.ctx == {"scalar": 2}


def test_graph_objects_are_collected():
    x = vec([1.0])
    y = Scale().forward(x, 2)
    op = weakref.ref(y.autograd_ctx)
    z = weakref.ref(y)
    del y
    gc.collect()
    assert op() is None and z() is None


def test_dispatch_op_class_check():
    with pytest.raises(TypeError):
        Generic.dispatch_op("relu")
    with pytest.raises(TypeError):
        CPU.dispatch_op("relu")
    with pytest.raises(TypeError):
        sw.Carrier.dispatch_op("relu")
