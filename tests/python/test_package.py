"""Package structure: import paths, object identity, names and docstrings."""

import doctest
import inspect
import sys
from collections.abc import Sequence

import pytest
import strideweave
import strideweave.carriers
import strideweave.carriers.base
import strideweave.carriers.block_device
import strideweave.carriers.block_device.carrier
import strideweave.carriers.compound_dtype
import strideweave.carriers.cpu
import strideweave.carriers.cpu.carrier
import strideweave.carriers.cpu.ops
import strideweave.carriers.dtype
import strideweave.carriers.evictable
import strideweave.carriers.file_backed
import strideweave.carriers.file_backed.carrier
import strideweave.carriers.generic
import strideweave.carriers.generic.carrier
import strideweave.carriers.generic.ops
import strideweave.carriers.move
import strideweave.carriers.operation_helpers
import strideweave.carriers.shared_ops
import strideweave.core
import strideweave.core._representation
import strideweave.core.layout
import strideweave.friendly
import strideweave.functional
import strideweave.layout
import strideweave.module
import strideweave.nn
import strideweave.nn.init
import strideweave.operation
import strideweave.profiling
import strideweave.tensor
from strideweave import _native

LAYOUT_NAMES = ["Layout", "Node", "Shape", "Stride", "Tiler", "Tree"]
CARRIER_NAMES = [
    "BlockDevice",
    "BlockDeviceCarrier",
    "CPU",
    "Carrier",
    "DType",
    "Evictable",
    "EvictableOperation",
    "FileBacked",
    "Generic",
    "OpenCL",
]
# The reference's core order, restricted to the names that exist so far.
CORE_NAMES = [
    "CPU",
    "Carrier",
    "DType",
    "Evictable",
    "FileBacked",
    "Generic",
    "Layout",
    "Module",
    "Node",
    "Parameter",
    "Shape",
    "Stride",
    "Tensor",
    "Tiler",
    "Tree",
]
# The reference's sorted operation names, restricted to those that exist so
# far (moves and the profiler come with later issues).
OPERATION_NAMES = [
    "BlockDeviceToCpuMoveOperation",
    "BoundOperationCall",
    "CpuToBlockDeviceMoveOperation",
    "CpuToFileBackedMoveOperation",
    "ElementwiseMoveOperation",
    "EvictableOperation",
    "FileBackedToCpuMoveOperation",
    "GenericAddOperation",
    "GenericDivOperation",
    "GenericELUOperation",
    "GenericElementwiseMulOperation",
    "GenericExpOperation",
    "GenericGELUOperation",
    "GenericLeakyReLUOperation",
    "GenericMatmulOperation",
    "GenericPowOperation",
    "GenericReLUOperation",
    "GenericReduceSumOperation",
    "GenericScalarMulOperation",
    "GenericSiLUOperation",
    "GenericSigmoidOperation",
    "GenericSoftplusOperation",
    "GenericSubOperation",
    "GenericTanhOperation",
    "GenericViewOperation",
    "MoveOperation",
    "NON_DIFFERENTIABLE",
    "OperandKind",
    "OperandSpec",
    "Operation",
    "OperationCall",
    "OperationDefinition",
    "OperationPlan",
    "OperationSchema",
    "OptionSpec",
    "PermuteOperation",
    "Profiler",
    "ProfilerAggregate",
    "ProfilerEvent",
    "ProviderContractError",
    "REQUIRED",
    "RearrangeOperation",
    "ResolvedInvocation",
    "ResultSpec",
    "VJPContext",
    "add",
    "define_operation",
    "div",
    "einsum",
    "elementwise_mul",
    "elu",
    "exp",
    "gelu",
    "is_grad_enabled",
    "leaky_relu",
    "matmul",
    "move",
    "mul",
    "neg",
    "no_grad",
    "permute",
    "pow",
    "profile",
    "rearrange",
    "reduce",
    "relu",
    "set_grad_enabled",
    "sigmoid",
    "silu",
    "softplus",
    "sub",
    "tanh",
    "view",
]
# strideweave.operation exports these, the top level does not list them.
NOT_TOP_LEVEL = [
    "BoundOperationCall",
    "OperationCall",
    "OperationPlan",
    "ResolvedInvocation",
    "VJPContext",
]
# name -> (defining module, the modules that re-export it)
HOMES = {
    "Carrier": ("strideweave.carriers.base", [strideweave.carriers]),
    "DType": ("strideweave.carriers.dtype", [strideweave.carriers]),
    "CPU": (
        "strideweave.carriers.cpu.carrier",
        [strideweave.carriers, strideweave.carriers.cpu],
    ),
    "Generic": (
        "strideweave.carriers.generic.carrier",
        [strideweave.carriers, strideweave.carriers.generic],
    ),
    "FileBacked": (
        "strideweave.carriers.file_backed.carrier",
        [strideweave.carriers, strideweave.carriers.file_backed],
    ),
    "Tensor": ("strideweave.tensor", []),
}


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_same_object_across_import_paths(name):
    obj = getattr(strideweave, name)
    assert obj is getattr(strideweave.layout, name)
    assert obj is getattr(strideweave.core.layout, name)


