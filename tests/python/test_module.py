"""Module and Parameter (reference §14): construction, naming, registration,
traversal order and deduplication."""

import pytest
import strideweave as sw
import strideweave.core.module
import strideweave.module


def L(shape, stride):
    return sw.Layout(sw.Shape(shape), sw.Stride(stride))


def param(name=None):
    return sw.Parameter(sw.CPU(2), 0, L([2, 1], [1, 2]), name=name)


# ------------------------------------------------------------------ paths


def test_import_paths_and_identity():
    assert sw.Module is strideweave.module.Module is strideweave.core.module.Module
    assert sw.Parameter is strideweave.module.Parameter is strideweave.core.module.Parameter
    assert strideweave.module.__all__ == ["Module", "Parameter"]
    assert strideweave.core.module.__all__ == ["Module", "Parameter"]
    assert sw.Module.__module__ == "strideweave.core.module"
    assert sw.__all__.index("Module") == sw.__all__.index("Layout") + 1
    assert sw.__all__.index("Parameter") == sw.__all__.index("Node") + 1


def test_nn_and_friendly_are_not_reexported():
    for name in ("nn", "friendly", "Linear", "SGD", "tensor", "zeros", "column_major"):
        assert name not in sw.__all__
    for name in ("Linear", "SGD", "MSELoss", "column_major", "zeros", "item"):
        assert not hasattr(sw, name)


# -------------------------------------------------------------- Parameter


def test_parameter_from_carrier():
    carrier = sw.CPU(6)
    layout = L([2, 3], [1, 2])
    p = sw.Parameter(carrier, 1 - 1, layout, name="w")
    assert isinstance(p, sw.Tensor)
    assert p.carrier is carrier and p.offset == 0 and p.layout == layout
    assert p.name == "w"
    assert p.grad is None and p.autograd_ctx is None


def test_parameter_from_tensor_aliases_storage_but_not_grad():
    carrier = sw.CPU(4)
    t = sw.Tensor(carrier, 1, L([3], [1]))
    sw.add(t, t).backward(sw.Tensor(sw.CPU(3), 0, L([3], [1])))
    assert t.grad is not None
    p = sw.Parameter(t)
    assert p.carrier is carrier and p.offset == 1 and p.layout == t.layout
    assert p.grad is None and p.autograd_ctx is None and p.name is None
    p[0] = 5.0
    assert t[0] == 5.0


def test_parameter_from_tensor_refuses_offset_or_layout():
    t = sw.Tensor(sw.CPU(2), 0, L([2], [1]))
    msg = "Parameter constructed from a Tensor does not accept offset or layout"
    with pytest.raises(TypeError, match=msg):
        sw.Parameter(t, 0)
    with pytest.raises(TypeError, match=msg):
        sw.Parameter(t, layout=t.layout)


def test_parameter_from_carrier_needs_offset_and_layout():
    msg = "Parameter requires offset and layout when constructed from a carrier"
    with pytest.raises(TypeError, match=msg):
        sw.Parameter(sw.CPU(2))
    with pytest.raises(TypeError, match=msg):
        sw.Parameter(sw.CPU(2), 0)
    with pytest.raises(TypeError, match=msg):
        sw.Parameter(sw.CPU(2), layout=L([2], [1]))


def test_parameter_carrier_errors_come_from_tensor():
    with pytest.raises(TypeError, match="carrier must be a Carrier"):
        sw.Parameter([1.0], 0, L([1], [1]))
    with pytest.raises(ValueError, match="Tensor storage exceeds carrier size"):
        sw.Parameter(sw.CPU(1), 0, L([2], [1]))


@pytest.mark.parametrize(
    ("name", "exc", "msg"),
    [
        (3, TypeError, "name must be a string or None"),
        (b"w", TypeError, "name must be a string or None"),
        ("", ValueError, "name must be non-empty"),
        ("a.b", ValueError, "name must not contain '.'"),
    ],
)
def test_parameter_name_validation(name, exc, msg):
    with pytest.raises(exc, match=msg):
        sw.Parameter(sw.CPU(1), 0, L([1], [1]), name=name)
    t = sw.Tensor(sw.CPU(1), 0, L([1], [1]))
    with pytest.raises(exc, match=msg):
        sw.Parameter(t, name=name)


def test_parameter_name_is_unchecked_later():
    p = param("w")
    p.name = "a.b"
    assert p.name == "a.b"


def test_operations_on_parameters_return_plain_tensors():
    p = param()
    out = p * 2.0
    assert type(out) is sw.Tensor
    out = sw.relu(p)
    assert type(out) is sw.Tensor


# ----------------------------------------------------------------- Module


def test_module_name_validation_on_construction_and_assignment():
    assert sw.Module().name is None
    assert sw.Module(name="enc").name == "enc"
    with pytest.raises(TypeError, match="name must be a string or None"):
        sw.Module(name=1)
    with pytest.raises(ValueError, match="name must be non-empty"):
        sw.Module(name="")
    m = sw.Module()
    with pytest.raises(ValueError, match="name must not contain '.'"):
        m.name = "a.b"
    assert m.name is None
    with pytest.raises(TypeError, match="name must be a string or None"):
        m.name = param()
    assert m.name is None and m.parameters() == ()
    m.name = "ok"
    assert m.name == "ok"


