"""strideweave.einops: the lexer, layout references, the three command parsers
and their spec contents rule by rule, the spec cache, and the module surface
(reference §13; batch symbols are this project's extension of §13.6)."""

import dataclasses
import doctest
import threading

import pytest
import strideweave
import strideweave.einops as E
from hypothesis import given, settings
from hypothesis import strategies as st
from strideweave import Node, Tree

Leaf = Node.Leaf


def ids(*k):
    return Tree(*[Node.id(i) for i in k])


def toks(command):
    return [(t.kind, t.value, t.start, t.end) for t in E.lex(command)]


# ------------------------------------------------------------ module surface


def test_all_and_identity():
    assert E.__all__ == [
        "EinsumSpec",
        "LayoutReference",
        "RearrangeSpec",
        "ReduceSpec",
        "Token",
        "TokenKind",
        "einsum",
        "lex",
        "parse_einsum",
        "parse_layout_ref",
        "parse_rearrange",
        "parse_reduce",
        "rearrange",
        "reduce",
    ]
    for name in E.__all__:
        assert hasattr(E, name)
    # The parsers are not at the top level; the tensor-level forms are.
    for name in ("lex", "parse_rearrange", "Token", "EinsumSpec"):
        assert name not in strideweave.__all__
    assert E.__doc__


def test_doctests_run():
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(E, globs=vars(E).copy())
    assert sum(len(t.examples) for t in tests) > 20
    for test in tests:
        runner.run(test)
    assert runner.failures == 0


@pytest.mark.parametrize(
    "fn", [E.lex, E.parse_layout_ref, E.parse_rearrange, E.parse_reduce, E.parse_einsum]
)
def test_public_functions_have_structured_docstrings(fn):
    for part in ("Args:", "Returns:", "Examples:"):
        assert part in fn.__doc__


def test_token_dataclass():
    t = E.Token("symbol", "a", 0, 1)
    assert dataclasses.is_dataclass(t)
    assert [f.name for f in dataclasses.fields(t)] == ["kind", "value", "start", "end"]
    assert not hasattr(t, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.kind = "one"
    with pytest.raises(AttributeError):
        t.value = "b"
    assert t == E.Token("symbol", "a", 0, 1)
    assert hash(t) == hash(E.Token("symbol", "a", 0, 1))
    assert E.TokenKind.__doc__ and "left_paren" in E.TokenKind.__doc__
    assert set(E.TokenKind.__args__) == {
        "left_paren",
        "right_paren",
        "arrow",
        "comma",
        "one",
        "symbol",
    }


@pytest.mark.parametrize(
    ("cls", "names"),
    [
        (E.LayoutReference, ["tree", "symbol_ids"]),
        (E.RearrangeSpec, ["selection", "output", "symbol_ids"]),
        (E.ReduceSpec, ["selection", "output", "reduced", "rearrange_output", "symbol_ids"]),
        (
            E.EinsumSpec,
            [
                "lhs_selection",
                "rhs_selection",
                "lhs_rearrange_output",
                "rhs_rearrange_output",
                "matmul_output_selection",
                "output",
                "lhs_symbol_ids",
                "rhs_symbol_ids",
                "common_symbols",
                "batch_symbols",
            ],
        ),
    ],
)
def test_spec_dataclasses_are_frozen_and_slotted(cls, names):
    assert [f.name for f in dataclasses.fields(cls)] == names
    assert "__slots__" in vars(cls)
    params = cls.__dataclass_params__
    assert params.frozen


# --------------------------------------------------------------------- lexer


def test_lex_reference_example():
    assert toks("a (b c) -> a c") == [
        ("symbol", "a", 0, 1),
        ("left_paren", "(", 2, 3),
        ("symbol", "b", 3, 4),
        ("symbol", "c", 5, 6),
        ("right_paren", ")", 6, 7),
        ("arrow", "->", 8, 10),
        ("symbol", "a", 11, 12),
        ("symbol", "c", 13, 14),
    ]
    assert all(isinstance(t, E.Token) for t in E.lex("a"))


def test_lex_symbols_ones_commas_and_whitespace():
    assert toks("a a1 batch_size") == [
        ("symbol", "a", 0, 1),
        ("symbol", "a1", 2, 4),
        ("symbol", "batch_size", 5, 15),
    ]
    assert toks("1,1(") == [
        ("one", "1", 0, 1),
        ("comma", ",", 1, 2),
        ("one", "1", 2, 3),
        ("left_paren", "(", 3, 4),
    ]
    assert toks(" \t\n\r\f\va\v") == [("symbol", "a", 6, 7)]
    assert toks("") == []
    assert toks("1->x") == [("one", "1", 0, 1), ("arrow", "->", 1, 3), ("symbol", "x", 3, 4)]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("a - b", "Expected '->' arrow token at offset 2"),
        ("a -", "Expected '->' arrow token at offset 2"),
        ("a > b", "Unexpected '>' at offset 2"),
        ("1a", "Invalid singleton token at offset 0"),
        ("x 11", "Invalid singleton token at offset 2"),
        ("1_", "Invalid singleton token at offset 0"),
        ("2", "Invalid dimension symbol at offset 0"),
        ("a 01", "Invalid dimension symbol at offset 2"),
        ("a + b", "Unexpected character at offset 2"),
        ("[", "Unexpected character at offset 0"),
        ("_x", "Unexpected character at offset 0"),
        ("a\0b", "Unexpected character at offset 1"),
        ("a é", "Layout command must contain only ASCII characters at offset 2"),
        ("aé é", "Layout command must contain only ASCII characters at offset 1"),
        ("é+", "Layout command must contain only ASCII characters at offset 0"),
        ("a ✓ é", "Layout command must contain only ASCII characters at offset 2"),
    ],
)
def test_lex_errors(command, message):
    with pytest.raises(ValueError) as info:
        E.lex(command)
    assert str(info.value) == message
    assert any(w in message for w in ("Invalid", "Expected", "Unexpected", "ASCII"))


