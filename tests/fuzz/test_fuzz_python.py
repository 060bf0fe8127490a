"""Fuzzing of the public Python API with random and adversarial inputs.

Every call here must either return or raise one of the documented
exception types (ALLOWED); anything else fails the test: another exception
type (SystemError from a binding that forgot to set one, AttributeError,
ZeroDivisionError from library code), and, under the AddressSanitizer and
UndefinedBehaviorSanitizer build that `make fuzz-python` runs this
against, any memory error or undefined behaviour, which aborts the run.

The inputs aim at the edges: extents and strides near 2**62..2**64,
negative and zero values, bool and float where ints are expected, deeply
nested tuples, keys of every shape, and random command strings. Work that
would be legitimately slow (a kernel over 2**40 broadcast elements) is
skipped by size, never the call that checks a size.

This suite is not part of the normal pytest run (pyproject's testpaths
names tests/python only). FUZZ_PY_EXAMPLES sets the examples per test.
"""

import array
import copy
import pickle

import strideweave as sw
from hypothesis import given
from hypothesis import strategies as st
from strideweave import CPU, Carrier, DType, Generic, Layout, Node, Shape, Stride, Tensor, Tree
from strideweave import einops as ein

ALLOWED = (
    ValueError,
    TypeError,
    IndexError,
    OverflowError,
    RuntimeError,
    NotImplementedError,
    MemoryError,
    KeyError,
)

# A Generic carrier computes with its Python values; their own arithmetic
# errors (0.0 ** -1 raises ZeroDivisionError) pass through unchanged.
ALLOWED_GENERIC_MATH = ALLOWED + (ArithmeticError,)


def call(fn, *args, allowed=ALLOWED, **kwargs):
    """fn(*args, **kwargs), or None when it raised an allowed exception."""
    try:
        return fn(*args, **kwargs)
    except allowed:
        return None


# ------------------------------------------------------------- strategies

EDGES = [
    0,
    1,
    2,
    3,
    -1,
    -2,
    2**31 - 1,
    2**31,
    2**32,
    2**61,
    2**62 - 1,
    2**62,
    2**62 + 1,
    2**63 - 2,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    2**100,
    -(2**100),
    7,
    1317624576693539401,  # 7 * 1317624576693539401 == 2**63 - 1
]

edge_ints = st.sampled_from(EDGES) | st.integers(2**62 - 64, 2**64 + 64)
any_int = st.integers(-8, 16) | edge_ints | st.integers(-(2**70), 2**70)
weird = st.sampled_from(
    [
        True,
        False,
        1.5,
        2.0,
        -0.0,
        float("nan"),
        float("inf"),
        None,
        "3",
        "",
        b"2",
        1j,
        (),
        [],
        {},
        Ellipsis,
        slice(None),
        object(),
        Node.Leaf,
        Node.Push,
    ]
)
node_ids = any_int.map(lambda k: call(Node.id, k))
scalar = any_int | weird | node_ids


# Named extend functions: Hypothesis reads a lambda's source to check that
# it recurses, which fails for some line layouts.
def lists_of(c):
    return st.lists(c, max_size=3)


def nonempty_lists_of(c):
    return st.lists(c, min_size=1, max_size=3)


def sequences_of(c):
    return st.lists(c, max_size=4) | st.tuples(c) | st.tuples(c, c)


def nested(leaf):
    return st.recursive(leaf, sequences_of, max_leaves=12)


tree_input = nested(scalar)


def deep(leaf, depth):
    """A list nested depth levels around leaf."""
    x = leaf
    for _ in range(depth):
        x = [x]
    return x


deep_input = st.builds(deep, st.integers(1, 4), st.integers(0, 3000))

# Extents and strides that make valid layouts most of the time, with edge
# values mixed in so that products and sums overflow now and then.
extent = st.integers(1, 6) | st.sampled_from([1, 2**31, 2**32, 2**62, 2**63 - 1, 7, 3])
stride = st.integers(0, 12) | st.sampled_from([0, 1, 2**31, 2**32, 2**61, 2**62, 2**63 - 1])
pair = st.tuples(extent, stride)
template = st.recursive(pair, lists_of, max_leaves=6)


def split(t):
    """A (shape, stride) pair of congruent nested lists from a template."""
    if isinstance(t, tuple):
        return t
    parts = [split(c) for c in t]
    return [p[0] for p in parts], [p[1] for p in parts]


