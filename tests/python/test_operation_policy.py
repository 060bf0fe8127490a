"""Operation plans (strideweave.carriers.operation_policy): the enums, the
dtype tables of every CPU and Generic operation, weak scalars, the
accumulator option, every resolution error, and the values' frozen,
hashable dataclass semantics."""

import dataclasses

import pytest
import strideweave as sw
from strideweave import _native
from strideweave.carriers import operation_policy as op
from strideweave.carriers.operation_policy import (
    Accumulation,
    Arithmetic,
    OperandPlan,
    OperandRole,
    OperationPlan,
    registered_operations,
    resolve_operation_plan,
)

D = sw.DType
F32, I32, FLT, ANY, BOOL = D.Float32, D.Int32, D.Floating, D.Any, D.Bool

FLOATING_UNARY = ["exp", "sigmoid", "tanh", "gelu", "silu", "softplus", "elu", "leaky_relu"]


def sentence(name, *args, **kw):
    return resolve_operation_plan(name, *args, **kw).describe()


def test_enums_follow_the_library():
    assert [m.name for m in Arithmetic] == [
        "BINARY32",
        "BINARY64",
        "INT32_EXACT",
        "INT32_EXACT_CHECKED",
        "HOST",
    ]
    assert tuple(m.value for m in Arithmetic) == _native._plan_names()["arithmetic"]
    assert [m.value for m in Accumulation] == ["floating", "exact_integer", "host"]
    assert tuple(m.value for m in Accumulation) == _native._plan_names()["accumulation"]
    assert OperandRole.TENSOR.value == "tensor"
    assert OperandRole.WEAK_SCALAR.value == "weak_scalar"
    assert tuple(m.value for m in OperandRole) == _native._plan_names()["role"]


def test_registered_operations_come_from_the_registry():
    specs = registered_operations()
    names = [s.name for s in specs]
    assert names == [entry[0] for entry in _native._plan_operations()]
    assert "reduce_sum" in names and "reduce" not in names
    for layout_op in ("view", "permute", "rearrange"):
        assert layout_op not in names
    for name in ("add", "sub", "elementwise_mul", "div", "mul", "pow", "relu", "matmul"):
        assert name in names
    for name in FLOATING_UNARY:
        assert name in names
    reduce = specs[names.index("reduce_sum")]
    assert reduce.dispatch_name == "reduce"
    assert reduce.operands == (("tensor", OperandRole.TENSOR),)
    mul = specs[names.index("mul")]
    assert mul.operands == (("tensor", OperandRole.TENSOR), ("scalar", OperandRole.WEAK_SCALAR))
    assert registered_operations() is specs


# ------------------------------------------------------------ CPU rows

BINARY_ROWS = [
    (
        (F32, F32),
        "tensor Float32->Float32, tensor Float32->Float32",
        "binary32",
        "Float32",
    ),
    ((F32, I32), "tensor Float32->Float32, tensor Int32->Float32", "binary32", "Float32"),
    ((I32, F32), "tensor Int32->Float32, tensor Float32->Float32", "binary32", "Float32"),
    ((I32, I32), "tensor Int32->Int32, tensor Int32->Int32", "int32_exact_checked", "Int32"),
    (
        (FLT, FLT),
        "tensor Floating->Floating, tensor Floating->Floating",
        "binary64",
        "Floating",
    ),
    ((ANY, FLT), "tensor Any->Floating, tensor Floating->Floating", "binary64", "Floating"),
    ((FLT, ANY), "tensor Floating->Floating, tensor Any->Floating", "binary64", "Floating"),
    ((ANY, ANY), "tensor Any->Any, tensor Any->Any", "host", "Any"),
]


@pytest.mark.parametrize("name", ["add", "sub", "elementwise_mul"])
@pytest.mark.parametrize(("dtypes", "operands", "compute", "output"), BINARY_ROWS)
def test_elementwise_binary(name, dtypes, operands, compute, output):
    assert sentence(name, *dtypes) == (
        f"{name} with operands ({operands}), {compute} compute, no accumulation, {output} output"
    )


