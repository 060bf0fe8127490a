"""The layout subsystem: trees of markers, shapes, strides and layouts."""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, SupportsIndex, TypeAlias, final, overload

from typing_extensions import disjoint_base

__all__ = ["Layout", "Node", "Shape", "Stride", "Tiler", "Tree"]

@dataclass(frozen=True)
class NodeId:
    """A leaf marker that names item ``id``; made by ``Node.id(k)``.

    Args:
        id: the item the leaf names, a non-negative int.

    Returns:
        NodeId: the marker; equal markers have equal ids and hash alike.

    Raises:
        TypeError: 'Node leaf id must be an integer'.
        ValueError: 'Node leaf id must be non-negative'.

    Examples:
        >>> Node.id(3)
        Node.id(3)
        >>> Node.id(1) == Node.id(1), Node.id(1) == Node.Leaf
        (True, False)
    """

    id: int
    def __post_init__(self) -> None: ...

class Node(Enum):
    """The instructions of a tree recipe, and the unnamed leaf marker.

    ``Leaf`` is a leaf (unnamed in id trees), ``Push`` opens a nested level
    and ``Pop`` closes it. ``Node.id(k)`` makes a leaf marker naming item k.

    Examples:
        >>> list(Node)
        [<Node.Leaf: 1>, <Node.Push: 2>, <Node.Pop: 3>]
        >>> Node.id(0)
        Node.id(0)
    """

    Leaf = 1
    Push = 2
    Pop = 3
    @staticmethod
    def id(k: int) -> NodeId:
        """Builds a leaf marker that names item ``k``.

        Args:
            k: the item, a non-negative int (bool is accepted).

        Returns:
            NodeId: the marker ``Node.id(k)``, a frozen dataclass.

        Raises:
            TypeError: 'Node leaf id must be an integer'.
            ValueError: 'Node leaf id must be non-negative'.

        Examples:
            >>> Node.id(2)
            Node.id(2)
        """

@disjoint_base
class Tree(tuple[Any, ...]):
    """An immutable hierarchy of leaf markers.

    Items may be ints (stored as ``Node.Leaf``; the value is discarded),
    ``Node.Leaf``, ``Node.id(k)`` markers or ``Tree`` subtrees. Equality and
    hashing are those of tuples.

    Args:
        *items: the top-level items.

    Returns:
        Tree: the tree, with attributes ``size`` (the number of leaf markers)
        and ``depth`` (1 + the deepest subtree).

    Raises:
        ValueError: an item of another kind (message begins 'Tree can only
            accept integers or Node.Leaf for leaf markers').

    Examples:
        >>> t = Tree(1, Tree(Node.id(3), 1))
        >>> t
        (<Node.Leaf: 1>, (Node.id(3), <Node.Leaf: 1>))
        >>> t.size, t.depth
        (3, 2)
    """

    size: int
    depth: int
    def __new__(cls, *items: int | Node | NodeId | Tree) -> Tree: ...
    def __getnewargs__(self) -> tuple[Any, ...]: ...  # type: ignore[override]
    @staticmethod
    def norm(iterable: Iterable[object]) -> tuple[list[Any], int, int]:
        """Normalizes tree items.

        Args:
            iterable: the items of one level.

        Returns:
            tuple[list, int, int]: the items with ints replaced by
            ``Node.Leaf``, the depth of the level and its number of leaves.

        Raises:
            ValueError: an item that is not an int, a leaf marker or a Tree.

        Examples:
            >>> Tree.norm([1, Tree(1, 1)])
            ([<Node.Leaf: 1>, (<Node.Leaf: 1>, <Node.Leaf: 1>)], 2, 3)
        """
    @staticmethod
    def get_recipe(t: Iterable[object]) -> list[Node]:
        """The pre-order instructions of a tree.

        Args:
            t: a Tree (or any nesting of Trees and leaf markers).

        Returns:
            list[Node]: ``Leaf`` for each leaf marker, ``Push ... Pop``
            around each subtree.

        Examples:
            >>> [n.name for n in Tree.get_recipe(Tree(1, Tree(1, 1)))]
            ['Leaf', 'Push', 'Leaf', 'Leaf', 'Pop']
        """
    @staticmethod
    def bake(iterable: Iterable[Any], recipe: Sequence[Node]) -> list[Any]:
        """Distributes values into nested lists following a recipe.

        Args:
            iterable: the values, one per ``Leaf`` of the recipe.
            recipe: a pre-order list of ``Leaf``, ``Push`` and ``Pop``.

        Returns:
            list: the values nested as the recipe says.

        Raises:
            ValueError: 'Iterable object to bake does not match recipe
                length' when the values run short.

        Examples:
            >>> Tree.bake("ABC", [Node.Leaf, Node.Push, Node.Leaf, Node.Leaf, Node.Pop])
            ['A', ['B', 'C']]
        """
    @staticmethod
    def bake_tree(recipe: Sequence[Node]) -> Tree:
        """Builds a Tree of ``Node.Leaf`` markers from a recipe.

        Args:
            recipe: a pre-order list of ``Leaf``, ``Push`` and ``Pop``.

        Returns:
            Tree: the tree the recipe describes.

        Examples:
            >>> Tree.bake_tree([Node.Leaf, Node.Push, Node.Leaf, Node.Pop])
            (<Node.Leaf: 1>, (<Node.Leaf: 1>,))
        """
    @property
    def recipe(self) -> list[Node]:
        """The pre-order instructions of this tree (see ``Tree.get_recipe``).

        Returns:
            list[Node]: the recipe.

        Examples:
            >>> [n.name for n in Tree(1, Tree(1)).recipe]
            ['Leaf', 'Push', 'Leaf', 'Pop']
        """
    def reshape(self, iterable: Iterable[Any]) -> list[Any]:
        """Nests values like this tree.

        Args:
            iterable: the values, one per leaf.

        Returns:
            list: the values in nested lists.

        Raises:
            ValueError: when the values run short.

        Examples:
            >>> Tree(1, Tree(1, 1)).reshape("ABC")
            ['A', ['B', 'C']]
        """