# Leaves made only of edge values: most overflow, and those that do not
# (stride 0, extent 1) sit exactly at the limits.
edge_pair = st.tuples(
    st.sampled_from([1, 2, 2**31, 2**32, 2**62, 2**63 - 1]),
    st.sampled_from([0, 1, 2**31, 2**32, 2**62, 2**63 - 1]),
)
edge_template = st.recursive(edge_pair, lists_of, max_leaves=5)


@st.composite
def layouts(draw):
    """A Layout, or None when the drawn values make none (overflow)."""
    s, d = split(draw(template | edge_template))
    if isinstance(s, list):
        return call(lambda: Layout(Shape(s), Stride(d)))
    return call(Layout.leaf, s, d)


small_layouts = st.builds(
    lambda t: call(lambda: Layout(Shape(split(t)[0]), Stride(split(t)[1]))),
    st.recursive(
        st.tuples(st.integers(1, 4), st.integers(0, 6)),
        nonempty_lists_of,
        max_leaves=4,
    ).filter(lambda t: isinstance(t, list)),
)

key_atom = (
    any_int
    | st.builds(slice, st.none() | any_int, st.none() | any_int, st.none() | any_int)
    | weird
)
keys = st.recursive(key_atom, sequences_of, max_leaves=8)

dtypes = st.sampled_from(
    [None, DType.Float32, DType.Int32, DType.Bool, DType.Any, DType.Floating, "Float32", 1, 2.0]
)
numbers = (
    st.integers(-5, 5)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([2**31, 2**63, -(2**70), True])
)

# ------------------------------------------------------------ constructors


@given(items=st.lists(tree_input | deep_input, max_size=4))
def test_shape_stride_tree_constructors(items):
    for cls in (Shape, Stride):
        t = call(cls, *items)
        if t is not None:
            # A tree thousands of levels deep may be refused by the
            # interpreter's recursion limit (RecursionError, a
            # RuntimeError) when printed or walked; never a crash.
            call(repr, t), call(len, t), call(getattr, t, "depth")
            call(getattr, t, "top_level"), call(list, t)
            call(int, t)
            call(t.__getitem__, 0)
            call(t.__getitem__, slice(None, None, -1))
            call(cls.concat, t, t)
            call(cls.append, t, t)
            pickle.loads(pickle.dumps(t))
        if cls is Shape and t is not None:
            assert 1 <= t.size <= 2**63 - 1
    call(Tree, *items)
    call(Tree.norm, items)
    call(Tree.get_recipe, items)


@given(s=tree_input | deep_input, d=tree_input | deep_input)
def test_layout_constructors(s, d):
    call(Layout.leaf, s, d)
    call(Layout.check_tree, s, d)
    sh, sd = call(Shape, s), call(Stride, d)
    layout = call(Layout, sh, sd)
    if layout is not None:
        repr(layout), str(layout)
        assert 1 <= layout.size <= 2**63 - 1 and 1 <= layout.cosize <= 2**63 - 1
    call(Layout, s, d)
    call(Layout, sd, sh)
    call(Layout, shape=sh, stride=sd)


@given(n=any_int | weird, level=tree_input)
def test_expand_int(n, level):
    call(Layout.expand_int, n, level)


@given(
    size=st.integers(0, 4096) | st.integers(2**61, 2**64) | st.integers(-(2**64), -1) | weird,
    pointer=st.none() | st.integers(-(2**65), 2**65) | edge_ints | weird,
    mutable=st.booleans() | weird,
    dtype=dtypes,
    empty=st.booleans(),
)
def test_cpu_constructor(size, pointer, mutable, dtype, empty):
    c = call(CPU, size, pointer, mutable=mutable, dtype=dtype, empty=empty)
    if c is None:
        return
    c.size(), c.dtype(), c.is_mutable(), c.pointer()
    if pointer is None:
        # Owned memory: every access is in bounds or refused.
        for i in (0, -1, c.size() - 1, c.size(), 2**63, -(2**63)):
            call(c.__getitem__, i)
            call(c.__setitem__, i, 1)
    # A wrap of an arbitrary address is never read: only released.
    c.release()
    c.size(), c.is_released()
    call(c.__getitem__, 0)