@pytest.mark.parametrize("name", ["matmul", "batched_matmul"])
@pytest.mark.parametrize(("dtypes", "operands", "compute", "output"), BINARY_ROWS)
def test_contractions(name, dtypes, operands, compute, output):
    accumulation = {"binary32": "floating", "binary64": "floating"}.get(
        compute, "exact_integer" if output == "Int32" else "host"
    )
    assert sentence(name, *dtypes) == (
        f"{name} with operands ({operands}), {compute} compute, "
        f"{accumulation} accumulation in {output}, {output} output"
    )


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        (I32, I32, "tensor Int32->Float32, tensor Int32->Float32), binary32 compute, "),
        (F32, I32, "tensor Float32->Float32, tensor Int32->Float32), binary32 compute, "),
        (ANY, ANY, "tensor Any->Floating, tensor Any->Floating), binary64 compute, "),
    ],
)
def test_div_is_always_floating(a, b, want):
    out = "Float32" if a in (F32, I32) else "Floating"
    assert sentence("div", a, b) == (f"div with operands ({want}no accumulation, {out} output")


def test_reduce_sum():
    assert sentence("reduce_sum", F32) == (
        "reduce_sum with operands (tensor Float32->Float32), binary32 compute, "
        "floating accumulation in Float32, Float32 output"
    )
    assert sentence("reduce_sum", I32) == (
        "reduce_sum with operands (tensor Int32->Int32), int32_exact_checked compute, "
        "exact_integer accumulation in Int32, Int32 output"
    )
    assert sentence("reduce_sum", ANY) == (
        "reduce_sum with operands (tensor Any->Any), host compute, "
        "host accumulation in Any, Any output"
    )
    assert sentence("reduce_sum", FLT) == (
        "reduce_sum with operands (tensor Floating->Floating), binary64 compute, "
        "floating accumulation in Floating, Floating output"
    )


@pytest.mark.parametrize("name", FLOATING_UNARY)
def test_floating_unary(name):
    assert sentence(name, I32) == (
        f"{name} with operands (tensor Int32->Float32), binary32 compute, no accumulation, "
        "Float32 output"
    )
    assert sentence(name, F32) == (
        f"{name} with operands (tensor Float32->Float32), binary32 compute, no accumulation, "
        "Float32 output"
    )
    assert sentence(name, ANY) == (
        f"{name} with operands (tensor Any->Floating), binary64 compute, no accumulation, "
        "Floating output"
    )
    assert resolve_operation_plan(name, FLT).output is FLT


def test_relu_keeps_its_dtype():
    p = resolve_operation_plan("relu", I32)
    assert p.compute is Arithmetic.INT32_EXACT and p.output is I32
    assert p.accumulation is None and p.accumulator_dtype is None
    assert resolve_operation_plan("relu", F32).compute is Arithmetic.BINARY32
    assert resolve_operation_plan("relu", ANY).compute is Arithmetic.HOST
    assert resolve_operation_plan("relu", ANY).output is ANY
    assert resolve_operation_plan("relu", FLT).compute is Arithmetic.BINARY64


# --------------------------------------------------------- weak scalars


def scalar(p, i):
    o = p.operands[i]
    assert o.role is OperandRole.WEAK_SCALAR and o.dtype is None
    return o.convert_to


@pytest.mark.parametrize(
    ("tensor", "value", "out"),
    [
        (I32, 3, I32),
        (I32, -3, I32),
        (I32, True, F32),  # bool counts as non-integral
        (I32, 2.0, F32),
        (F32, 3, F32),
        (ANY, 3, ANY),
        (ANY, True, FLT),
        (ANY, 2.5, FLT),
        (FLT, 3, FLT),
    ],
)
def test_mul_by_a_scalar(tensor, value, out):
    p = resolve_operation_plan("mul", tensor, value)
    assert p.output is out and scalar(p, 1) is out
    assert p.operands[0] == OperandPlan(OperandRole.TENSOR, tensor, out)
    exact = {I32: Arithmetic.INT32_EXACT_CHECKED, ANY: Arithmetic.HOST}
    floating = {F32: Arithmetic.BINARY32, FLT: Arithmetic.BINARY64}
    assert p.compute is exact.get(out, floating.get(out))


