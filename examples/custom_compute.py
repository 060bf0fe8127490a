"""A custom compute carrier in Python: operations through a kernel pack.

``Accelerator`` stores float32 values in a Python list and runs operations
through kernel patterns, registered as one KernelPack beside its
CarrierDefinition. The pack has two patterns for ``relu`` and two for a
user-defined operation ``demo.axpb`` (a*x + b):

- an "optimised" pattern of preference 10 that handles only compact,
  contiguous tensors (offset 0, stride 1) and returns ``Unsupported`` for
  any other layout;
- a general pattern that handles every layout.

The program shows the capabilities the class reports, which pattern ran for
a contiguous and for a strided tensor, autograd through both operations, and
the profiler's one event per dispatch.

Run: ``python examples/custom_compute.py``.
"""

import strideweave as sw
from strideweave.carriers.extension import (
    CarrierDefinition,
    KernelExecutionInterface,
    KernelPack,
    KernelPattern,
    KernelProvider,
    PreparedKernel,
    ProviderResult,
    StorageProvider,
    Unsupported,
)
from strideweave.carriers.operation_capability import OperationCapability
from strideweave.carriers.operation_policy import (
    Arithmetic,
    OperandPlan,
    OperandRole,
    OperationPlan,
    resolve_operation_plan,
)
from strideweave.operation_definition import (
    OperandKind,
    OperandSpec,
    OperationSchema,
    OptionSpec,
    ResolvedInvocation,
    ResultSpec,
    _operation_definition,
    define_operation,
)

F32 = sw.DType.Float32
ran = []  # which kernel ran, in order


class Accelerator(sw.Carrier):
    """Float32 values in a Python list, computed on by kernel patterns."""


STORAGE = StorageProvider(
    supports_dtype=lambda c, d: d == F32,
    physical_size=lambda c: len(c.values),
    allocate=lambda c, n: setattr(c, "values", [0.0] * n),
    release=lambda c: setattr(c, "values", []),
    read=lambda c, i: c.values[i],
    write=lambda c, i, v: c.values.__setitem__(i, float(v)),
)
INTERFACE = KernelExecutionInterface("accelerator-1")


# ------------------------------------------------------------ demo.axpb


def axpb_plan():
    return OperationPlan(
        "demo.axpb",
        (OperandPlan(OperandRole.TENSOR, F32, F32),),
        Arithmetic.BINARY32,
        None,
        None,
        F32,
    )


def axpb_resolve(call):
    (x,) = call.operands
    return ResolvedInvocation(call, axpb_plan(), (ResultSpec(F32, x.layout.shape, x.layout),))


def axpb_reference(inv):
    (x,) = inv.operands
    a, b = inv.call.options["a"], inv.call.options["b"]
    out = sw.Tensor(x.carrier.allocate_like(x.layout.cosize), 0, x.layout)
    for i in range(x.layout.size):
        out[i] = a * x[i] + b
    return out


def axpb_vjp(ctx, cotangents):
    (c,) = cotangents
    a = ctx.invocation.call.options["a"]
    g = sw.Tensor(c.carrier.allocate_like(c.layout.cosize), 0, c.layout)
    for i in range(c.layout.size):
        g[i] = a * c[i]
    return (g,)


AXPB = define_operation(
    "demo.axpb",
    OperationSchema(
        (OperandSpec("x", OperandKind.TENSOR, True),),
        (OptionSpec("a", 1.0), OptionSpec("b", 0.0)),
    ),
    axpb_resolve,
    axpb_reference,
    axpb_vjp,
)


# -------------------------------------------------------------- kernels


def contiguous(t):
    return t.offset == 0 and t.layout.cosize == t.layout.size


def fast_relu(inv, interface):
    x = inv.operands[0]
    if not contiguous(x):
        return Unsupported("needs a contiguous tensor")

    def submit():
        ran.append("relu-fast")
        out = Accelerator(len(x.carrier.values), dtype=F32)
        out.values[:] = [v if v > 0 else 0.0 for v in x.carrier.values]  # one bulk pass
        return ProviderResult([sw.Tensor(out, 0, inv.results[0].layout)])

    return PreparedKernel(interface, submit)


def general_relu(inv, interface):
    x = inv.operands[0]
    layout = inv.results[0].layout

    def submit():
        ran.append("relu-general")
        out = sw.Tensor(Accelerator(layout.cosize, dtype=F32), 0, layout)
        for i in range(layout.size):
            out[i] = max(x[i], 0.0)
        return ProviderResult([out])

    return PreparedKernel(interface, submit)


def fast_axpb(inv, interface):
    x = inv.operands[0]
    if not contiguous(x):
        return Unsupported("needs a contiguous tensor")
    a, b = inv.call.options["a"], inv.call.options["b"]

    def submit():
        ran.append("axpb-fast")
        out = Accelerator(len(x.carrier.values), dtype=F32)
        out.values[:] = [a * v + b for v in x.carrier.values]
        return ProviderResult([sw.Tensor(out, 0, inv.results[0].layout)])

    return PreparedKernel(interface, submit)


def general_axpb(inv, interface):
    def submit():
        ran.append("axpb-general")
        return ProviderResult([inv.definition.reference(inv)])

    return PreparedKernel(interface, submit)


RELU = _operation_definition("relu")
relu_plans = [OperationCapability.from_plan(resolve_operation_plan("relu", F32))]
axpb_plans = [OperationCapability.from_plan(axpb_plan())]

sw.register_carrier_definition(
    Accelerator, CarrierDefinition(STORAGE, kernels=KernelProvider(INTERFACE))
)
sw.register_kernel_pack(
    KernelPack(
        "demo",
        "1",
        Accelerator,
        INTERFACE,
        [
            KernelPattern(RELU, relu_plans, "relu-fast", fast_relu, preference=10),
            KernelPattern(RELU, relu_plans, "relu-general", general_relu),
            KernelPattern(AXPB, axpb_plans, "axpb-fast", fast_axpb, preference=10),
            KernelPattern(AXPB, axpb_plans, "axpb-general", general_axpb),
        ],
    )
)


def main() -> None:
    probe = Accelerator(1, dtype=F32)
    print(
        "supports relu:",
        probe.supports_operation_plan(resolve_operation_plan("relu", F32)),
        "axpb:",
        probe.supports_operation_plan(axpb_plan()),
        "exp:",
        probe.supports_operation_plan(resolve_operation_plan("exp", F32)),
    )
    x = sw.Tensor(
        Accelerator(6, dtype=F32).new_like([-2.0, -1.0, 0.5, 1.0, -3.0, 4.0]),
        0,
        sw.Layout.leaf(6, 1),
    )
    y = sw.relu(x)
    strided = sw.Tensor(x.carrier, 0, sw.Layout.leaf(3, 2))  # every other element
    z = AXPB(strided, a=3.0, b=1.0)
    print("ran:", ran)
    print("relu:", [y[i] for i in range(6)], "axpb:", [z[i] for i in range(3)])
    w = AXPB(y, a=2.0)
    w.backward(sw.Tensor(Accelerator(6, dtype=F32).new_like([1.0] * 6), 0, w.layout))
    print("gradient:", [x.grad[i] for i in range(6)], "on", type(x.grad.carrier).__name__)
    with sw.profile() as prof:
        sw.relu(x)
        AXPB(x)
    print("profiled:", [(e.name, e.carrier_type.__name__) for e in prof.events()])


if __name__ == "__main__":
    main()