@given(
    offset=st.integers(0, 256),
    n=st.integers(-2, 300) | edge_ints,
    dtype=dtypes,
    value=numbers | weird,
)
def test_cpu_wrap_of_real_memory(offset, n, dtype, value):
    # The wrapped memory is the caller's promise: keep it inside the buffer
    # (an address outside it is no bug of the library's).
    buf = array.array("d", [0.0] * 32)  # 256 bytes, 8-byte aligned
    address, _ = buf.buffer_info()
    item = 1 if dtype is DType.Bool else 4
    if 0 <= n and offset + n * item > 256:
        n = (256 - offset) // item
    c = call(CPU, n, address + offset, dtype=dtype)
    if c is None:
        return
    for i in range(c.size()):
        c[i]
    call(c.__setitem__, 0, value)
    call(c.__setitem__, c.size(), value)
    c.release()


@given(
    values=st.lists(numbers | weird, max_size=8) | weird | st.text(max_size=4),
    mutable=st.booleans() | weird,
    dtype=dtypes,
)
def test_generic_constructor(values, mutable, dtype):
    kwargs = {} if dtype is None else {"dtype": dtype}
    g = call(Generic, values, mutable=mutable, **kwargs)
    if g is None:
        return
    for i in (0, -1, g.size(), 2**63, 1.5):
        call(g.__getitem__, i)
        call(g.__setitem__, i, 0)
    call(g.new_like, values)
    call(g.allocate_like, len(values) if isinstance(values, list) else 3)


# ----------------------------------------------------------------- algebra

UNARY = [
    "coalesce",
    "filter",
    "flatten",
    "flatten_layout",
    "infix",
    "right_inverse",
    "extract_profile",
]
INJECTIVE = ["left_inverse", "is_injective", "is_compact"]
BINARY = [
    "compose_layouts",
    "compose",
    "divide",
    "logical_product",
    "blocked_product",
    "raked_product",
    "concat",
    "append",
    "__add__",
    "__eq__",
]
TILER = ["divide_tiler", "zipped_divide", "tiled_divide", "flat_divide", "compose"]


def enumeration_is_cheap(layout):
    # Injectivity of interleaved strides is decided by enumeration up to
    # 2**27 indices: correct, but slow under the sanitizers.
    return layout.cosize <= 2**16 or layout.cosize > 2**27


@given(a=layouts(), b=layouts(), n=any_int | weird, tiler=st.lists(layouts(), max_size=4))
def test_layout_algebra(a, b, n, tiler):
    if a is None:
        return
    for name in UNARY:
        call(getattr(a, name))
    if enumeration_is_cheap(a):
        for name in INJECTIVE:
            call(getattr(a, name))
    for x in (b, n, a.shape, a.stride, None):
        for name in BINARY:
            call(getattr(a, name), x)
    tiler = [t for t in tiler if t is not None]
    for name in TILER:
        call(getattr(a, name), tiler)
        call(getattr(a, name), [n])
    call(a.compose, a.shape)
    for name in ("choose", "modout", "complement"):
        call(getattr(a, name), n)
    call(a.complement)
    call(Layout.make_layout, a, a)
    call(Layout.make_layout, a, n)
    copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))


@given(
    a=layouts(),
    key=keys | deep_input,
    order=st.lists(any_int | weird, max_size=5),
    profile=tree_input,
    output=tree_input,
)
def test_layout_indexing_and_structure(a, key, order, profile, output):
    if a is None:
        return
    for k in (key, 0, a.size - 1, a.size, -1, 2**63 - 1):
        call(a, k)
        call(a.index, k)
        call(Layout.get_index, a, k)
    call(a.__getitem__, key)
    for m in range(min(a.rank, 4)):
        a[m]
    call(a.permute, order)
    call(a.permute, *order)
    call(a.coalesce_by_mode, profile)
    call(a.extract_profile, profile)
    call(a.rearrange, output)
    call(a.rearrange, output, profile)
    call(Layout.reverse_rearrange, output, profile)
    ids = tuple(Node.id(i) for i in range(a.rank))
    call(a.rearrange, ids[::-1])
    call(a.rearrange, (ids, Node.Leaf))


# ----------------------------------------------------------------- tensors


def carrier_of(kind, n):
    if kind == "generic":
        return Generic([float(i % 5 - 2) for i in range(n)])
    dtype = {"cpu": DType.Float32, "cpu_i32": DType.Int32, "cpu_bool": DType.Bool}[kind]
    c = CPU(n, dtype=dtype)
    for i in range(n):
        c[i] = i % 5 - 2
    return c


carrier_kinds = st.sampled_from(["cpu", "cpu_i32", "cpu_bool", "generic"])


