"""Layout: construction, properties, container protocol, indexing rules and
the static helpers, with every error and its message."""

import copy
import pickle

import pytest
from strideweave.layout import Layout, Node, Shape, Stride, Tree


def L(shape, stride):
    return Layout(Shape(shape), Stride(stride))


H = L([2, [3, 4]], [1, [10, 100]])

# ------------------------------------------------------------ construction


def test_constructor_errors():
    with pytest.raises(ValueError, match="^shape input must be a Shape object$"):
        Layout([2, 3], Stride(1, 2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^stride input must be a Stride object$"):
        Layout(Shape(2, 3), [1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^shape input must be a Shape object$"):
        Layout(Stride(2), Stride(1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^stride input must be a Stride object$"):
        Layout(Shape(2), Shape(1))  # type: ignore[arg-type]
    for shape, stride in [
        ([2, 3], [1]),
        ([2, [3, 4]], [1, 2, 3]),
        ([2, [3, 4]], [1, [2]]),
        ([2, 3], [1, [2]]),
        ([[2]], [2]),
    ]:
        with pytest.raises(ValueError, match="^Shape and Stride do not match in Structure$"):
            L(shape, stride)
    with pytest.raises(TypeError):
        Layout(Shape(2))  # type: ignore[call-arg]


def test_constructor_keywords_and_cosize_limit():
    assert Layout(shape=Shape(4), stride=Stride(2)) == Layout.leaf(4, 2)
    with pytest.raises(ValueError):
        L([2, 3], [2**62, 2**62])
    assert L([2], [2**62]).cosize == 2**62 + 1


def test_properties():
    A = L([2, 3], [1, 4])
    assert (A.size, A.cosize, A.depth, A.rank, A.is_leaf) == (6, 10, 1, 2, False)
    assert (H.size, H.cosize, H.depth, H.rank) == (24, 322, 2, 2)
    assert H.shape == Shape(2, [3, 4]) and H.stride == Stride(1, [10, 100])
    assert H.shape is H.shape
    E = Layout.empty()
    assert (E.size, E.cosize, E.rank, E.depth, E.is_leaf) == (1, 1, 0, 1, True)
    assert Layout.leaf(4, 2).is_leaf
    assert not L([[4]], [[2]]).is_leaf
    s, d = Shape(2, 3), Stride(1, 2)
    assert Layout(s, d).shape is s and Layout(s, d).stride is d


def test_immutable():
    with pytest.raises(AttributeError):
        H.shape = Shape(1)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        H.size = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        H.extra = 3  # type: ignore[attr-defined]


def test_repr_is_cute_form():
    assert str(H) == "(2,(3,4)):(1,(10,100))"
    assert repr(H) == "(2,(3,4)):(1,(10,100))"
    assert str(Layout.leaf(4, 2)) == "4:2"
    assert str(L([[4]], [[2]])) == "((4)):((2))"
    assert str(Layout.empty()) == "():()"
    assert str(L([2, 3], [1, 2])) == "(2,3):(1,2)"


def test_equality_hash_copy_pickle():
    assert H == L([2, [3, 4]], [1, [10, 100]])
    assert H != L([2, [3, 4]], [1, [10, 101]])
    assert H != L([2, 3, 4], [1, 10, 100])
    assert (H == "x") is False and (H != "x") is True
    assert (H == H.shape) is False
    with pytest.raises(TypeError):
        hash(H)
    for c in (copy.copy(H), copy.deepcopy(H), pickle.loads(pickle.dumps(H))):
        assert c == H and c is not H


# ------------------------------------------------------------ container


def test_len_getitem_iter_add():
    A = L([2, [3, 4], 5], [1, [2, 6], 24])
    assert len(A) == 3 == A.rank
    assert A[0] == Layout.leaf(2, 1)
    assert A[1] == L([3, 4], [2, 6])
    assert A[-1] == Layout.leaf(5, 24)
    assert A[1:] == L([[3, 4], 5], [[2, 6], 24])
    assert A[::2] == L([2, 5], [1, 24])
    assert A[3:] == Layout.empty()
    assert list(A) == [A[0], A[1], A[2]]
    assert A[0] + A[1] == L([2, 3, 4], [1, 2, 6])
    assert A[0] + A[1] == Layout.concat(A[0], A[1]) == A[0].concat(A[1])
    assert A[0].append(A[1]) == A[:2]
    with pytest.raises(IndexError):
        A[3]
    with pytest.raises(IndexError):
        A[-4]
    with pytest.raises(TypeError):
        A["0"]  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        A + 1  # type: ignore[operator]


# ------------------------------------------------------------- indexing


def test_index_examples():
    A = L([3, 4], [2, 10])
    assert A.index([2, 3]) == 34
    assert A.index(5) == 14
    assert A((2, 3)) == 34 and A(5) == 14
    assert Layout.get_index(A, [2, 3]) == 34
    assert H.index([1, [2, 3]]) == 321
    assert H.index(23) == 321


def test_int_key_is_colexicographic():
    A = L([2, [3, 4]], [1, [2, 6]])
    assert [A(i) for i in range(24)] == list(range(24))
    B = L([[2, 2], 3], [[1, 6], 2])
    assert [B(i) for i in range(12)] == [
        c0 + 6 * c1 + 2 * c2 for c2 in range(3) for c1 in range(2) for c0 in range(2)
    ]
    assert A(True) == 1


def test_partial_and_overlong_keys():
    A = L([2, [3, 4]], [1, [10, 100]])
    assert A.index([1]) == A.index([1, 0]) == 1
    assert A.index([]) == 0
    assert A.index(()) == 0
    assert A.index([1, [2, 3], 7, 8]) == A.index([1, [2, 3]])
    assert A.index([1, [2]]) == A.index([1, [2, 0]])
    assert A.index([1, [2, 3, 9]]) == 321


def test_nested_mode_takes_int_or_sequence():
    A = L([2, [3, 4]], [1, [10, 100]])
    assert A.index([1, 11]) == A.index([1, [2, 3]])
    B = L([[2, [3, 2]], 5], [[1, [2, 6]], 12])
    assert B.index([[1, 4]]) == B.index([[1, [1, 1]]]) == 1 + 2 + 6
    assert B.index([7, 4]) == B.index([[1, [0, 1]], 4]) == 1 + 6 + 48


def test_sequence_kinds_for_keys():
    A = L([2, [3, 4]], [1, [10, 100]])
    assert A.index((1, (2, 3))) == A.index([1, range(2, 4)]) == 321
    assert A.index(range(2)) == A.index([0, 1]) == 10

    class Idx:
        def __index__(self):
            return 1

    assert A.index([Idx(), [Idx(), Idx()]]) == 111
    assert A.index(Idx()) == 1


@pytest.mark.parametrize(
    "key", [24, -1, 2**63, 2**70, -(2**70), [2], [-1], [0, [3]], [0, [0, 4]], [0, 12], [0, -1]]
)
def test_key_out_of_domain(key):
    with pytest.raises(ValueError, match="^Key is not in domain of shape$"):
        H.index(key)
    with pytest.raises(ValueError, match="^Key is not in domain of shape$"):
        H(key)


@pytest.mark.parametrize("key", [1.0, None, "1", b"1", {0: 1}, object(), H, Shape(1)])
def test_top_level_key_type_error(key):
    with pytest.raises(TypeError):
        H.index(key)


@pytest.mark.parametrize(
    "key", [[1.0], [0, [0, None]], [0, "a"], [[0, 1]], [0, [[0], 0]], [0, H], [Shape(1)]]
)
def test_non_integer_coordinate_is_type_error(key):
    # A float or str coordinate, or a sequence given for a leaf mode.
    with pytest.raises(TypeError):
        H.index(key)


def test_get_index_needs_a_layout():
    with pytest.raises(ValueError, match="^layout input must be a Layout object$"):
        Layout.get_index(Shape(2), 0)  # type: ignore[arg-type]


def test_call_arity():
    with pytest.raises(TypeError):
        H()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        H(1, 2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        H(key=1)  # type: ignore[call-arg]


def test_expand_int_and_check_tree():
    assert Layout.expand_int(5, Shape(2, [3, 4]).top_level) == [1, 2]
    assert Layout.expand_int(23, Shape(2, [3, 4])) == [1, 11]
    assert Layout.expand_int(0, ()) == []
    with pytest.raises(ValueError, match="^Key is not in domain of shape$"):
        Layout.expand_int(24, (2, (3, 4)))
    with pytest.raises(ValueError, match="^Key is not in domain of shape$"):
        Layout.expand_int(-1, (2,))
    # Sizes must fit in 64 bits (a deliberate deviation from the reference).
    with pytest.raises(ValueError):
        Layout.expand_int(2**60 + 1, (2, 2**62))
    assert Layout.expand_int(2**60 + 1, (2, 2**61)) == [1, 2**59]
    assert Layout.check_tree((2, (3, 4)), (1, (2, 6))) is True
    assert Layout.check_tree(Shape(2, [3, 4]).top_level, Stride(1, [2, 6]).top_level)
    assert Layout.check_tree((2, 3), (1, (2, 6))) is False
    assert Layout.check_tree((2, 3), (1,)) is False


# ---------------------------------------------------------- construction


def test_empty_leaf_make_layout_append():
    assert Layout.empty() == Layout(Shape(), Stride())
    assert Layout.leaf(4, 2) == L([4], [2])
    assert Layout.leaf([2, 3], [1, 2]) == L([2, 3], [1, 2])
    assert Layout.make_layout() == Layout.empty()
    assert Layout.make_layout(Layout.leaf(2, 1), Layout.leaf(3, 2)) == L([2, 3], [1, 2])
    assert Layout.make_layout(Layout.leaf(2, 1), L([3, 4], [2, 6])) == L([2, [3, 4]], [1, [2, 6]])
    assert Layout.append(Layout.leaf(1, 1), L([2, 3], [2, 6])) == L([1, [2, 3]], [1, [2, 6]])
    assert Layout.leaf(1, 1).append(Layout.leaf(2, 3)) == L([1, 2], [1, 3])
    assert Layout.leaf(1, 1).append(Layout.empty()) == Layout.leaf(1, 1)
    with pytest.raises(ValueError, match="^function make_layout only accepts Layouts as argument$"):
        Layout.make_layout(Layout.leaf(2, 1), Shape(3))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Layout.leaf(1, 1).append(Shape(2))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Layout.concat(Layout.leaf(1, 1), 3)  # type: ignore[arg-type]


def test_flatten_infix():
    A = L([2, [3, [4, 5]]], [1, [2, [6, 24]]])
    flat, recipe = A.flatten_layout()
    assert flat == L([2, 3, 4, 5], [1, 2, 6, 24])
    assert A.flatten() == flat
    assert recipe == [
        Node.Leaf,
        Node.Push,
        Node.Leaf,
        Node.Push,
        Node.Leaf,
        Node.Leaf,
        Node.Pop,
        Node.Pop,
    ]
    assert Layout.flatten_layout(A) == (flat, recipe)
    assert A.infix() == [(2, 1), (3, 2), (4, 6), (5, 24)]
    assert Layout.empty().infix() == []


def test_coalesce_reference_examples():
    assert L([1, [1, 2]], [1, [5, 25]]).coalesce() == L([2], [25])
    assert L([2, 3], [1, 2]).coalesce() == L([6], [1])
    # One leaf: returned unchanged, nesting kept.
    assert L([[4]], [[3]]).coalesce() == L([[4]], [[3]])
    assert Layout.coalesce(L([2, 3], [1, 2])) == L([6], [1])
    assert L([1, [1, 2]], [1, [5, 25]]).coalesce_by_mode(Tree(1, 1)) == L([1, 2], [1, 25])


def test_extract_profile():
    A = L([2, [3, 4]], [1, [2, 6]])
    assert A.extract_profile() == [L([2], [1]), L([3], [2]), L([4], [6])]
    assert A.extract_profile(None) == A.extract_profile()
    assert A.extract_profile(Tree(1, 1)) == [Layout.leaf(2, 1), L([3, 4], [2, 6])]
    assert A.extract_profile(Tree(Node.id(5), Tree(1, Node.Leaf))) == A.extract_profile()
    assert A.extract_profile((1, (1, 1))) == A.extract_profile()
    assert Layout.extract_profile(A, profile=Tree(1, 1))[1] == A[1]
    for bad in (Tree(1), Tree(1, 1, 1), Tree(1, Tree(1)), Tree(1, Tree(1, 1, 1))):
        with pytest.raises(ValueError, match="^layout and tree profile do not match$"):
            A.extract_profile(bad)
    with pytest.raises(ValueError, match="^layout and tree profile do not match$"):
        A.coalesce_by_mode(Tree(1))


def test_rearrange_reference_examples():
    i0, i1, i2 = Node.id(0), Node.id(1), Node.id(2)
    assert L([2, 3, 4], [1, 2, 6]).rearrange(Tree(i2, i0, i1)) == L([4, 2, 3], [6, 1, 2])
    assert L([1, [2, 3]], [5, [7, 14]]).rearrange(Tree(i1, i0), Tree(1, 1)) == L(
        [[2, 3], 1], [[7, 14], 5]
    )
    assert L([2, 3], [1, 2]).rearrange(Tree(i1, Node.Leaf, i0)) == L([3, 1, 2], [2, 0, 1])
    assert L([2, 3], [1, 2]).rearrange(Tree(Tree(i1, i0))) == L([[3, 2]], [[2, 1]])
    assert Layout.rearrange(L([2, 3], [1, 2]), output=Tree(i1, i0)) == L([3, 2], [2, 1])
    # A piece of size 1 may be dropped.
    assert L([2, 1], [1, 7]).rearrange(Tree(i0)) == Layout.leaf(2, 1)


def test_rearrange_errors():
    A = L([2, 3], [1, 2])
    with pytest.raises(ValueError, match="^output must be a Tree$"):
        A.rearrange([Node.id(0)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^selection must be a Tree$"):
        A.rearrange(Tree(Node.id(0)), [1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^Layout rearrange id is out of range$"):
        A.rearrange(Tree(Node.id(0), Node.id(2)))
    with pytest.raises(ValueError, match="^Layout rearrange ids must not be duplicated$"):
        A.rearrange(Tree(Node.id(0), Node.id(0), Node.id(1)))
    with pytest.raises(
        ValueError, match="^Layout rearrange ids must include every extracted layout$"
    ):
        A.rearrange(Tree(Node.id(1)))
    with pytest.raises(ValueError, match="^Tree can only accept integers or Node.Leaf"):
        A.rearrange((Node.id(0), Node.Push))


def test_reverse_rearrange():
    i0, i1, i2 = Node.id(0), Node.id(1), Node.id(2)
    out, sel = Layout.reverse_rearrange(Tree(i1, Node.Leaf, i0), Tree(1, 1))
    assert (out, sel) == (Tree(i2, i0), Tree(1, 1, 1))
    assert isinstance(out, Tree) and isinstance(sel, Tree)
    assert Layout.reverse_rearrange(Tree(i0), Tree(1, 1)) == (Tree(i0, Node.Leaf), Tree(1))
    with pytest.raises(ValueError, match="^output must be a Tree$"):
        Layout.reverse_rearrange(None, Tree(1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^selection must be a Tree$"):
        Layout.reverse_rearrange(Tree(i0), None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^Layout rearrange ids must not be duplicated$"):
        Layout.reverse_rearrange(Tree(i0, i0), Tree(1, 1))
    with pytest.raises(ValueError, match="^Layout rearrange id is out of range$"):
        Layout.reverse_rearrange(Tree(i0, i2), Tree(1, 1))
    # Applying the reverse pair restores the source.
    A = L([2, [3, 4]], [1, [2, 6]])
    output, selection = Tree(Tree(i1, i0)), Tree(1, 1)
    B = A.rearrange(output, selection)
    rout, rsel = Layout.reverse_rearrange(output, selection)
    assert B.rearrange(rout, rsel) == A


def test_permute():
    A = L([2, [3, 4], 5], [1, [2, 6], 24])
    expected = L([5, 2, [3, 4]], [24, 1, [2, 6]])
    assert A.permute(2, 0, 1) == expected
    assert A.permute([2, 0, 1]) == expected
    assert A.permute((2, 0, 1)) == expected
    assert Layout.permute(A, 2, 0, 1) == expected
    assert Layout.empty().permute() == Layout.empty()
    for bad in ((0, 1, True), (0, 1, 2.0), ([0, 1], 2), ("0", 1, 2)):
        with pytest.raises(TypeError, match="^Permutation dimensions must be integers$"):
            A.permute(*bad)
    with pytest.raises(TypeError, match="^Permutation dimensions must be integers$"):
        A.permute([0, 1, True])
    for bad in ((0, 1), (0, 1, 1), (0, 1, 3), (0, 1, -1), (0, 1, 2, 3), (0, 1, 2**40)):
        with pytest.raises(
            ValueError, match="^Permutation dimensions must reorder every layout mode$"
        ):
            A.permute(*bad)


def test_choose_modout_reference_examples():
    A = L([3, 6, 2, 8], [1, 3, 18, 36])
    C = A.choose(9)
    assert C == L([1, 2, 2, 8], [9, 9, 18, 36])
    assert [C(j) for j in range(C.size)] == [A(9 * j) for j in range(C.size)]
    assert A.choose(72) == L([1, 1, 1, 4], [72, 72, 72, 72])
    assert C.modout(16) == L([1, 2, 2, 4], [9, 9, 18, 36])
    with pytest.raises(
        ValueError,
        match=r"^Can not choose the 2-th element of Layout \(3,4\):\(1,3\): "
        r"3 can not be reduced by 2$",
    ):
        L([3, 4], [1, 3]).choose(2)
    with pytest.raises(
        ValueError, match=r"^Shape divisibility condition not met for \(4,4\):\(1,4\) and 6$"
    ):
        L([4, 4], [1, 4]).modout(6)
    with pytest.raises(ValueError):
        A.choose(0)
    with pytest.raises(TypeError):
        A.choose(1.5)  # type: ignore[arg-type]


def test_choose_modout_do_not_extend_the_last_mode():
    # The reference's rules: choose needs d to divide the size, and modout
    # keeps a layout of at most s elements whole (composition alone extends
    # A's last mode, see COMPATIBILITY.md).
    with pytest.raises(ValueError, match=r"^Can not choose the 2-th element of Layout 3:1$"):
        Layout.leaf(3, 1).choose(2)
    with pytest.raises(
        ValueError, match=r"^Can not choose the 4-th element of Layout \(2,3\):\(1,2\)$"
    ):
        L([2, 3], [1, 2]).choose(4)
    assert Layout.leaf(3, 1).choose(3) == Layout.leaf(1, 3)
    A = L([2, 3], [1, 2])
    assert A.modout(12) == A
    assert A.modout(2**63 - 1) == A
    assert A.modout(6) == A
    assert A.modout(4) == L([2, 2], [1, 2])
    assert A.compose(Layout.leaf(8, 1)) == Layout.leaf(8, 1)
    assert Layout.leaf(3, 1).compose(Layout.leaf(2, 2)) == Layout.leaf(2, 2)
    with pytest.raises(ValueError, match=r"^modout: the count must be positive$"):
        A.modout(0)


def test_algebra_overflow_is_reported():
    big = L([7, 1317624576693539401], [1, 7])  # size and cosize 2**63 - 1
    assert big.coalesce() == Layout.leaf(2**63 - 1, 1)
    assert big(2**63 - 2) == 2**63 - 2
    assert big.left_inverse() == Layout.leaf(2**63 - 1, 1)
    with pytest.raises(
        ValueError,
        match=r"^left inverse of 2:4611686018427387904: its size overflows 64-bit integers$",
    ):
        Layout.leaf(2, 2**62).left_inverse()
    assert Layout.leaf(2**63 - 1, 1).compose(Layout.leaf(1, 2)) == Layout.leaf(1, 2)
    with pytest.raises(
        ValueError,
        match=r"^composition: stride 4 of B overflows 64-bit integers in mode "
        r"2:4611686018427387904 of A$",
    ):
        L([2, 2], [1, 2**62]).compose(Layout.leaf(2, 4))
    with pytest.raises(
        ValueError, match=r"^Can not choose the 2-th element of Layout .*overflows 64-bit"
    ):
        L([1, 2], [1, 2**62]).choose(2)
    with pytest.raises(ValueError, match=r"^product size overflows 64-bit integers$"):
        Layout.leaf(2**62, 1).logical_product(Layout.leaf(4, 1))


def test_compose_reference_examples():
    assert L([6, 2], [8, 2]).compose_layouts(L([4, 3], [3, 1])) == L([[2, 2], 3], [[24, 2], 8])
    assert L([20], [2]).compose(L([5, 4], [4, 1])) == L([5, 4], [8, 2])
    assert L([5], [2]).compose(L([3, [5, 2]], [2, [6, 30]])) == L([3, [5, 2]], [4, [12, 60]])
    assert L([20, 50], [1, 20]).compose(Shape(5, 2)) == L([5, 2], [1, 20])
    A = L([12, [4, 8]], [59, [13, 1]])
    assert A.compose([Layout.leaf(3, 4), Layout.leaf(8, 2)]) == L([3, [2, 4]], [236, [26, 1]])
    assert A.compose((Layout.leaf(3, 4),)) == L([3, [4, 8]], [236, [13, 1]])
    assert A.compose([]) == A
    assert Layout.compose(A, Shape(3, 8)) == L([3, [4, 2]], [59, [13, 1]])


def test_compose_errors():
    with pytest.raises(ValueError):
        L([3, 4], [4, 1]).compose(Layout.leaf(4, 2))
    A = L([12, [4, 8]], [59, [13, 1]])
    with pytest.raises(ValueError):
        A.compose([Layout.leaf(3, 4), Layout.leaf(8, 2), Layout.leaf(1, 1)])
    with pytest.raises(TypeError):
        A.compose([Layout.leaf(3, 4), 3])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        A.compose(Stride(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        A.compose(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        A.compose_layouts(Shape(3))  # type: ignore[arg-type]


def test_complement_defaults_and_examples():
    assert Layout.leaf(4, 1).complement(24) == Layout.leaf(6, 4)
    assert Layout.leaf(4, 2).complement(24) == L([2, 3], [1, 8])
    assert L([2, 4], [1, 6]).complement(24) == Layout.leaf(3, 2)
    assert L([2, 2], [4, 1]).complement(24) == L([2, 3], [2, 8])
    assert L([2, 2], [1, 2]).complement() == Layout.leaf(1, 0)
    assert L([2, 2], [1, 2]).complement(cotarget=8) == Layout.leaf(2, 4)
    # Extent-1 and stride-0 leaves are ignored; nothing left gives 1:0.
    assert L([4, 1, 3], [1, 7, 0]).complement(8) == Layout.leaf(2, 4)
    assert Layout.leaf(1, 5).complement(1) == Layout.leaf(1, 0)
    assert Layout.empty().complement(6) == Layout.leaf(6, 1)
    with pytest.raises(ValueError):
        L([2, 2], [1, 1]).complement(8)
    with pytest.raises(ValueError):
        Layout.leaf(4, 2).complement(12)
    # No cotarget (or 0) fills only the gaps between the modes.
    assert Layout.leaf(4, 2).complement() == Layout.leaf(2, 1)
    assert Layout.leaf(4, 2).complement(0) == Layout.leaf(2, 1)
    assert L([2, 4], [1, 6]).complement() == Layout.leaf(3, 2)
    with pytest.raises(ValueError):
        Layout.leaf(4, 1).complement(-1)
    with pytest.raises(TypeError):
        Layout.leaf(4, 1).complement("8")  # type: ignore[arg-type]


def test_divide_and_products_argument_types():
    A = Layout.leaf(24, 1)
    for method in (
        A.divide,
        A.logical_product,
        A.blocked_product,
        A.raked_product,
        A.compose_layouts,
    ):
        with pytest.raises(TypeError):
            method(Shape(4))  # type: ignore[operator]
    for method in (A.divide_tiler, A.zipped_divide, A.tiled_divide, A.flat_divide):
        with pytest.raises(TypeError):
            method(Layout.leaf(4, 1).shape)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            method("ab")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            method([Layout.leaf(4, 1), Layout.leaf(4, 1)])
        assert method([]) == A


def test_inverses_and_predicates():
    A = L([2, 4, 6], [4, 1, 8])
    R = A.right_inverse()
    assert [A(R(i)) for i in range(R.size)] == list(range(R.size))
    assert Layout.leaf(4, 2).right_inverse() == Layout.leaf(1, 0)
    with pytest.raises(ValueError):
        L([2, 2], [1, 1]).left_inverse()
    assert L([2, 3], [3, 1]).is_injective() and L([2, 3], [3, 1]).is_compact()
    assert not L([2, 2], [1, 1]).is_injective()
    assert not L([2, 2], [0, 1]).is_injective()
    assert L([2, 2], [1, 4]).is_injective() and not L([2, 2], [1, 4]).is_compact()
    assert Layout.empty().is_compact()


def test_filter_and_flatten():
    assert L([2, 3, 4], [0, 1, 3]).filter() == Layout.leaf(12, 1)
    assert L([2, 1], [0, 5]).filter() == Layout.leaf(1, 0)
    assert L([[2, 3], [1, 4]], [[1, 2], [9, 6]]).flatten() == L([2, 3, 1, 4], [1, 2, 9, 6])


def test_classmethods_and_instance_methods_agree():
    A = L([2, [3, 4]], [1, [2, 6]])
    for name in ("flatten", "coalesce", "filter", "right_inverse", "is_injective", "infix"):
        assert getattr(Layout, name)(A) == getattr(A, name)()
    assert Layout.complement(A, 48) == A.complement(48)
    assert Layout.divide(Layout.leaf(24, 1), Layout.leaf(4, 2)) == Layout.leaf(24, 1).divide(
        Layout.leaf(4, 2)
    )