def test_module_name_is_keyword_only():
    with pytest.raises(TypeError):
        sw.Module("enc")


def test_forward_is_abstract_and_call_delegates():
    with pytest.raises(NotImplementedError, match="Module subclasses must implement forward"):
        sw.Module()(1)

    class Echo(sw.Module):
        def forward(self, *args, **kwargs):
            return args, kwargs

    assert Echo()(1, 2, k=3) == ((1, 2), {"k": 3})


def test_registration_rules():
    m = sw.Module()
    p, q = param(), param()
    child = sw.Module()
    m.weight = p
    m.child = child
    assert m.parameters() == (p,)
    assert m.modules() == (m, child)
    # Re-assigning switches registry.
    m.weight = sw.Module()
    assert m.parameters() == ()
    assert len(m.modules()) == 3
    m.child = q
    assert m.parameters() == (q,)
    assert m.modules() == (m, m.weight)
    # Plain tensors and None unregister.
    m.child = sw.Tensor(sw.CPU(1), 0, L([1], [1]))
    m.weight = None
    assert m.parameters() == () and m.modules() == (m,)
    assert m.weight is None and type(m.child) is sw.Tensor


def test_private_names_are_not_registered():
    m = sw.Module()
    m._hidden = param()
    m._sub = sw.Module()
    assert m.parameters() == () and m.modules() == (m,)
    assert isinstance(m._hidden, sw.Parameter)


def test_assignments_before_init_are_plain():
    class Early(sw.Module):
        def __init__(self):
            self.weight = param()
            super().__init__()
            self.bias = param()

    e = Early()
    assert e.parameters() == (e.bias,)
    assert isinstance(e.weight, sw.Parameter)


def test_delattr_unregisters():
    m = sw.Module()
    m.weight = param()
    m.child = sw.Module()
    del m.weight
    del m.child
    assert m.parameters() == () and m.modules() == (m,)
    assert not hasattr(m, "weight")
    with pytest.raises(AttributeError):
        del m.missing


def test_insertion_order_is_kept_on_reassignment():
    m = sw.Module()
    a, b, c = param(), param(), param()
    m.a = a
    m.b = b
    m.a = c
    assert [n for n, _ in m.get_named_parameters()] == ["a", "b"]
    assert m.parameters() == (c, b)


def test_modules_preorder_and_dedup():
    root, a, b, c = sw.Module(), sw.Module(), sw.Module(), sw.Module()
    root.a = a
    root.c = c
    a.b = b
    c.b = b  # shared
    c.again = a  # shared, and an ancestor of b
    assert root.modules() == (root, a, b, c)


def test_modules_handles_cycles():
    root, child = sw.Module(), sw.Module()
    root.child = child
    child.parent = root
    assert root.modules() == (root, child)
    assert child.modules() == (child, root)


def test_named_parameters_order_prefixes_and_names():
    root = sw.Module(name="root")
    p, q, r = param(), param(), param()
    root.weight = p
    root.child = sw.Module()
    root.child.weight = q
    root.child.grand = sw.Module()
    root.child.grand.bias = r
    root.last = param("z")
    assert [n for n, _ in root.get_named_parameters()] == [
        "weight",
        "z",
        "child.weight",
        "child.grand.bias",
    ]
    # Names are read at call time.
    root.child.name = "encoder"
    q.name = "kernel"
    named = root.get_named_parameters()
    assert named[:3] == (("weight", p), ("z", root.last), ("encoder.kernel", q))
    assert named[3] == ("encoder.grand.bias", r)
    assert root.parameters() == (p, root.last, q, r)


def test_reference_example():
    root = sw.Module()
    p, q = param(), param()
    root.weight = p
    root.child = sw.Module()
    root.child.weight = q
    assert root.get_named_parameters() == (("weight", p), ("child.weight", q))
    root.child.name = "encoder"
    q.name = "kernel"
    assert root.get_named_parameters()[1] == ("encoder.kernel", q)


def test_shared_parameters_and_modules_appear_once_at_first_path():
    root, a, b = sw.Module(), sw.Module(), sw.Module()
    shared = param()
    root.a = a
    root.b = b
    a.w = shared
    b.w = shared
    b.alias = a
    a.inner = sw.Module()
    b.inner_too = a.inner
    a.inner.v = param()
    named = root.get_named_parameters()
    assert [n for n, _ in named] == ["a.w", "a.inner.v"]
    root.own = shared
    assert [n for n, _ in root.get_named_parameters()] == ["own", "a.inner.v"]


def test_shared_module_path_is_the_depth_first_one():
    root, a, b = sw.Module(), sw.Module(), sw.Module()
    root.a = a
    root.b = b
    a.b = b
    b.w = param()
    assert [n for n, _ in root.get_named_parameters()] == ["a.b.w"]


def test_deep_chain_does_not_recurse():
    root = sw.Module()
    m = root
    for _ in range(3000):
        m.next = sw.Module()
        m = m.next
    m.w = param()
    assert len(root.modules()) == 3001
    name, _ = root.get_named_parameters()[0]
    assert name == "next." * 3000 + "w"