# What Shape(...) and Stride(...) accept as elements: ints, nested iterables
# of them, and Shape or Stride objects.
_TreeInput: TypeAlias = int | Iterable[Any]
# A layout key: a logical index or a (nested) sequence of coordinates.
_Key: TypeAlias = int | Sequence[Any]
# An id tree: a Tree, or nested tuples of ints, Node.Leaf and Node.id markers.
_IdTree: TypeAlias = tuple[Any, ...]

@final
class Shape:
    """A hierarchical tree of positive extents, immutable.

    With no argument the shape is empty. One argument is the top level: an int n means [n], any
    other iterable lists the top-level elements. Several arguments form the top level. Nested
    lists or tuples nest; a Shape element holding one integer collapses to it, any other Shape
    element nests.

    Args:
        *items: ints (each >= 1) and nested iterables of them.

    Returns:
        Shape: the new shape.

    Raises:
        ValueError: an extent < 1 ('Dimension shape must not be less than 1'), an element that
            is neither an int nor an iterable, or a size that does not fit in 64 bits.
        TypeError: a single argument that is neither an int nor an iterable (a float, a str).

    Examples:
        >>> Shape(2, [3, 4])
        Shape<(2, (3, 4))>
        >>> Shape(5) == Shape([5])
        True
    """

    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, *items: _TreeInput) -> Shape:
        """Create and return a new object.  See help(type) for accurate signature."""
    @property
    def top_level(self) -> tuple[Any, ...]:
        """The top level as nested tuples of ints.

        Returns:
            tuple: one entry per top-level element; nested levels are tuples.

        Examples:
            >>> Shape(2, [3, 4]).top_level
            (2, (3, 4))
        """
    @property
    def depth(self) -> int:
        """Nesting depth: 1 for a flat (or empty) tree.

        Returns:
            int: 1 + the depth of the deepest nested element.

        Examples:
            >>> Shape([2, [3, [4]]]).depth
            3
        """
    @property
    def is_int(self) -> bool:
        """True when the tree has at most one element and is flat.

        Returns:
            bool: len(tree) <= 1 and depth <= 1 (the empty tree counts).

        Examples:
            >>> Shape(4).is_int, Shape(2, 3).is_int
            (True, False)
        """
    @property
    def logical_size(self) -> int:
        """The number of elements: the product of the extents (1 when empty).

        Returns:
            int: the logical size.

        Examples:
            >>> Shape(2, [3, 4]).size
            24
        """
    @property
    def size(self) -> int:
        """The number of elements: the product of the extents (1 when empty).

        Returns:
            int: the logical size.

        Examples:
            >>> Shape(2, [3, 4]).size
            24
        """
    @classmethod
    def concat(cls, a: Shape, b: Shape, /) -> Shape:
        """Joins the top-level elements of a and b.

        Args:
            a: the first tree.
            b: the second tree, of the same class.

        Returns:
            The tree whose top level is a's elements then b's.

        Examples:
            >>> Shape.concat(Shape(2), Shape(3, [4, 5]))
            Shape<(2, 3, (4, 5))>
        """
    @classmethod
    def append(cls, a: Shape, b: Shape, /) -> Shape:
        """Appends b to a: concatenated when b.is_int, else one nested element.

        Args:
            a: the first tree.
            b: the tree to append, of the same class.

        Returns:
            The joined tree.

        Examples:
            >>> Shape.append(Shape(2), Shape(3, 4))
            Shape<(2, (3, 4))>
            >>> Shape.append(Shape(2), Shape(3))
            Shape<(2, 3)>
        """
    def __int__(self) -> int:
        """int(self)"""
    def __len__(self) -> int:
        """Return len(self)."""
    @overload
    def __getitem__(self, key: SupportsIndex, /) -> Shape: ...
    @overload
    def __getitem__(self, key: slice, /) -> Shape: ...
    def __iter__(self) -> Iterator[Shape]:
        """Implement iter(self)."""
    def __eq__(self, other: object, /) -> bool:
        """Return self==value."""
    def __ne__(self, other: object, /) -> bool:
        """Return self!=value."""
    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling support: rebuilds an equal value."""

@final
class Stride:
    """A hierarchical tree of non-negative strides, immutable.

    Built like Shape: no argument is empty, one argument is the top level (an int n means [n]),
    several arguments form the top level, nested iterables nest.

    Args:
        *items: ints (each >= 0) and nested iterables of them.

    Returns:
        Stride: the new stride tree.

    Raises:
        ValueError: a negative value ('Stride value must not be negative') or an element that is
            neither an int nor an iterable.
        TypeError: a single argument that is neither an int nor an iterable.

    Examples:
        >>> Stride([1, [10, 100]])
        Stride<(1, (10, 100))>
        >>> Stride(0) == Stride([0])
        True
    """

    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, *items: _TreeInput) -> Stride:
        """Create and return a new object.  See help(type) for accurate signature."""
    @property
    def top_level(self) -> tuple[Any, ...]:
        """The top level as nested tuples of ints.

        Returns:
            tuple: one entry per top-level element; nested levels are tuples.

        Examples:
            >>> Shape(2, [3, 4]).top_level
            (2, (3, 4))
        """
    @property
    def depth(self) -> int:
        """Nesting depth: 1 for a flat (or empty) tree.

        Returns:
            int: 1 + the depth of the deepest nested element.

        Examples:
            >>> Shape([2, [3, [4]]]).depth
            3
        """
    @property
    def is_int(self) -> bool:
        """True when the tree has at most one element and is flat.

        Returns:
            bool: len(tree) <= 1 and depth <= 1 (the empty tree counts).

        Examples:
            >>> Shape(4).is_int, Shape(2, 3).is_int
            (True, False)
        """
    @classmethod
    def concat(cls, a: Stride, b: Stride, /) -> Stride:
        """Joins the top-level elements of a and b.

        Args:
            a: the first tree.
            b: the second tree, of the same class.

        Returns:
            The tree whose top level is a's elements then b's.

        Examples:
            >>> Shape.concat(Shape(2), Shape(3, [4, 5]))
            Shape<(2, 3, (4, 5))>
        """
    @classmethod
    def append(cls, a: Stride, b: Stride, /) -> Stride:
        """Appends b to a: concatenated when b.is_int, else one nested element.

        Args:
            a: the first tree.
            b: the tree to append, of the same class.

        Returns:
            The joined tree.

        Examples:
            >>> Shape.append(Shape(2), Shape(3, 4))
            Shape<(2, (3, 4))>
            >>> Shape.append(Shape(2), Shape(3))
            Shape<(2, 3)>
        """
    def __int__(self) -> int:
        """int(self)"""
    def __len__(self) -> int:
        """Return len(self)."""
    @overload
    def __getitem__(self, key: SupportsIndex, /) -> Stride: ...
    @overload
    def __getitem__(self, key: slice, /) -> Stride: ...
    def __iter__(self) -> Iterator[Stride]:
        """Implement iter(self)."""
    def __eq__(self, other: object, /) -> bool:
        """Return self==value."""
    def __ne__(self, other: object, /) -> bool:
        """Return self!=value."""
    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling support: rebuilds an equal value."""

