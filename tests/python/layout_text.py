"""A tiny parser of the CuTe text form used by the test vectors."""

from strideweave.layout import Layout, Shape, Stride


def _parse_tree(text: str, pos: int) -> tuple[object, int]:
    if text[pos] == "(":
        items = []
        pos += 1
        if text[pos] == ")":
            return items, pos + 1
        while True:
            item, pos = _parse_tree(text, pos)
            items.append(item)
            if text[pos] == ",":
                pos += 1
                continue
            if text[pos] == ")":
                return items, pos + 1
            raise ValueError(f"bad layout text {text!r} at {pos}")
    end = pos
    while end < len(text) and text[end].isdigit():
        end += 1
    if end == pos:
        raise ValueError(f"bad layout text {text!r} at {pos}")
    return int(text[pos:end]), end


def parse_tree(text: str) -> list:
    """'(2,(3,4))' -> [2, [3, 4]]; a bare '5' -> [5]."""
    tree, end = _parse_tree(text, 0)
    if end != len(text):
        raise ValueError(f"bad layout text {text!r}")
    return tree if isinstance(tree, list) else [tree]


def parse_layout(text: str) -> Layout:
    """'(2,(3,4)):(1,(10,100))' -> the Layout."""
    text = text.replace(" ", "")
    depth = 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if c == ":" and depth == 0:
            return Layout(Shape(parse_tree(text[:i])), Stride(parse_tree(text[i + 1 :])))
    raise ValueError(f"bad layout text {text!r}")


def table(layout: Layout) -> list[int]:
    """The index of every logical element."""
    return [layout(i) for i in range(layout.size)]
