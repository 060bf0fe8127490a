"""Layout command strings: rearrange, reduce and einsum described by text."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from strideweave.core.layout import Tree
from strideweave.tensor import Tensor

__all__ = [
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

TokenKind = Literal["left_paren", "right_paren", "arrow", "comma", "one", "symbol"]

@dataclass(frozen=True, slots=True)
class Token:
    """One token of a layout command.

    Attributes:
        kind: the token kind (see ``TokenKind``).
        value: the token's text (``"("``, ``"->"``, ``"1"``, a symbol name...).
        start: the byte offset of its first character.
        end: the byte offset just past it.

    Examples:
        >>> Token("symbol", "a", 0, 1)
        Token(kind='symbol', value='a', start=0, end=1)
    """

    kind: TokenKind
    value: str
    start: int
    end: int

@dataclass(frozen=True, slots=True)
class LayoutReference:
    """A parsed layout reference.

    Attributes:
        tree: the reference's nesting, with ``Node.Leaf`` leaves.
        symbol_ids: ``(name, id)`` per symbol in textual order; leaves are
            numbered in textual order and a literal 1 uses up an id.

    Examples:
        >>> from strideweave import Node, Tree
        >>> ref = parse_layout_ref(lex("a (b c)"))
        >>> ref.tree == Tree(Node.Leaf, Tree(Node.Leaf, Node.Leaf)), ref.symbol_ids
        (True, (('a', 0), ('b', 1), ('c', 2)))
    """

    tree: Tree
    symbol_ids: tuple[tuple[str, int], ...]

@dataclass(frozen=True, slots=True)
class RearrangeSpec:
    """A compiled rearrange command.

    Attributes:
        selection: the left-hand tree (which pieces are extracted).
        output: the right-hand tree of ``Node.id`` markers (and ``Node.Leaf``
            singletons).
        symbol_ids: ``(name, id)`` of the left-hand symbols.

    Examples:
        >>> from strideweave import Node, Tree
        >>> parse_rearrange("a -> a 1").output == Tree(Node.id(0), Node.Leaf)
        True
    """

    selection: Tree
    output: Tree
    symbol_ids: tuple[tuple[str, int], ...]

@dataclass(frozen=True, slots=True)
class ReduceSpec:
    """A compiled reduce command.

    Attributes:
        selection: the left-hand tree.
        output: the kept pieces, as ids.
        reduced: the ids of the pieces summed over, ascending.
        rearrange_output: ``Tree(output, reduced)``, the two-mode
            intermediate the sum runs on.
        symbol_ids: ``(name, id)`` of the left-hand symbols.

    Examples:
        >>> from strideweave import Node, Tree
        >>> parse_reduce("a (c d) b -> a c").reduced == Tree(Node.id(2), Node.id(3))
        True
    """

    selection: Tree
    output: Tree
    reduced: Tree
    rearrange_output: Tree
    symbol_ids: tuple[tuple[str, int], ...]

@dataclass(frozen=True, slots=True)
class EinsumSpec:
    """A compiled einsum command.

    Attributes:
        lhs_selection: the lhs tree.
        rhs_selection: the rhs tree.
        lhs_rearrange_output: ``Tree(outer, inner)`` for the lhs, or
            ``Tree(outer, inner, batch)`` when there are batch symbols.
        rhs_rearrange_output: the same for the rhs.
        matmul_output_selection: the product's pieces (one group per outer
            side, and one for the batch symbols if any).
        output: the output tree, with ids of the product's pieces.
        lhs_symbol_ids: ``(name, id)`` of the lhs symbols.
        rhs_symbol_ids: ``(name, id)`` of the rhs symbols.
        common_symbols: the symbols of both sides, in lhs order.
        batch_symbols: the shared symbols the output names, in lhs order.

    Examples:
        >>> spec = parse_einsum("b i k, b j k -> b i j")
        >>> spec.common_symbols, spec.batch_symbols
        (('b', 'k'), ('b',))
    """

    lhs_selection: Tree
    rhs_selection: Tree
    lhs_rearrange_output: Tree
    rhs_rearrange_output: Tree
    matmul_output_selection: Tree
    output: Tree
    lhs_symbol_ids: tuple[tuple[str, int], ...]
    rhs_symbol_ids: tuple[tuple[str, int], ...]
    common_symbols: tuple[str, ...]
    batch_symbols: tuple[str, ...] = ()

def lex(command: str) -> list[Token]:
    """Splits a layout command into tokens.

    Args:
        command: the command text (ASCII only; whitespace is skipped).

    Returns:
        list[Token]: the tokens in order.

    Raises:
        TypeError: 'command must be a str'.
        ValueError: a message naming the byte offset, such as 'Unexpected
            character at offset N'.

    Examples:
        >>> [(t.kind, t.start) for t in lex("a -> a")]
        [('symbol', 0), ('arrow', 2), ('symbol', 5)]
    """

def parse_layout_ref(tokens: Iterable[Token]) -> LayoutReference:
    """Parses tokens as one layout reference (``item+``).

    Args:
        tokens: Token objects, such as ``lex(...)`` gives.

    Returns:
        LayoutReference: the tree and the symbol bindings.

    Raises:
        TypeError: 'layout reference tokens must be Token objects'.
        ValueError: 'Unmatched right parenthesis at offset N' and the other
            reference rules.

    Examples:
        >>> parse_layout_ref(lex("1 a")).symbol_ids
        (('a', 1),)
    """

def parse_rearrange(command: str) -> RearrangeSpec:
    """Compiles a rearrange command (cached).

    Args:
        command: ``ref -> ref``.

    Returns:
        RearrangeSpec: the identical object for a repeated command.

    Raises:
        TypeError: 'command must be a str'.
        ValueError: "Rearrange command must contain one '->' arrow" and the
            lexer and reference rules.

    Examples:
        >>> from strideweave import Node, Tree
        >>> parse_rearrange("1 a -> a").output == Tree(Node.id(1))
        True
    """

def parse_reduce(command: str) -> ReduceSpec:
    """Compiles a reduce command (cached).

    Args:
        command: ``ref -> ref``, omitting at least one left-hand piece.

    Returns:
        ReduceSpec: the identical object for a repeated command.

    Raises:
        TypeError: 'command must be a str'.
        ValueError: 'Reduce command must omit at least one dimension' and the
            lexer and reference rules.

    Examples:
        >>> from strideweave import Node, Tree
        >>> spec = parse_reduce("a b -> 1")
        >>> spec.rearrange_output == Tree(Tree(Node.Leaf), Tree(Node.id(0), Node.id(1)))
        True
    """

def parse_einsum(command: str) -> EinsumSpec:
    """Compiles an einsum command (cached).

    Args:
        command: ``ref, ref -> ref``; the sides share at least one symbol.

    Returns:
        EinsumSpec: the identical object for a repeated command.

    Raises:
        TypeError: 'command must be a str'.
        ValueError: "Contraction command must contain one comma before '->'",
            'Einsum output must include every non-shared input symbol: x, y'
            and the lexer and reference rules.

    Examples:
        >>> from strideweave import Node, Tree
        >>> parse_einsum("a b, c b -> a c").output == Tree(Node.id(0), Node.id(1))
        True
    """

def rearrange(tensor: Tensor, description: str) -> Tensor:
    """A view of ``tensor`` rearranged by a command (no data is copied).

    Args:
        tensor: the input Tensor.
        description: a rearrange command, such as ``"a b -> b a"``.

    Returns:
        Tensor: a view on the same carrier; its ctx is a RearrangeOperation.

    Raises:
        TypeError: 'description must be a str', 'tensor must be a Tensor'.
        ValueError: from the parser, or from ``Layout.rearrange``.

    Examples:
        >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
        >>> x = Tensor(Generic(list(range(6))), 0, Layout(Shape(2, 3), Stride(1, 2)))
        >>> rearrange(x, "a b -> b a").layout
        (3,2):(2,1)
    """

def reduce(tensor: Tensor, description: str) -> Tensor:
    """Sums ``tensor`` over the pieces a command omits.

    The tensor is rearranged into ``(kept, reduced)`` and the carrier's
    two-mode reduce sums mode 1; the result is canonical over the kept
    pieces (``-> a c`` gives flat modes, ``-> (a c)`` one nested mode,
    ``-> 1`` exactly ``1:1``).

    Args:
        tensor: the input Tensor.
        description: a reduce command, such as ``"a b -> a"``.

    Returns:
        Tensor: the sums, in fresh storage.

    Raises:
        TypeError: 'description must be a str', 'tensor must be a Tensor'.
        ValueError: from the parser, or from ``Layout.rearrange``.

    Examples:
        >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
        >>> x = Tensor(Generic([1, 2, 3, 4, 5, 6]), 0, Layout(Shape(2, 3), Stride(1, 2)))
        >>> y = reduce(x, "a b -> b")
        >>> y.layout, [y[i] for i in range(3)]
        (3:1, [3, 7, 11])
    """

def einsum(lhs: Tensor, rhs: Tensor, description: str) -> Tensor:
    """Contracts two tensors by a command.

    Shared symbols not in the output are summed over through the carrier's
    matmul; shared symbols named in the output are batch symbols and use the
    batched matmul. The result is a rearranged view of the product.

    Args:
        lhs: the left Tensor.
        rhs: the right Tensor, over a carrier of exactly the same class.
        description: an einsum command, such as ``"a b, c b -> a c"``.

    Returns:
        Tensor: the contraction.

    Raises:
        TypeError: 'description must be a str', 'lhs must be a Tensor', 'rhs
            must be a Tensor', 'Tensor backing carriers must match'.
        ValueError: from the parser, and "Einsum shared dimension 'b' has
            mismatched logical size".

    Examples:
        >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
        >>> a = Tensor(Generic([1.0, 2.0, 3.0, 4.0]), 0, Layout(Shape(2, 2), Stride(1, 2)))
        >>> y = einsum(a, a, "i k, j k -> i j")
        >>> y.layout, y[0, 1]
        ((2,2):(1,2), 14.0)
    """