def test_lex_ascii_check_names_utf8_byte_offsets():
    # 'é' takes two bytes, so the second non-ASCII character is at byte 3.
    with pytest.raises(ValueError, match="at offset 0$"):
        E.lex("éé")
    with pytest.raises(ValueError, match="at offset 3$"):
        E.lex("a  é")


@pytest.mark.parametrize("bad", [None, 3, b"a -> a", ["a"]])
def test_lex_and_parsers_reject_non_strings(bad):
    for fn in (E.lex, E.parse_rearrange, E.parse_reduce, E.parse_einsum):
        with pytest.raises(TypeError) as info:
            fn(bad)
        assert str(info.value) == "command must be a str"


@settings(max_examples=200)
@given(st.text(alphabet="ab1_ ()->,+é2", max_size=20))
def test_lex_never_crashes_and_round_trips(command):
    try:
        tokens = E.lex(command)
    except ValueError as e:
        assert "at offset" in str(e)
        return
    data = command.encode()
    for t in tokens:
        assert data[t.start : t.end].decode() == t.value
        assert t.kind in E.TokenKind.__args__


# --------------------------------------------------------- layout references


def test_layout_ref_tree_and_ids():
    ref = E.parse_layout_ref(E.lex("a (b c)"))
    assert isinstance(ref, E.LayoutReference)
    assert ref.tree == Tree(Leaf, Tree(Leaf, Leaf))
    assert isinstance(ref.tree, Tree)
    assert ref.symbol_ids == (("a", 0), ("b", 1), ("c", 2))
    ref = E.parse_layout_ref(E.lex("1 a (1 (b))"))
    assert ref.tree == Tree(Leaf, Leaf, Tree(Leaf, Tree(Leaf)))
    assert ref.symbol_ids == (("a", 1), ("b", 3))
    # Tuples of tokens and hand-made tokens work too.
    made = (E.Token("symbol", "x", 0, 1), E.Token("one", "1", 2, 3))
    assert E.parse_layout_ref(made).symbol_ids == (("x", 0),)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("a )", "Unmatched right parenthesis at offset 2"),
        ("a (b", "Unclosed left parenthesis at offset 2"),
        ("(a (b) (c", "Unclosed left parenthesis at offset 7"),
        ("a ()", "Empty parenthesized group at offset 3"),
        ("a, b", "Commas are not valid in layout references at offset 1"),
        ("a -> b", "Arrows are not valid in layout references at offset 2"),
        ("", "Layout reference must not be empty"),
        ("a (", "Layout reference must not be empty"),
        ("a b a", "Duplicate dimension symbol 'a' at offset 4"),
        ("a (b (a))", "Duplicate dimension symbol 'a' at offset 6"),
    ],
)
def test_layout_ref_errors(command, message):
    with pytest.raises(ValueError) as info:
        E.parse_layout_ref(E.lex(command))
    assert str(info.value) == message