@given(
    kind=carrier_kinds,
    n=st.integers(0, 48),
    offset=any_int | weird,
    layout=layouts() | small_layouts,
    key_list=st.lists(keys | deep_input, max_size=4),
    value=numbers | weird,
)
def test_tensor_construction_and_keys(kind, n, offset, layout, key_list, value):
    c = carrier_of(kind, n)
    call(Tensor, c, offset, layout)
    call(Tensor, c, 0, layout.shape if layout is not None else None)
    t = call(Tensor, c, offset, layout)
    if t is None:
        return
    t.size(), t.dtype(), t.offset, t.layout, t.version, repr(t)
    for key in key_list + [0, t.size() - 1, t.size(), -1, 2**63]:
        r = call(t.__getitem__, key)
        if isinstance(r, Tensor):
            r.size(), r.layout
        call(t.__setitem__, key, value)


hook_results = any_int | weird | numbers | dtypes | st.builds(lambda: Generic([1.0, 2.0]))


@given(
    size=hook_results,
    dtype=hook_results,
    value=hook_results,
    mutable=hook_results,
    made=hook_results,
    layout=small_layouts | layouts(),
    key=keys,
)
def test_python_carrier_hooks(size, dtype, value, mutable, made, layout, key):
    # A Python subclass whose hooks return anything: the library validates
    # what each hook gives back before it relies on it.
    class Odd(Carrier):
        def size(self):
            return size

        def dtype(self):
            return dtype

        def get_value(self, index):
            return value

        def set_value(self, index, v):
            pass

        def _is_mutable(self):
            return mutable

        def new_like(self, values, *, mutable=True):
            return made

        def allocate_like(self, n, *, mutable=True, dtype=None, empty=False):
            return made

    c = Odd()
    for f in (c.size, c.dtype, c.is_mutable, c.release):
        call(f)
    c = Odd()
    call(c.__getitem__, 0)
    call(c.__setitem__, 0, 1.0)
    t = call(Tensor, c, 0, layout)
    if t is None:
        return
    call(t.__getitem__, key)
    call(t.__setitem__, key, 1.0)
    if t.size() <= 64:
        for op in (sw.exp, sw.neg):
            call(op, t, allowed=ALLOWED_GENERIC_MATH)
        call(sw.add, t, t, allowed=ALLOWED_GENERIC_MATH)
        call(sw.reduce, t, allowed=ALLOWED_GENERIC_MATH)
        call(sw.rearrange, t, "a ... -> ... a")
        call(c.scatter, t, t, layout)


BROADCAST_LIMIT = 2048


def cheap(t):
    return t.size() <= BROADCAST_LIMIT


@given(kind=carrier_kinds, layout=small_layouts, other=layouts() | small_layouts, s=numbers)
def test_tensor_operations(kind, layout, other, s):
    if layout is None:
        return
    c = carrier_of(kind, layout.cosize)
    t = Tensor(c, 0, layout)
    allowed = ALLOWED_GENERIC_MATH if kind == "generic" else ALLOWED
    for op in (sw.neg, sw.exp, sw.relu, sw.sigmoid, sw.tanh):
        call(op, t, allowed=allowed)
    for op in (sw.add, sw.sub, sw.elementwise_mul, sw.div):
        call(op, t, t, allowed=allowed)
    call(sw.mul, t, s, allowed=allowed)
    call(sw.pow, t, s, allowed=allowed)
    call(sw.reduce, t, allowed=allowed)
    call(sw.matmul, t, t, allowed=allowed)
    call(sw.permute, t, *range(layout.rank)[::-1])
    if other is not None and other.cosize <= c.size():
        u = Tensor(c, 0, other)
        if cheap(u):
            call(sw.add, t, u, allowed=allowed)
            call(sw.reduce, u, allowed=allowed)
        if other.rank == 2:
            m, k = other[0].size, other[1].size
            # A product too large for int64 must be refused, at once.
            if m * m * k <= 2**14 or m * m >= 2**63:
                call(sw.matmul, u, u, allowed=allowed)


triple = st.tuples(
    st.integers(1, 4), st.integers(0, 6), st.integers(0, 6) | st.sampled_from([2**62, 2**63 - 1])
)


