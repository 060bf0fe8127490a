"""Every row of the layout-vector reference, through Python.

Exact rows compare str(result) (and ==); function rows compare the size and
the index of every logical element; rejected rows expect ValueError.
"""

import pytest
from layout_text import parse_layout as P
from layout_text import table
from strideweave.layout import Shape, Tree

# ------------------------------------------------------ size and cosize


@pytest.mark.parametrize(
    "text, size, cosize",
    [
        ("(2,3):(1,4)", 6, 10),
        ("(6,2):(8,2)", 12, 43),
        ("(4,(2,3)):(2,(1,8))", 24, 24),
        ("(2,2):(1,6)", 4, 8),
        ("(2,(3,4)):(1,(10,100))", 24, 322),
        ("(3,4):(2,10)", 12, 35),
    ],
)
def test_size_cosize(text, size, cosize):
    layout = P(text)
    assert str(layout) == text
    assert (layout.size, layout.cosize) == (size, cosize)


def test_index_rows():
    A = P("(2,(3,4)):(1,(10,100))")
    assert A.index((1, (2, 3))) == 321
    assert A.index(23) == 321
    B = P("(3,4):(2,10)")
    assert B.index((2, 3)) == 34
    assert B.index(5) == 14


# ---------------------------------------------------- composition (exact)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("(6,2):(8,2)", "(4,3):(3,1)", "((2,2),3):((24,2),8)"),
        ("20:2", "(5,4):(4,1)", "(5,4):(8,2)"),
        ("(10,2):(16,4)", "(5,4):(1,5)", "(5,(2,2)):(16,(80,4))"),
    ],
)
def test_compose_exact(a, b, expected):
    A, B = P(a), P(b)
    R = A.compose(B)
    assert str(R) == expected
    assert R == P(expected)
    assert str(A.compose_layouts(B)) == expected


def test_compose_tiler_exact():
    A = P("(12,(4,8)):(59,(13,1))")
    R = A.compose([P("3:4"), P("8:2")])
    assert str(R) == "(3,(2,4)):(236,(26,1))"


def test_compose_shape_exact():
    A = P("(12,(4,8)):(59,(13,1))")
    R = A.compose(Shape(3, 8))
    assert str(R) == "(3,(4,2)):(59,(13,1))"


def test_compose_rejected():
    with pytest.raises(ValueError):
        P("(3,4):(4,1)").compose(P("4:2"))


# ------------------------------------------------------- coalesce (exact)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(2,(1,6)):(1,(6,2))", "12:1"),
        ("((2,(3,4)),(3,2),1):((4,(8,24)),(2,6),12)", "(24,6):(4,2)"),
    ],
)
def test_coalesce_exact(text, expected):
    assert str(P(text).coalesce()) == expected


def test_coalesce_by_mode_exact():
    assert str(P("(2,(1,6)):(1,(6,2))").coalesce_by_mode(Tree(1, 1))) == "(2,6):(1,2)"


# ----------------------------------------------------- complement (exact)


@pytest.mark.parametrize(
    "a, cotarget, expected",
    [
        ("4:1", 24, "6:4"),
        ("4:2", 24, "(2,3):(1,8)"),
        ("(2,4):(1,6)", 24, "3:2"),
        ("(2,2):(4,1)", 24, "(2,3):(2,8)"),
    ],
)
def test_complement_exact(a, cotarget, expected):
    assert str(P(a).complement(cotarget)) == expected


@pytest.mark.parametrize("a, cotarget", [("(2,2):(1,1)", 8), ("4:2", 12)])
def test_complement_rejected(a, cotarget):
    with pytest.raises(ValueError):
        P(a).complement(cotarget)


# --------------------------------------------------------- divide (exact)


def test_divide_exact():
    assert str(P("(4,2,3):(2,1,8)").divide(P("4:2"))) == "((2,2),(2,3)):((4,1),(2,8))"
    assert str(P("24:1").divide(P("4:2"))) == "(4,(2,3)):(2,(1,8))"


A_TILER = "(9,(4,8)):(59,(13,1))"
TILER = ["3:3", "(2,4):(1,8)"]


def test_divide_tiler_exact():
    R = P(A_TILER).divide_tiler([P(t) for t in TILER])
    assert str(R) == "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"
    assert R.index((1, 1)) == 190


@pytest.mark.parametrize(
    "method, expected",
    [
        ("zipped_divide", "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))"),
        ("tiled_divide", "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))"),
        ("flat_divide", "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))"),
    ],
)
def test_divide_forms_exact(method, expected):
    R = getattr(P(A_TILER), method)(tuple(P(t) for t in TILER))
    assert str(R) == expected


def test_divide_rejected():
    with pytest.raises(ValueError):
        P("12:1").divide(P("5:1"))


# ----------------------------------------------------- products (function)


@pytest.mark.parametrize(
    "method, a, b, expected",
    [
        ("logical_product", "(2,2):(4,1)", "6:1", "((2,2),(2,3)):((4,1),(2,8))"),
        ("logical_product", "(2,2):(4,1)", "(4,2):(2,1)", "((2,2),(4,2)):((4,1),(8,2))"),
        ("blocked_product", "(2,5):(5,1)", "(3,4):(1,3)", "((2,3),(5,4)):((5,10),(1,30))"),
        ("raked_product", "(2,5):(5,1)", "(3,4):(1,3)", "((3,2),(4,5)):((10,5),(30,1))"),
        ("blocked_product", "(3,4):(4,1)", "(2,5):(1,2)", "((3,2),(4,5)):((4,12),(1,24))"),
    ],
)
def test_products_function(method, a, b, expected):
    R = getattr(P(a), method)(P(b))
    E = P(expected)
    assert R.size == E.size
    assert table(R) == table(E)


# ----------------------------------------------------- inverses (function)


@pytest.mark.parametrize(
    "text, right, left",
    [
        ("(2,4,6):(4,1,8)", "(4,2,6):(2,1,8)", "(4,2,6):(2,1,8)"),
        ("(2,4):(4,1)", "(4,2):(2,1)", "(4,2):(2,1)"),
        ("(2,3):(1,2)", "6:1", "6:1"),
        ("4:2", "1:0", "(2,4):(4,1)"),
    ],
)
def test_inverses_function(text, right, left):
    L = P(text)
    R, E = L.right_inverse(), P(right)
    assert R.size == E.size and table(R) == table(E)
    Li, E = L.left_inverse(), P(left)
    assert Li.size == E.size and table(Li) == table(E)