def test_native_types_are_the_public_ones():
    assert _native.Layout is strideweave.Layout
    assert _native.Shape is strideweave.Shape
    assert _native.Stride is strideweave.Stride
    for name in ("Carrier", "CPU", "Generic", "FileBacked", "Tensor"):
        assert getattr(_native, name) is getattr(strideweave, name)


@pytest.mark.parametrize("name", sorted(HOMES))
def test_carrier_and_tensor_homes(name):
    home, reexports = HOMES[name]
    obj = getattr(strideweave, name)
    module = sys.modules[home]
    assert getattr(module, name) is obj
    assert module.__all__ == [name]
    assert module.__doc__
    for other in reexports:
        assert getattr(other, name) is obj
    assert obj.__module__ == home
    assert obj.__qualname__ == name


@pytest.mark.parametrize("name", ["BlockDevice", "BlockDeviceCarrier"])
def test_block_device_homes(name):
    obj = getattr(strideweave, name)
    module = sys.modules["strideweave.carriers.block_device.carrier"]
    assert getattr(module, name) is obj is getattr(strideweave.carriers, name)
    assert getattr(strideweave.carriers.block_device, name) is obj
    assert getattr(_native, name) is obj
    assert module.__all__ == ["BlockDevice", "BlockDeviceCarrier"]
    assert module.__doc__
    assert obj.__module__ == "strideweave.carriers.block_device.carrier"
    assert obj.__qualname__ == name
    assert name not in strideweave.__all__


@pytest.mark.parametrize("name", ["Evictable", "EvictableOperation"])
def test_evictable_homes(name):
    obj = getattr(strideweave, name)
    module = strideweave.carriers.evictable
    assert getattr(module, name) is obj is getattr(strideweave.carriers, name)
    assert getattr(_native, name) is obj
    assert module.__all__ == ["Evictable", "EvictableOperation"]
    assert module.__doc__
    assert obj.__module__ == "strideweave.carriers.evictable"
    assert obj.__qualname__ == name
    assert strideweave.operation.EvictableOperation is strideweave.EvictableOperation


@pytest.mark.parametrize("name", ["Layout", "Node", "Shape", "Stride", "Tree"])
def test_module_of_public_classes(name):
    assert getattr(strideweave, name).__module__ == "strideweave.core.layout"
    assert getattr(strideweave, name).__qualname__ == name


def test_all_lists():
    assert strideweave.__all__ == CORE_NAMES + [
        n for n in OPERATION_NAMES if n not in NOT_TOP_LEVEL
    ]
    assert strideweave.operation.__all__ == OPERATION_NAMES == sorted(OPERATION_NAMES)
    assert strideweave.carriers.__all__ == CARRIER_NAMES
    assert strideweave.layout.__all__ == LAYOUT_NAMES
    assert strideweave.core.__all__ == []
    for name in strideweave.__all__:
        assert hasattr(strideweave, name)


def test_version_and_docstrings():
    assert strideweave.__version__ == "0.1.0"
    assert isinstance(_native.c_version, str) and _native.c_version.count(".") == 2
    for module in (strideweave, strideweave.layout, strideweave.core, strideweave.core.layout):
        assert module.__doc__


