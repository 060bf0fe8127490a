"""Fault injection: every call through the binding survives an allocation
failure inside the C library with a clean MemoryError and no leak."""

import pytest
from strideweave import _native
from strideweave.layout import Layout, Node, Shape, Stride, Tree


def L(shape, stride):
    return Layout(Shape(shape), Stride(stride))


A = L([9, [4, 8]], [59, [13, 1]])
H = L([2, [3, 4]], [1, [2, 6]])
T = [Layout.leaf(3, 3), L([2, 4], [1, 8])]

CALLS = {
    "Shape": lambda: Shape(2, [3, 4]),
    "Stride": lambda: Stride(1, [2, 6]),
    "Layout": lambda: Layout(Shape(2, [3, 4]), Stride(1, [2, 6])),
    "leaf": lambda: Layout.leaf(4, 2),
    "empty": Layout.empty,
    "shape getitem": lambda: Shape(2, [3, 4])[1],
    "shape slice": lambda: Shape(2, [3, 4])[::-1],
    "shape append": lambda: Shape.append(Shape(2), Shape(3, 4)),
    "getitem": lambda: H[1],
    "slice": lambda: H[::-1],
    "concat": lambda: H + H,
    "append": lambda: H.append(H),
    "make_layout": lambda: Layout.make_layout(H, H[0], H[1]),
    "index": lambda: H.index([1, [2, 3]]),
    "expand_int": lambda: Layout.expand_int(5, (2, (3, 4))),
    "check_tree": lambda: Layout.check_tree((2, (3, 4)), (1, (2, 6))),
    "flatten_layout": H.flatten_layout,
    "coalesce": A.coalesce,
    "coalesce_by_mode": lambda: A.coalesce_by_mode(Tree(1, 1)),
    "filter": A.filter,
    "extract_profile": lambda: A.extract_profile(Tree(1, Tree(1, 1))),
    "rearrange": lambda: H.rearrange(Tree(Node.id(2), Node.id(0), Node.id(1))),
    "reverse_rearrange": lambda: Layout.reverse_rearrange(Tree(Node.id(1), Node.id(0)), Tree(1, 1)),
    "permute": lambda: H.permute(1, 0),
    "choose": lambda: L([3, 6, 2, 8], [1, 3, 18, 36]).choose(9),
    "modout": lambda: L([1, 2, 2, 8], [9, 9, 18, 36]).modout(16),
    "compose": lambda: L([6, 2], [8, 2]).compose(L([4, 3], [3, 1])),
    "compose shape": lambda: A.compose(Shape(3, 8)),
    "compose tiler": lambda: A.compose([Layout.leaf(3, 4), Layout.leaf(8, 2)]),
    "complement": lambda: L([2, 2], [4, 1]).complement(24),
    "divide": lambda: L([4, 2, 3], [2, 1, 8]).divide(Layout.leaf(4, 2)),
    "divide_tiler": lambda: A.divide_tiler(T),
    "zipped_divide": lambda: A.zipped_divide(T),
    "tiled_divide": lambda: A.tiled_divide(T),
    "flat_divide": lambda: A.flat_divide(T),
    "logical_product": lambda: L([2, 2], [4, 1]).logical_product(L([4, 2], [2, 1])),
    "blocked_product": lambda: L([2, 5], [5, 1]).blocked_product(L([3, 4], [1, 3])),
    "raked_product": lambda: L([2, 5], [5, 1]).raked_product(L([3, 4], [1, 3])),
    "right_inverse": L([2, 4, 6], [4, 1, 8]).right_inverse,
    "left_inverse": Layout.leaf(4, 2).left_inverse,
    "is_injective": L([2, 3], [3, 2]).is_injective,
    "is_compact": L([2, 3], [3, 1]).is_compact,
    "error path": lambda: A.divide(Layout.leaf(5, 1)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_allocation_failures_are_clean(name):
    call = CALLS[name]
    base = _native._debug_live_allocs()
    for n in range(400):
        _native._debug_fail_alloc_after(n)
        try:
            result = call()
        except MemoryError:
            _native._debug_fail_alloc_after(-1)
            assert _native._debug_live_allocs() == base, f"leak after failure {n}"
            continue
        except ValueError:
            result = None  # the "error path" call fails on purpose
        finally:
            _native._debug_fail_alloc_after(-1)
        del result
        assert _native._debug_live_allocs() == base
        return
    raise AssertionError(f"{name} still failed after 400 allocations")
