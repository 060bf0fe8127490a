"""The layout subsystem: trees of markers, shapes, strides and layouts.

``Shape``, ``Stride`` and ``Layout`` are implemented in C (``strideweave._native``)
on top of libstrideweave; ``Node`` and ``Tree`` describe the structure of
hierarchical arguments (profiles and rearrangement targets) and are plain Python.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Any, TypeAlias

from strideweave import _native
from strideweave._native import Layout, Shape, Stride

__all__ = ["Layout", "Node", "Shape", "Stride", "Tiler", "Tree"]


@dataclasses.dataclass(frozen=True)
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

    def __post_init__(self) -> None:
        if not isinstance(self.id, int):
            raise TypeError("Node leaf id must be an integer")
        if self.id < 0:
            raise ValueError("Node leaf id must be non-negative")
        # bool is accepted as an int; store the plain int value.
        object.__setattr__(self, "id", int(self.id))

    def __repr__(self) -> str:
        return f"Node.id({self.id})"


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
        return NodeId(k)


def _is_leaf_marker(item: object) -> bool:
    return item is Node.Leaf or isinstance(item, NodeId)


_TREE_ITEM_ERROR = (
    "Tree can only accept integers or Node.Leaf for leaf markers, Node.id markers or Trees"
)


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

    def __new__(cls, *items: object) -> Tree:
        normalized, depth, size = Tree.norm(items)
        self = super().__new__(cls, normalized)
        self.size = size
        self.depth = depth
        return self

    def __getnewargs__(self) -> tuple[Any, ...]:  # type: ignore[override]
        return tuple(self)

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
        normalized: list[Any] = []
        depth = 1
        size = 0
        for item in iterable:
            if isinstance(item, Tree):
                normalized.append(item)
                depth = max(depth, 1 + item.depth)
                size += item.size
            elif _is_leaf_marker(item):
                normalized.append(item)
                size += 1
            elif isinstance(item, int):
                normalized.append(Node.Leaf)
                size += 1
            else:
                raise ValueError(f"{_TREE_ITEM_ERROR}, not {item!r}")
        return normalized, depth, size

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
        recipe: list[Node] = []

        def walk(level: Iterable[object]) -> None:
            for item in level:
                if isinstance(item, tuple):
                    recipe.append(Node.Push)
                    walk(item)
                    recipe.append(Node.Pop)
                else:
                    recipe.append(Node.Leaf)

        walk(t)
        return recipe

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
        values = iter(iterable)
        stack: list[list[Any]] = [[]]
        for node in recipe:
            if node is Node.Push:
                stack.append([])
            elif node is Node.Pop:
                if len(stack) < 2:
                    raise ValueError("Tree recipe has an unmatched Pop")
                inner = stack.pop()
                stack[-1].append(inner)
            else:
                try:
                    stack[-1].append(next(values))
                except StopIteration:
                    raise ValueError(
                        "Iterable object to bake does not match recipe length"
                    ) from None
        if len(stack) != 1:
            raise ValueError("Tree recipe has an unmatched Push")
        return stack[0]

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
        stack: list[list[Any]] = [[]]
        for node in recipe:
            if node is Node.Push:
                stack.append([])
            elif node is Node.Pop:
                if len(stack) < 2:
                    raise ValueError("Tree recipe has an unmatched Pop")
                inner = stack.pop()
                stack[-1].append(Tree(*inner))
            else:
                stack[-1].append(Node.Leaf)
        if len(stack) != 1:
            raise ValueError("Tree recipe has an unmatched Push")
        return Tree(*stack[0])

    @property
    def recipe(self) -> list[Node]:
        """The pre-order instructions of this tree (see ``Tree.get_recipe``).

        Returns:
            list[Node]: the recipe.

        Examples:
            >>> [n.name for n in Tree(1, Tree(1)).recipe]
            ['Leaf', 'Push', 'Leaf', 'Pop']
        """
        return Tree.get_recipe(self)

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
        return Tree.bake(iterable, self.recipe)


Tiler: TypeAlias = Sequence[Layout]
"""A read-only sequence of Layouts, one tile per leading mode."""

_native._register_tree_types(Tree, Node, NodeId)