def test_tiler_alias():
    assert strideweave.Tiler == Sequence[strideweave.Layout]


def _public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if callable(member) or isinstance(member, property) or inspect.isgetsetdescriptor(member):
            yield name, member


def test_public_members_are_found():
    names = {name for name, _ in _public_members(strideweave.Layout)}
    assert {"index", "compose", "size", "shape", "empty", "get_index"} <= names
    assert len(names) >= 43
    assert {name for name, _ in _public_members(strideweave.Node)} == {"id"}


@pytest.mark.parametrize(
    "cls_name",
    [
        "Layout",
        "Shape",
        "Stride",
        "Tree",
        "Node",
        "Carrier",
        "CPU",
        "Generic",
        "FileBacked",
        "Evictable",
        "EvictableOperation",
        "DType",
        "Tensor",
        "Operation",
        "GenericAddOperation",
        "GenericReduceSumOperation",
        "GenericViewOperation",
        "PermuteOperation",
        "RearrangeOperation",
        "Module",
        "Parameter",
        "MoveOperation",
        "ElementwiseMoveOperation",
        "CpuToFileBackedMoveOperation",
        "FileBackedToCpuMoveOperation",
        "BlockDevice",
        "BlockDeviceCarrier",
        "CpuToBlockDeviceMoveOperation",
        "BlockDeviceToCpuMoveOperation",
        "Profiler",
        "ProfilerEvent",
        "ProfilerAggregate",
    ],
)
def test_public_names_have_structured_docstrings(cls_name):
    cls = getattr(strideweave, cls_name)
    for text in (cls.__doc__,):
        assert text and "Examples:" in text
    for name, member in _public_members(cls):
        doc = inspect.getdoc(getattr(cls, name)) if not isinstance(member, property) else None
        doc = doc or member.__doc__
        assert doc, f"{cls_name}.{name} has no docstring"
        assert "Returns:" in doc, f"{cls_name}.{name} docstring lacks Returns"
        assert "Examples:" in doc, f"{cls_name}.{name} docstring lacks Examples"
        try:
            params = inspect.signature(getattr(cls, name)).parameters
        except (TypeError, ValueError):
            params = {}
        named = [p for p in params if p not in ("self", "cls")]
        if named:
            assert "Args:" in doc, f"{cls_name}.{name} docstring lacks Args"


def test_docstring_examples_run():
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = []
    for module in (strideweave, strideweave.core.layout):
        tests += finder.find(module, globs=vars(strideweave.core.layout).copy())
    for module in (
        strideweave.carriers,
        strideweave.carriers.base,
        strideweave.carriers.dtype,
        strideweave.carriers.compound_dtype,
        strideweave.core._representation,
        strideweave.carriers.cpu.carrier,
        strideweave.carriers.generic.carrier,
        strideweave.carriers.file_backed.carrier,
        strideweave.carriers.block_device.carrier,
        strideweave.carriers.evictable,
        strideweave.tensor,
        strideweave.functional,
        strideweave.operation,
        strideweave.carriers.operation_helpers,
        strideweave.carriers.shared_ops,
        strideweave.carriers.generic.ops,
        strideweave.carriers.cpu.ops,
        strideweave.carriers.move,
        strideweave._native,
        strideweave.core.module,
        strideweave.friendly,
        strideweave.nn,
        strideweave.nn.init,
        strideweave.profiling,
    ):
        tests += finder.find(module, globs=vars(strideweave).copy())
    examples = 0
    for test in tests:
        examples += len(test.examples)
        runner.run(test)
    assert examples > 150
    assert runner.failures == 0


def test_stubs_carry_the_runtime_docstrings():
    # Editors read the stubs: tools/stub_docs.py copies every runtime
    # docstring into them, and this keeps the copies current.
    import importlib.util
    from pathlib import Path

    tool = Path(__file__).resolve().parents[2] / "tools" / "stub_docs.py"
    if not tool.exists():
        pytest.skip("not a source checkout")
    spec = importlib.util.spec_from_file_location("stub_docs", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
