"""Node markers and Tree (strideweave.core.layout, pure Python)."""

import dataclasses
import pickle

import pytest
from strideweave.layout import Node, Tree


def test_node_members():
    assert [m.name for m in Node] == ["Leaf", "Push", "Pop"]
    assert [m.value for m in Node] == [1, 2, 3]
    assert len(list(Node)) == 3


def test_node_id_marker():
    m = Node.id(3)
    assert repr(m) == "Node.id(3)"
    assert m.id == 3
    assert Node.id(1) == Node.id(1)
    assert hash(Node.id(1)) == hash(Node.id(1))
    assert Node.id(1) != Node.id(2)
    assert Node.id(1) != Node.Leaf
    assert Node.Leaf != Node.id(1)
    assert dataclasses.is_dataclass(m)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.id = 4  # type: ignore[misc]


def test_node_id_accepts_bool():
    assert Node.id(True) == Node.id(1)
    assert Node.id(False).id == 0


@pytest.mark.parametrize("bad", [1.0, "1", None, [1]])
def test_node_id_type_error(bad):
    with pytest.raises(TypeError, match="^Node leaf id must be an integer$"):
        Node.id(bad)


def test_node_id_negative():
    with pytest.raises(ValueError, match="^Node leaf id must be non-negative$"):
        Node.id(-1)


def test_tree_items_normalized():
    t = Tree(1, Node.Leaf, Node.id(3), Tree(True, 7))
    assert t == (Node.Leaf, Node.Leaf, Node.id(3), (Node.Leaf, Node.Leaf))
    assert isinstance(t[3], Tree)
    assert t.size == 5
    assert t.depth == 2


def test_tree_size_and_depth():
    assert Tree().size == 0
    assert Tree().depth == 1
    assert Tree(1, Tree(1, Tree(1))).depth == 3
    t = Tree(1)
    t.size = 10  # plain attributes, as in the reference
    assert t.size == 10


@pytest.mark.parametrize("bad", [Node.Push, Node.Pop, [1], "a", (1, 2), 1.5, None])
def test_tree_rejects(bad):
    with pytest.raises(
        ValueError, match="^Tree can only accept integers or Node.Leaf for leaf markers"
    ):
        Tree(1, bad)


def test_tree_equality_and_hash():
    assert Tree(1, 2) == Tree(Node.Leaf, Node.Leaf)
    assert hash(Tree(1, 2)) == hash(Tree(Node.Leaf, Node.Leaf))
    assert Tree(Node.id(1)) != Tree(Node.Leaf)
    assert {Tree(1): "x"}[Tree(Node.Leaf)] == "x"


def test_tree_repr():
    t = Tree(1, Tree(Node.id(3), 1))
    assert repr(t) == "(<Node.Leaf: 1>, (Node.id(3), <Node.Leaf: 1>))"


def test_tree_recipe_and_bake():
    t = Tree(1, Tree(1, 1))
    recipe = [Node.Leaf, Node.Push, Node.Leaf, Node.Leaf, Node.Pop]
    assert Tree.get_recipe(t) == recipe
    assert t.recipe == recipe
    assert Tree.bake("ABC", recipe) == ["A", ["B", "C"]]
    assert t.reshape("ABC") == ["A", ["B", "C"]]
    assert Tree.bake_tree(recipe) == t
    assert Tree.bake_tree([]) == Tree()


def test_tree_bake_short():
    with pytest.raises(ValueError, match="^Iterable object to bake does not match recipe length$"):
        Tree(1, Tree(1, 1)).reshape("AB")


def test_tree_norm():
    items, depth, size = Tree.norm([1, Node.id(2), Tree(1, 1)])
    assert items == [Node.Leaf, Node.id(2), (Node.Leaf, Node.Leaf)]
    assert (depth, size) == (2, 4)


def test_tree_pickle():
    t = Tree(1, Tree(Node.id(3), 1))
    u = pickle.loads(pickle.dumps(t))
    assert u == t and isinstance(u, Tree) and isinstance(u[1], Tree)
    assert (u.size, u.depth) == (3, 2)