@final
class Layout:
    """A CuTe-style layout: a function from logical coordinates to indices.

    A layout pairs a Shape with a congruent Stride. Index i of the logical domain is split
    colexicographically (the first mode varies fastest, at every level) and mapped to
    sum(coordinate * stride). Layouts are immutable values; str() and repr() give the CuTe form
    shape:stride.

    Args:
        shape: the extents, a Shape.
        stride: the strides, a Stride of the same structure.

    Returns:
        Layout: the new layout.

    Raises:
        ValueError: 'shape input must be a Shape object', 'stride input must be a Stride
            object', 'Shape and Stride do not match in Structure', or a cosize that does not fit
            in 64 bits.

    Examples:
        >>> L = Layout(Shape([2, [3, 4]]), Stride([1, [10, 100]]))
        >>> L
        (2,(3,4)):(1,(10,100))
        >>> L.size, L.cosize, L(23), L([1, [2, 3]])
        (24, 322, 321, 321)
    """

    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, shape: Shape, stride: Stride) -> Layout:
        """Create and return a new object.  See help(type) for accurate signature."""
    @property
    def shape(self) -> Shape:
        """The shape tree.

        Returns:
            Shape: the extents.

        Examples:
            >>> Layout.leaf(4, 2).shape
            Shape<(4,)>
        """
    @property
    def stride(self) -> Stride:
        """The stride tree.

        Returns:
            Stride: the strides, congruent with the shape.

        Examples:
            >>> Layout.leaf(4, 2).stride
            Stride<(2,)>
        """
    @property
    def size(self) -> int:
        """The number of logical elements: the product of the extents.

        Returns:
            int: the size (1 for the empty layout).

        Examples:
            >>> Layout(Shape([2, 3]), Stride([1, 4])).size
            6
        """
    @property
    def cosize(self) -> int:
        """One past the largest index: 1 + sum of stride*(extent-1).

        The storage a carrier must provide for the layout.

        Returns:
            int: the cosize (1 for the empty layout).

        Examples:
            >>> Layout(Shape([2, 3]), Stride([1, 4])).cosize
            10
        """
    @property
    def depth(self) -> int:
        """Nesting depth of the shape: 1 for a flat layout.

        Returns:
            int: the depth.

        Examples:
            >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).depth
            2
        """
    @property
    def rank(self) -> int:
        """The number of top-level modes (same as len(layout)).

        Returns:
            int: the rank.

        Examples:
            >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).rank
            2
        """
    @property
    def is_leaf(self) -> bool:
        """True for at most one top-level mode that is an integer.

        Returns:
            bool: whether shape and stride are both is_int.

        Examples:
            >>> Layout.leaf(4, 1).is_leaf, Layout.empty().is_leaf
            (True, True)
        """
    def __len__(self) -> int:
        """Return len(self)."""
    @overload
    def __getitem__(self, key: SupportsIndex, /) -> Layout: ...
    @overload
    def __getitem__(self, key: slice, /) -> Layout: ...
    def __iter__(self) -> Iterator[Layout]:
        """Implement iter(self)."""
    def __add__(self, other: Layout, /) -> Layout:
        """Return self+value."""
    def __radd__(self, other: Layout, /) -> Layout:
        """Return value+self."""
    def __eq__(self, other: object, /) -> bool:
        """Return self==value."""
    def __ne__(self, other: object, /) -> bool:
        """Return self!=value."""
    def __call__(self, key: _Key, /) -> int:
        """Call self as a function."""
    def __copy__(self) -> Layout:
        """A new Layout equal to this one."""
    def __deepcopy__(self, memo: Any, /) -> Layout:
        """A new Layout equal to this one."""
    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling support: rebuilds an equal value."""
    def _repr_svg_(self) -> str | None:
        """The layout's index map as an SVG picture, for Jupyter (strideweave.viz.layout_svg), or None
        for a rank above 2 or more than viz.REPR_LIMIT elements.

        Returns:
            str | None: the SVG document.
        """
    def index(self, key: _Key, /) -> int:
        """The index of a logical element; layout(key) is the same.

        An int key is a logical index in [0, size), split colexicographically. A sequence key pairs
        its coordinates with the top-level modes: missing trailing coordinates count as 0 and extra
        ones are ignored; a leaf mode takes an int in [0, extent), a nested mode an int (its logical
        index) or a nested sequence.

        Args:
            key: an int, or a (nested) sequence of ints.

        Returns:
            int: the index, relative to 0.

        Raises:
            ValueError: 'Key is not in domain of shape' for an out-of-range or negative coordinate.
            TypeError: a key or coordinate that is neither an int nor a sequence.

        Examples:
            >>> L = Layout(Shape([3, 4]), Stride([2, 10]))
            >>> L.index([2, 3]), L.index(5), L.index([1])
            (34, 14, 2)
        """
    @classmethod
    def get_index(cls, layout: Layout, key: _Key, /) -> int:
        """The index of key in layout (see Layout.index).

        Args:
            layout: the layout.
            key: an int or a (nested) sequence of ints.

        Returns:
            int: the index.

        Raises:
            ValueError: 'layout input must be a Layout object', or a key out of the domain.

        Examples:
            >>> Layout.get_index(Layout.leaf(4, 3), 2)
            6
        """
    @classmethod
    def empty(cls) -> Layout:
        """The empty layout ():(), of size 1 and cosize 1.

        Returns:
            Layout: the layout with no modes.

        Examples:
            >>> Layout.empty().size
            1
        """
    @classmethod
    def leaf(cls, s: _TreeInput, d: _TreeInput, /) -> Layout:
        """Layout(Shape(s), Stride(d)); for ints, the one-mode layout s:d.

        Args:
            s: the extent (or any Shape input).
            d: the stride (or any Stride input).

        Returns:
            Layout: the layout.

        Examples:
            >>> Layout.leaf(4, 2)
            4:2
        """
    def concat(self, other: Layout, /) -> Layout:
        """The modes of self followed by the modes of other (also self + other).

        Args:
            other: the layout whose modes follow.

        Returns:
            Layout: the joined layout.

        Examples:
            >>> Layout.concat(Layout.leaf(2, 1), Layout.leaf(3, 2))
            (2,3):(1,2)
        """
    def append(self, other: Layout, /) -> Layout:
        """Appends other: concatenated if it is one flat mode (or empty), else one new nested mode.

        Args:
            other: the layout to append.

        Returns:
            Layout: the joined layout.

        Examples:
            >>> B = Layout(Shape([2, 3]), Stride([2, 6]))
            >>> Layout.append(Layout.leaf(1, 1), B)
            (1,(2,3)):(1,(2,6))
        """
    @classmethod
    def make_layout(cls, *layouts: Layout) -> Layout:
        """Appends each layout in turn to the empty layout.

        Args:
            *layouts: the layouts, one mode each (nested if needed).

        Returns:
            Layout: the combined layout.

        Raises:
            ValueError: 'function make_layout only accepts Layouts as argument'.

        Examples:
            >>> Layout.make_layout(Layout.leaf(2, 1), Layout.leaf(3, 2))
            (2,3):(1,2)
        """
    @classmethod
    def check_tree(cls, shape_level: _TreeInput, stride_level: _TreeInput, /) -> bool:
        """Whether two trees have the same structure.

        Args:
            shape_level: a Shape or a Shape input (e.g. top_level).
            stride_level: a Stride or a Stride input.

        Returns:
            bool: True if both have the same nesting everywhere.

        Examples:
            >>> Layout.check_tree((2, (3, 4)), (1, (2, 6)))
            True
        """
    @classmethod
    def expand_int(cls, key: int, shape_level: _TreeInput, /) -> list[int]:
        """Splits a logical index into top-level coordinates, first mode fastest.

        Args:
            key: the logical index.
            shape_level: a Shape or a Shape input.

        Returns:
            list[int]: one coordinate per top-level mode.

        Raises:
            ValueError: 'Key is not in domain of shape'.

        Examples:
            >>> Layout.expand_int(5, (2, (3, 4)))
            [1, 2]
        """
    def flatten(self) -> Layout:
        """All leaves as top-level modes, in infix order.

        Returns:
            Layout: the flat layout with the same function.

        Examples:
            >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).flatten()
            (2,3,4):(1,2,6)
        """
    def flatten_layout(self) -> tuple[Layout, list[Node]]:
        """The flattened layout and the recipe of the original nesting.

        Returns:
            tuple[Layout, list[Node]]: the flat layout, and the pre-order Leaf/Push/Pop recipe of
                the shape.

        Examples:
            >>> L = Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]]))
            >>> flat, recipe = L.flatten_layout()
            >>> flat, [n.name for n in recipe]
            ((2,3,4):(1,2,6), ['Leaf', 'Push', 'Leaf', 'Leaf', 'Pop'])
        """
    def infix(self) -> list[tuple[int, int]]:
        """The (extent, stride) pairs of the leaves, depth-first.

        Returns:
            list[tuple[int, int]]: one pair per leaf.

        Examples:
            >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).infix()
            [(2, 1), (3, 2), (4, 6)]
        """
    def coalesce(self) -> Layout:
        """The flat layout of the fewest modes with the same function.

        Extent-1 leaves are dropped and neighbours with stride[k+1] == extent[k]*stride[k] merge. A
        layout of one leaf is returned unchanged.

        Returns:
            Layout: the coalesced layout.

        Examples:
            >>> Layout(Shape([2, [1, 6]]), Stride([1, [6, 2]])).coalesce()
            12:1
        """
    def coalesce_by_mode(self, profile: _IdTree, /) -> Layout:
        """Coalesces each mode selected by a profile tree.

        Args:
            profile: a Tree; a leaf marker coalesces that whole mode, a subtree recurses into it.

        Returns:
            Layout: the result, shaped like the profile.

        Raises:
            ValueError: 'layout and tree profile do not match'.

        Examples:
            >>> L = Layout(Shape([2, [1, 6]]), Stride([1, [6, 2]]))
            >>> L.coalesce_by_mode(Tree(1, 1))
            (2,6):(1,2)
        """
    def filter(self) -> Layout:
        """Drops stride-0 and extent-1 leaves, then coalesces (1:0 if nothing is left).

        Returns:
            Layout: a layout whose size counts the distinct indices reached.

        Examples:
            >>> Layout(Shape([2, 3, 4]), Stride([0, 1, 3])).filter()
            12:1
        """
    def extract_profile(self, profile: _IdTree | None = None) -> list[Layout]:
        """Splits the layout into pieces along a profile.

        Args:
            profile: a Tree, or None for every leaf. A leaf marker takes the whole corresponding
                mode; a subtree recurses.

        Returns:
            list[Layout]: the pieces in order.

        Raises:
            ValueError: 'layout and tree profile do not match'.

        Examples:
            >>> L = Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]]))
            >>> L.extract_profile(Tree(1, 1))
            [2:1, (3,4):(2,6)]
        """
    def rearrange(self, output: _IdTree, selection: _IdTree | None = None) -> Layout:
        """Rearranges the pieces of the layout into a new nesting.

        The pieces are extract_profile(selection). Node.id(k) in output places piece k, Node.Leaf
        inserts the singleton 1:0, subtrees nest.

        Args:
            output: a Tree of Node.id markers and Node.Leaf.
            selection: a profile Tree, or None for every leaf.

        Returns:
            Layout: the rearranged layout.

        Raises:
            ValueError: 'output must be a Tree', an id out of range, a repeated id, or an unused
                piece of size > 1.

        Examples:
            >>> L = Layout(Shape([2, 3, 4]), Stride([1, 2, 6]))
            >>> L.rearrange(Tree(Node.id(2), Node.id(0), Node.id(1)))
            (4,2,3):(6,1,2)
        """
    @classmethod
    def reverse_rearrange(cls, output: _IdTree, selection: _IdTree) -> tuple[Tree, Tree]:
        """The (output, selection) pair that undoes a rearrangement.

        Args:
            output: the output Tree of the rearrangement.
            selection: its selection Tree.

        Returns:
            tuple[Tree, Tree]: the reverse output and selection.

        Raises:
            ValueError: a non-Tree argument, a repeated id or an id out of range.

        Examples:
            >>> Layout.reverse_rearrange(Tree(Node.id(0)), Tree(1, 1))
            ((Node.id(0), <Node.Leaf: 1>), (<Node.Leaf: 1>,))
        """
    @overload
    def permute(self, order: Sequence[int], /) -> Layout: ...
    @overload
    def permute(self, *order: int) -> Layout: ...
    def choose(self, d: int, /) -> Layout:
        """The layout C with C(j) == self(d*j): CuTe's shape division.

        Args:
            d: the step; must divide the size.

        Returns:
            Layout: the divided layout (flat leaves), of size
            self.size // d.

        Raises:
            ValueError: when d is not positive, does not divide the
                size or the leading extents in turn, or a stride
                overflows.

        Examples:
            >>> L = Layout(Shape([3, 6, 2, 8]), Stride([1, 3, 18, 36]))
            >>> L.choose(9)(1) == L(9)
            True
        """
    def modout(self, s: int, /) -> Layout:
        """Keeps the first s elements of the layout.

        Args:
            s: the number of elements to keep.

        Returns:
            Layout: a layout of size min(s, self.size) agreeing with
            self on its domain (flat leaves, self's strides); a
            layout of at most s elements comes back whole.

        Raises:
            ValueError: when s is not positive or does not split the
                modes evenly.

        Examples:
            >>> Layout(Shape([2, 2, 8]), Stride([9, 18, 36])).modout(8).size
            8
        """
    def compose_layouts(self, B: Layout, /) -> Layout:
        """The composition self o B: R(c) == self(B(c)), with B's modes.

        Args:
            B: the inner layout.

        Returns:
            Layout: the composition.

        Raises:
            ValueError: when a stride or extent of B does not divide self's modes.

        Examples:
            >>> Layout.leaf(20, 2).compose_layouts(Layout(Shape([5, 4]), Stride([4, 1])))
            (5,4):(8,2)
        """
    def compose(self, B: Layout | Shape | Tiler, /) -> Layout:
        """Composition with a Layout, a Shape or a tiler.

        A Layout composes as compose_layouts. A Shape becomes the tiler of compact column-major
        layouts of its modes. A tiler (a sequence of Layouts) composes mode i of self with tiler[i];
        the remaining modes follow unchanged.

        Args:
            B: a Layout, a Shape or a sequence of Layouts.

        Returns:
            Layout: the composition.

        Raises:
            ValueError: inadmissible strides or extents, or a tiler longer than the rank.

        Examples:
            >>> A = Layout(Shape([20, 50]), Stride([1, 20]))
            >>> A.compose(Shape([5, 2]))
            (5,2):(1,20)
        """
    def complement(self, cotarget: int | None = None) -> Layout:
        """The ordered layout that completes self to cover cotarget.

        (self, complement) is injective and has cosize cotarget; the complement's strides increase.
        Extent-1 and stride-0 leaves are ignored; the result is 1:0 when nothing is left.

        Args:
            cotarget: the size to cover; by default only the gaps between self's modes are filled
                (the result has no mode beyond self's span).

        Returns:
            Layout: the complement.

        Raises:
            ValueError: self overlaps itself, its strides cannot be completed evenly, or cotarget is
                not a multiple of its span.

        Examples:
            >>> Layout.leaf(4, 2).complement(24)
            (2,3):(1,8)
            >>> Layout.leaf(4, 2).complement()
            2:1
        """
    def divide(self, B: Layout, /) -> Layout:
        """Logical divide self / B = self o (B, complement(B, size)).

        Args:
            B: the tile layout.

        Returns:
            Layout: two modes, the tile and the rest.

        Raises:
            ValueError: when B does not tile self.

        Examples:
            >>> Layout.leaf(24, 1).divide(Layout.leaf(4, 2))
            (4,(2,3)):(2,(1,8))
        """
    def divide_tiler(self, tiler: Tiler, /) -> Layout:
        """Divides the leading modes: mode i becomes self[i] / tiler[i].

        Args:
            tiler: a sequence of Layouts, at most rank of them.

        Returns:
            Layout: ((tile_0, rest_0), ..., remaining modes).

        Examples:
            >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
            >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
            >>> A.divide_tiler(T)
            ((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))
        """
    def zipped_divide(self, tiler: Tiler, /) -> Layout:
        """The tiler divide gathered as ((tiles...), (rests..., remaining modes...)).

        Args:
            tiler: a sequence of Layouts.

        Returns:
            Layout: two modes, the tile and the rest.

        Examples:
            >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
            >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
            >>> A.zipped_divide(T)
            ((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))
        """
    def tiled_divide(self, tiler: Tiler, /) -> Layout:
        """The tiler divide as ((tiles...), rest_0, ..., remaining modes...).

        Args:
            tiler: a sequence of Layouts.

        Returns:
            Layout: the tile mode followed by the rest modes.

        Examples:
            >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
            >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
            >>> A.tiled_divide(T)
            ((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))
        """
    def flat_divide(self, tiler: Tiler, /) -> Layout:
        """The tiler divide as (tile_0, ..., rest_0, ..., remaining modes...).

        Args:
            tiler: a sequence of Layouts.

        Returns:
            Layout: the tiles and rests as top-level modes.

        Examples:
            >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
            >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
            >>> A.flat_divide(T)
            (3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))
        """
    def logical_product(self, B: Layout, /) -> Layout:
        """self x B = (self, complement(self, size*cosize(B)) o B): self repeated in the pattern of B.

        Args:
            B: the repetition layout.

        Returns:
            Layout: two modes, self and the repetition.

        Examples:
            >>> A = Layout(Shape([2, 2]), Stride([4, 1]))
            >>> A.logical_product(Layout.leaf(6, 1)).size
            24
        """
    def blocked_product(self, B: Layout, /) -> Layout:
        """The product with mode i = (self[i], P[i]), P the repetition of B; ranks are padded with 1:0.

        Args:
            B: the block arrangement.

        Returns:
            Layout: the blocked product.

        Examples:
            >>> A = Layout(Shape([2, 5]), Stride([5, 1]))
            >>> A.blocked_product(Layout(Shape([3, 4]), Stride([1, 3]))).size
            120
        """
    def raked_product(self, B: Layout, /) -> Layout:
        """The product with mode i = (P[i], self[i]): self's elements interleaved across the
        repetition.

        Args:
            B: the repetition layout.

        Returns:
            Layout: the raked product.

        Examples:
            >>> A = Layout(Shape([2, 5]), Stride([5, 1]))
            >>> A.raked_product(Layout(Shape([3, 4]), Stride([1, 3]))).size
            120
        """
    def right_inverse(self) -> Layout:
        """R with self(R(i)) == i for every i < R.size.

        Returns:
            Layout: the right inverse over the longest contiguous prefix reached (1:0 if none).

        Examples:
            >>> L = Layout(Shape([2, 3]), Stride([1, 2]))
            >>> [L(L.right_inverse()(i)) for i in range(6)]
            [0, 1, 2, 3, 4, 5]
        """
    def left_inverse(self) -> Layout:
        """L with L(self(i)) == i for every i < size, for injective self.

        Returns:
            Layout: the left inverse.

        Raises:
            ValueError: self is not injective.

        Examples:
            >>> L = Layout.leaf(4, 2)
            >>> [L.left_inverse()(L(i)) for i in range(4)]
            [0, 1, 2, 3]
        """
    def is_injective(self) -> bool:
        """Whether no two coordinates share an index.

        Returns:
            bool: True if the layout is one-to-one.

        Examples:
            >>> Layout(Shape([2, 2]), Stride([1, 1])).is_injective()
            False
        """
    def is_compact(self) -> bool:
        """Whether the layout is a bijection onto range(size).

        Returns:
            bool: True if compact.

        Examples:
            >>> Layout(Shape([2, 3]), Stride([3, 1])).is_compact()
            True
        """

Tiler: TypeAlias = Sequence[Layout]