def test_mul_takes_its_scalar_first():
    p = resolve_operation_plan("mul", 3, I32)
    assert [o.role for o in p.operands] == [OperandRole.WEAK_SCALAR, OperandRole.TENSOR]
    assert p.describe() == (
        "mul with operands (weak_scalar->Int32, tensor Int32->Int32), int32_exact_checked "
        "compute, no accumulation, Int32 output"
    )
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        resolve_operation_plan("mul", 3, 4)
    with pytest.raises(TypeError, match="^tensor must be a Tensor$"):
        resolve_operation_plan("pow", 3, I32)


@pytest.mark.parametrize(
    ("tensor", "exponent", "out"),
    [
        (I32, 3, I32),
        (I32, 0, I32),
        (I32, 2.0, I32),  # CPU reads the exponent as float32
        (I32, True, I32),
        (I32, 2**24 - 1, I32),
        (I32, -1, F32),
        (I32, 0.5, F32),
        (I32, float("inf"), F32),
        (I32, float("nan"), F32),
        (I32, 10**400, F32),  # beyond every double: not whole as float32
        (F32, 2, F32),
        (ANY, 3, ANY),
        (ANY, 0, ANY),
        (ANY, 10**400, ANY),
        (ANY, -1, FLT),  # Generic reads the exponent's type and sign
        (ANY, 2.0, FLT),
        (ANY, True, FLT),
        (FLT, 2, FLT),
    ],
)
def test_pow(tensor, exponent, out):
    p = resolve_operation_plan("pow", tensor, exponent)
    assert p.output is out and scalar(p, 1) is out


def test_scalars_that_are_not_numbers():
    with pytest.raises(TypeError, match="operand 1 must be a DType or a numerical scalar"):
        resolve_operation_plan("mul", F32, "3")
    with pytest.raises(TypeError, match="operand 1 must be a DType or a numerical scalar"):
        resolve_operation_plan("mul", F32, None)
    with pytest.raises(TypeError, match="operand 0 must be a DType or a numerical scalar"):
        resolve_operation_plan("relu", sw.CPU(1))
    from fractions import Fraction

    assert resolve_operation_plan("mul", ANY, Fraction(1, 2)).output is FLT


# --------------------------------------------------------- accumulator


def test_accumulator_option():
    same = resolve_operation_plan("reduce_sum", I32, accumulator_dtype=I32)
    assert same == resolve_operation_plan("reduce_sum", I32)
    assert resolve_operation_plan("reduce_sum", I32, accumulator_dtype=None) == same
    with pytest.raises(
        TypeError,
        match="^accumulator_dtype Float32 is not supported for this reduce_sum plan: "
        "it accumulates in Int32$",
    ):
        resolve_operation_plan("reduce_sum", I32, accumulator_dtype=F32)
    with pytest.raises(TypeError, match="accumulator_dtype Floating is not supported"):
        resolve_operation_plan("matmul", F32, F32, accumulator_dtype=FLT)
    with pytest.raises(
        TypeError, match="^unknown option 'accumulator_dtype': relu has no accumulation$"
    ):
        resolve_operation_plan("relu", I32, accumulator_dtype=I32)
    with pytest.raises(TypeError, match="unknown option 'accumulator_dtype'"):
        resolve_operation_plan("add", F32, F32, accumulator_dtype=F32)
    with pytest.raises(TypeError, match="accumulator_dtype must be a DType"):
        resolve_operation_plan("reduce_sum", I32, accumulator_dtype="Int32")


# --------------------------------------------------------------- errors