@pytest.mark.parametrize("bad", [[("symbol", "a", 0, 1)], ["a"], [None], 5])
def test_layout_ref_needs_tokens(bad):
    with pytest.raises(TypeError) as info:
        E.parse_layout_ref(bad)
    assert str(info.value) == "layout reference tokens must be Token objects"


def test_layout_ref_rejects_a_token_of_unknown_kind():
    with pytest.raises(TypeError, match="^layout reference tokens must be Token objects$"):
        E.parse_layout_ref([E.Token("bogus", "a", 0, 1)])  # type: ignore[arg-type]


# ----------------------------------------------------------------- rearrange


def test_rearrange_specs():
    s = E.parse_rearrange("a (b c) -> a c")
    assert isinstance(s, E.RearrangeSpec)
    assert s.selection == Tree(Leaf, Tree(Leaf, Leaf))
    assert s.output == ids(0, 2)
    assert s.symbol_ids == (("a", 0), ("b", 1), ("c", 2))
    s = E.parse_rearrange("1 a -> a")
    assert s.output == ids(1) and s.symbol_ids == (("a", 1),)
    s = E.parse_rearrange("a -> a 1")
    assert s.output == Tree(Node.id(0), Leaf)
    s = E.parse_rearrange("a b c -> (c (b a)) 1")
    assert s.output == Tree(Tree(Node.id(2), Tree(Node.id(1), Node.id(0))), Leaf)
    assert isinstance(s.output[0], Tree)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("a b", "Rearrange command must contain one '->' arrow"),
        ("a -> b -> c", "Rearrange command must contain only one '->' arrow"),
        ("a, b -> a", "Commas are not valid in layout references at offset 1"),
        ("a b -> a, b", "Commas are not valid in layout references at offset 8"),
        ("a b -> x", "Unknown dimension symbol 'x' at offset 7"),
        ("a b -> a a", "Duplicate output dimension symbol 'a' at offset 9"),
        ("a b -> (a) b)", "Unmatched right parenthesis at offset 12"),
        ("a b -> (a b", "Unclosed left parenthesis at offset 7"),
        ("a b -> ()", "Empty parenthesized group at offset 8"),
        ("-> a", "Layout reference must not be empty"),
        ("a ->", "Layout reference must not be empty"),
        ("a a -> a", "Duplicate dimension symbol 'a' at offset 2"),
        ("a -> 2", "Invalid dimension symbol at offset 5"),
    ],
)
def test_rearrange_errors(command, message):
    with pytest.raises(ValueError) as info:
        E.parse_rearrange(command)
    assert str(info.value) == message


# -------------------------------------------------------------------- reduce


def test_reduce_specs():
    s = E.parse_reduce("a (c d) b -> a c")
    assert isinstance(s, E.ReduceSpec)
    assert s.selection == Tree(Leaf, Tree(Leaf, Leaf), Leaf)
    assert s.output == ids(0, 1)
    assert s.reduced == ids(2, 3)
    assert s.rearrange_output == Tree(ids(0, 1), ids(2, 3))
    assert s.symbol_ids == (("a", 0), ("c", 1), ("d", 2), ("b", 3))
    s = E.parse_reduce("a b -> 1")
    assert s.output == Tree(Leaf) and s.reduced == ids(0, 1)
    s = E.parse_reduce("1 a b -> b a")
    assert s.reduced == ids(0), "a literal 1 is a reduced piece"
    s = E.parse_reduce("a b c -> (c a)")
    assert s.rearrange_output == Tree(Tree(ids(2, 0)), ids(1))


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("a b", "Reduce command must contain one '->' arrow"),
        ("a -> -> a", "Reduce command must contain only one '->' arrow"),
        ("a b -> a b", "Reduce command must omit at least one dimension"),
        ("a b -> (b a) 1", "Reduce command must omit at least one dimension"),
        ("a b -> c", "Unknown dimension symbol 'c' at offset 7"),
        ("a b -> a a", "Duplicate output dimension symbol 'a' at offset 9"),
        ("a b ->", "Layout reference must not be empty"),
    ],
)
def test_reduce_errors(command, message):
    with pytest.raises(ValueError) as info:
        E.parse_reduce(command)
    assert str(info.value) == message


# -------------------------------------------------------------------- einsum