@given(
    kinds=st.tuples(carrier_kinds, carrier_kinds),
    t=st.recursive(triple, nonempty_lists_of, max_leaves=4),
    onto_offset=st.integers(0, 40) | edge_ints,
    mapping_offset=any_int | weird,
)
def test_scatter(kinds, t, onto_offset, mapping_offset):
    def strides(x, k):
        return x[k] if isinstance(x, tuple) else [strides(c, k) for c in x]

    shape = Shape(strides(t, 0) if isinstance(t, list) else [t[0]])
    src_layout = call(Layout, shape, Stride(strides(t, 1) if isinstance(t, list) else [t[1]]))
    mapping = call(Layout, shape, Stride(strides(t, 2) if isinstance(t, list) else [t[2]]))
    if src_layout is None:
        return
    src = Tensor(carrier_of(kinds[0], src_layout.cosize), 0, src_layout)
    dst = carrier_of(kinds[1], 48)
    onto = call(Tensor, dst, onto_offset, Layout.leaf(1, 0))
    if onto is None:
        return
    call(dst.scatter, src, onto, mapping, mapping_offset)
    call(dst.scatter, src, onto, src_layout, mapping_offset)


@given(
    kind=carrier_kinds,
    layout=small_layouts,
    gradient=layouts() | small_layouts,
    scalar_=numbers,
)
def test_autograd(kind, layout, gradient, scalar_):
    if layout is None:
        return
    allowed = ALLOWED_GENERIC_MATH if kind == "generic" else ALLOWED
    x = Tensor(carrier_of(kind, layout.cosize), 0, layout)
    call(x.retain_grad)
    y = call(lambda: sw.mul(sw.exp(x), scalar_), allowed=allowed)
    if y is None:
        return
    g = None
    if gradient is not None and gradient.cosize <= 64:
        g = Tensor(carrier_of(kind, gradient.cosize), 0, gradient)
    call(y.backward, g, allowed=allowed)
    call(y.backward, allowed=allowed)
    call(x.backward, x, allowed=allowed)
    call(getattr, x, "grad")


@given(
    kind=carrier_kinds,
    layout=small_layouts | layouts(),
    stream=st.none() | any_int | weird,
    max_version=st.none() | st.tuples(any_int, any_int) | st.lists(any_int, max_size=3) | weird,
    dl_device=st.none() | st.tuples(any_int, any_int) | weird,
    copy_=st.none() | st.booleans() | weird,
)
def test_dlpack_export(kind, layout, stream, max_version, dl_device, copy_):
    if layout is None or layout.cosize > 64:
        return
    t = Tensor(carrier_of(kind, layout.cosize), 0, layout)
    allowed = ALLOWED + (BufferError,)
    call(t.__dlpack_device__, allowed=allowed)
    call(
        t.__dlpack__,
        stream,
        max_version=max_version,
        dl_device=dl_device,
        copy=copy_,
        allowed=allowed,
    )


# ------------------------------------------------------------------ einops

SYMBOLS = ["a", "b", "c", "d", "e", "x1", "_", "1", "...", "(", ")", "->", ",", " ", "  "]
command_pieces = st.lists(st.sampled_from(SYMBOLS), max_size=16).map(" ".join)
commands = (
    command_pieces
    | st.text(alphabet="abcde1()->,. _\t\n\u00e9", max_size=40)
    | st.text(max_size=24)
)


@given(command=commands | weird | st.binary(max_size=8))
def test_einops_parsers(command):
    tokens = call(ein.lex, command)
    if tokens is not None:
        call(ein.parse_layout_ref, tokens)
        call(ein.parse_layout_ref, tokens[::-1])
        call(ein.parse_layout_ref, tokens + [command])
    for parse in (ein.parse_rearrange, ein.parse_reduce, ein.parse_einsum):
        call(parse, command)


@given(
    command=commands,
    kind=carrier_kinds,
    layout=small_layouts,
    other=small_layouts,
)
def test_einops_on_tensors(command, kind, layout, other):
    if layout is None:
        return
    allowed = ALLOWED_GENERIC_MATH if kind == "generic" else ALLOWED
    c = carrier_of(kind, max(layout.cosize, other.cosize if other is not None else 0))
    t = Tensor(c, 0, layout)
    call(ein.rearrange, t, command)
    call(ein.reduce, t, command, allowed=allowed)
    call(sw.rearrange, t, command)
    if other is not None:
        call(ein.einsum, t, Tensor(c, 0, other), command, allowed=allowed)
    call(ein.rearrange, command, command)
    call(ein.einsum, t, command, command)