def test_resolution_errors():
    with pytest.raises(ValueError, match="^unknown operation 'nope'$"):
        resolve_operation_plan("nope", F32)
    with pytest.raises(ValueError, match="unknown operation 'reduce'"):
        resolve_operation_plan("reduce", F32)
    with pytest.raises(TypeError, match="operation name must be a str"):
        resolve_operation_plan(3, F32)
    for layout_op in ("view", "permute", "rearrange"):
        with pytest.raises(ValueError, match=f"^{layout_op} is a layout operation"):
            resolve_operation_plan(layout_op, F32)
    with pytest.raises(TypeError, match="^add takes 2 operands, got 1$"):
        resolve_operation_plan("add", F32)
    with pytest.raises(TypeError, match="^relu takes 1 operand, got 2$"):
        resolve_operation_plan("relu", F32, F32)
    with pytest.raises(TypeError, match="^relu takes 1 operand, got 0$"):
        resolve_operation_plan("relu")
    with pytest.raises(TypeError, match="^add takes 2 operands, got 4$"):
        resolve_operation_plan("add", F32, F32, F32, F32, F32)
    with pytest.raises(TypeError, match="^rhs must be a Tensor$"):
        resolve_operation_plan("add", F32, 2)
    with pytest.raises(TypeError, match="^exponent must be a numerical scalar$"):
        resolve_operation_plan("pow", F32, F32)
    with pytest.raises(TypeError, match="^scalar must be a numerical scalar$"):
        resolve_operation_plan("mul", F32, F32)
    with pytest.raises(TypeError, match="^lhs: CPU operations do not compute on Bool tensors$"):
        resolve_operation_plan("add", BOOL, F32)
    with pytest.raises(TypeError, match="^tensor: CPU operations do not compute on Bool tensors$"):
        resolve_operation_plan("reduce_sum", BOOL)
    with pytest.raises(
        TypeError,
        match=r"^add has no plan for Float32 and Floating operands: CPU dtypes \(Float32, "
        r"Int32\) and Generic dtypes \(Floating, Any\) do not mix$",
    ):
        resolve_operation_plan("add", F32, FLT)


# ------------------------------------------------------------- values


def test_plans_are_frozen_hashable_values():
    p = resolve_operation_plan("add", I32, I32)
    q = resolve_operation_plan("add", I32, I32)
    assert p == q and hash(p) == hash(q) and p is not q
    assert p != resolve_operation_plan("add", I32, F32)
    assert len({p, q, resolve_operation_plan("sub", I32, I32)}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.output = F32
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.operands[0].dtype = F32
    assert repr(p).startswith("OperationPlan(operation='add', operands=(OperandPlan(")
    assert "compute=<Arithmetic.INT32_EXACT_CHECKED: 'int32_exact_checked'>" in repr(p)
    assert p.operation == "add" and isinstance(p.operands, tuple)


def test_plan_construction_is_checked():
    o = OperandPlan(OperandRole.TENSOR, F32, F32)
    OperationPlan("relu", (o,), Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(ValueError, match="unknown operation 'nope'"):
        OperationPlan("nope", (o,), Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(TypeError, match="operation must be a str"):
        OperationPlan(1, (o,), Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(TypeError, match="operands must be a tuple of OperandPlan"):
        OperationPlan("relu", [o], Arithmetic.BINARY32, None, None, F32)
    with pytest.raises(TypeError, match="compute must be an Arithmetic"):
        OperationPlan("relu", (o,), "binary32", None, None, F32)
    with pytest.raises(TypeError, match="accumulation must be an Accumulation"):
        OperationPlan("relu", (o,), Arithmetic.BINARY32, "floating", None, F32)
    with pytest.raises(TypeError, match="accumulator_dtype must be a DType"):
        OperationPlan("relu", (o,), Arithmetic.BINARY32, None, "F32", F32)
    with pytest.raises(TypeError, match="output must be a DType"):
        OperationPlan("relu", (o,), Arithmetic.BINARY32, None, None, "F32")
    with pytest.raises(TypeError, match="role must be an OperandRole"):
        OperandPlan("tensor", F32, F32)
    with pytest.raises(TypeError, match="dtype must be a DType or None"):
        OperandPlan(OperandRole.TENSOR, "F32", F32)
    with pytest.raises(TypeError, match="convert_to must be a DType"):
        OperandPlan(OperandRole.TENSOR, F32, None)


def test_module_names():
    assert op.__all__ == sorted(op.__all__)
    for name in op.__all__:
        assert getattr(op, name).__doc__