def test_einsum_specs():
    s = E.parse_einsum("a b, c b -> a c")
    assert isinstance(s, E.EinsumSpec)
    assert s.lhs_selection == Tree(Leaf, Leaf) == s.rhs_selection
    assert s.lhs_rearrange_output == Tree(ids(0), ids(1)) == s.rhs_rearrange_output
    assert s.matmul_output_selection == Tree(Tree(Leaf), Tree(Leaf))
    assert s.output == ids(0, 1)
    assert s.lhs_symbol_ids == (("a", 0), ("b", 1))
    assert s.rhs_symbol_ids == (("c", 0), ("b", 1))
    assert s.common_symbols == ("b",)
    assert s.batch_symbols == ()
    s = E.parse_einsum("a b c, d c b -> a d")
    assert s.lhs_rearrange_output == Tree(ids(0), ids(1, 2))
    assert s.rhs_rearrange_output == Tree(ids(0), ids(2, 1))
    assert s.common_symbols == ("b", "c")
    s = E.parse_einsum("a b, b -> a")
    assert s.rhs_rearrange_output == Tree(Tree(Leaf), ids(0))
    assert s.matmul_output_selection == Tree(Tree(Leaf), Tree(Leaf))
    s = E.parse_einsum("b, b -> 1")
    assert s.output == Tree(Leaf)
    assert s.lhs_rearrange_output == Tree(Tree(Leaf), ids(0))
    s = E.parse_einsum("k, c k -> c")
    assert s.output == ids(1), "an lhs without outer symbols skips one id"
    s = E.parse_einsum("a (b k) 1, c k -> (c a) b")
    assert s.lhs_selection == Tree(Leaf, Tree(Leaf, Leaf), Leaf)
    assert s.lhs_symbol_ids == (("a", 0), ("b", 1), ("k", 2))
    assert s.lhs_rearrange_output == Tree(ids(0, 1), ids(2))
    assert s.matmul_output_selection == Tree(Tree(Leaf, Leaf), Tree(Leaf))
    assert s.output == Tree(ids(2, 0), Node.id(1))


def test_batched_einsum_specs():
    s = E.parse_einsum("b i k, b j k -> b i j")
    assert s.lhs_rearrange_output == Tree(ids(1), ids(2), ids(0))
    assert s.rhs_rearrange_output == Tree(ids(1), ids(2), ids(0))
    assert s.matmul_output_selection == Tree(Tree(Leaf), Tree(Leaf), Tree(Leaf))
    assert s.output == ids(2, 0, 1)
    assert s.common_symbols == ("b", "k")
    assert s.batch_symbols == ("b",)
    # Nothing contracted: the inner group is a singleton.
    s = E.parse_einsum("a b, c b -> a b c")
    assert s.lhs_rearrange_output == Tree(ids(0), Tree(Leaf), ids(1))
    assert s.output == ids(0, 2, 1)
    # No outer symbols on either side: both singleton groups take an id.
    s = E.parse_einsum("b k, b k -> b")
    assert s.lhs_rearrange_output == Tree(Tree(Leaf), ids(1), ids(0))
    assert s.output == ids(2)
    s = E.parse_einsum("k (b i), b j k -> (i j) b")
    assert s.lhs_rearrange_output == Tree(ids(2), ids(0), ids(1))
    assert s.rhs_rearrange_output == Tree(ids(1), ids(2), ids(0))
    assert s.output == Tree(ids(0, 1), Node.id(2))
    s = E.parse_einsum("x b y, y b x -> y x")
    assert s.batch_symbols == ("x", "y")
    assert s.lhs_rearrange_output == Tree(Tree(Leaf), ids(1), ids(0, 2))
    assert s.rhs_rearrange_output == Tree(Tree(Leaf), ids(1), ids(2, 0))
    assert s.output == ids(3, 2)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("a b, c b", "Einsum command must contain one '->' arrow"),
        ("a b, c b -> a -> c", "Einsum command must contain only one '->' arrow"),
        ("a b -> a", "Contraction command must contain one comma before '->'"),
        ("a b, b, b -> a", "Contraction command must contain only one comma before '->'"),
        ("a b, c b -> a, c", "Commas are not valid in layout references at offset 13"),
        ("a, c -> a c", "Contraction command must include at least one shared dimension"),
        ("a b, c b -> a c x", "Unknown dimension symbol 'x' at offset 16"),
        ("a b, c b -> a b c b", "Duplicate output dimension symbol 'b' at offset 18"),
        ("z a b, c b y -> a", "Einsum output must include every non-shared input symbol: c, y, z"),
        ("a b, c b -> c c", "Duplicate output dimension symbol 'c' at offset 14"),
        ("a a, c a -> c", "Duplicate dimension symbol 'a' at offset 2"),
        ("a b, c c -> a", "Duplicate dimension symbol 'c' at offset 7"),
        (", b -> b", "Layout reference must not be empty"),
        ("b, -> b", "Layout reference must not be empty"),
        ("a (b, b) -> a", "Unclosed left parenthesis at offset 2"),
    ],
)
def test_einsum_errors(command, message):
    with pytest.raises(ValueError) as info:
        E.parse_einsum(command)
    assert str(info.value) == message


# --------------------------------------------------------------------- cache


def test_cache_returns_identical_specs():
    for parse, command in (
        (E.parse_rearrange, "p q -> q p"),
        (E.parse_reduce, "p q -> q"),
        (E.parse_einsum, "p q, r q -> p r"),
    ):
        first = parse(command)
        assert parse(command) is first
        assert parse("".join(command)) is first, "equal strings, not the same object"
    # A separate cache per command kind.
    assert E.parse_rearrange("u v -> u") is not E.parse_reduce("u v -> u")
    assert E.parse_reduce("u v -> u") is E.parse_reduce("u v -> u")


def test_failures_are_not_cached():
    for _ in range(3):
        with pytest.raises(ValueError, match="^Reduce command must omit at least one dimension$"):
            E.parse_reduce("a b -> b a")
        with pytest.raises(TypeError):
            E.parse_rearrange(None)
    # A command failing in one kind still compiles in another.
    assert isinstance(E.parse_rearrange("a b -> b a"), E.RearrangeSpec)
    with pytest.raises(ValueError):
        E.parse_reduce("a b -> b a")


def test_cache_is_shared_with_tensor_level_forms():
    spec = E.parse_rearrange("h w -> w h")
    x = strideweave.Tensor(
        strideweave.Generic([1.0, 2.0]),
        0,
        strideweave.Layout(strideweave.Shape(1, 2), strideweave.Stride(1, 1)),
    )
    y = E.rearrange(x, "h w -> w h")
    assert y.autograd_ctx is not None
    assert E.parse_rearrange("h w -> w h") is spec


@pytest.mark.threads
def test_cache_is_thread_safe():
    # Fresh commands, compiled by four threads at once: one spec each.
    commands = [f"t{i} b -> b t{i}" for i in range(200)]
    seen = [[] for _ in range(4)]
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        for _ in range(5):
            seen[k].append([E.parse_rearrange(c) for c in commands])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = seen[0][0]
    for rounds in seen:
        for specs in rounds:
            assert all(a is b for a, b in zip(specs, first, strict=True))


def test_many_commands_stay_correct_past_the_cache_bound():
    specs = {}
    for i in range(1100):
        c = f"x{i} y -> y x{i}"
        specs[c] = E.parse_rearrange(c)
        assert specs[c].symbol_ids == ((f"x{i}", 0), ("y", 1))
    assert E.parse_rearrange("x1099 y -> y x1099") is specs["x1099 y -> y x1099"]
    assert E.parse_rearrange("x0 y -> y x0").symbol_ids == (("x0", 0), ("y", 1))


@settings(max_examples=200)
@given(st.text(alphabet="abc1 ()->,", max_size=24))
def test_parsers_raise_value_errors_only(command):
    for parse in (E.parse_rearrange, E.parse_reduce, E.parse_einsum):
        try:
            spec = parse(command)
        except ValueError as e:
            assert str(e)
        else:
            assert parse(command) is spec


def test_limits_and_encodings():
    deep = "(" * 300 + "a" + ")" * 300 + " -> a"
    with pytest.raises(ValueError) as info:
        E.parse_rearrange(deep)
    assert str(info.value) == "Layout reference nests parentheses deeper than 256 at offset 256"
    ok = "(" * 256 + "a" + ")" * 256 + " -> a"
    assert E.parse_rearrange(ok).output == ids(0)
    with pytest.raises(UnicodeEncodeError):
        E.parse_rearrange("a \ud800 -> a")
    # Any iterable of tokens is accepted.
    assert E.parse_layout_ref(t for t in E.lex("a b")).symbol_ids == (("a", 0), ("b", 1))
