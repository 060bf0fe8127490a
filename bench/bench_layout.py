"""Layout benchmarks from Python, with NumPy (and PyTorch if installed) as peers.

Run with ``make bench``. Every figure is nanoseconds per call: the minimum,
over several repeats, of a timeit loop long enough to last about 0.2 s (the
minimum is the run least disturbed by the rest of the machine). Peers run in
the same process, on the same machine, and compute the same value as the
StrideWeave call they stand beside; the script checks that before timing.
Timing never fails anything: this is a report, not a test.
"""

import platform
import timeit

import numpy as np
import strideweave as sw
from strideweave import Layout, Shape, Stride

try:
    import torch
except ImportError:
    torch = None

REPEATS = 7
INDEX_GOAL_NS = 1000.0


def ns_per_call(stmt: str, env: dict[str, object]) -> float:
    timer = timeit.Timer(stmt, globals=env)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=REPEATS, number=number)) / number * 1e9


def main() -> None:
    # A compact rank-4 hierarchical layout: (2,(3,4),5,(2,2)):(1,(2,6),24,(120,240)).
    # Flattened it is the column-major layout of the shape (2,3,4,5,2,2), and mode
    # by mode it is the column-major layout of (2,12,5,4).
    lay = Layout(Shape([2, [3, 4], 5, [2, 2]]), Stride([1, [2, 6], 24, [120, 240]]))
    flat_shape = (2, 3, 4, 5, 2, 2)
    nested_key = [1, [2, 3], 4, [1, 0]]
    flat_coord = (1, 2, 3, 4, 1, 0)
    mode_key = [1, 11, 4, 1]
    arr = np.arange(lay.size, dtype=np.int64).reshape((2, 12, 5, 4), order="F")

    assert lay.index(173) == 173
    assert np.unravel_index(173, flat_shape, order="F") == (1, 2, 0, 2, 1, 0)
    assert lay.index(nested_key) == np.ravel_multi_index(flat_coord, flat_shape, order="F")
    assert lay(mode_key) == arr[1, 11, 4, 1]

    env: dict[str, object] = {
        "lay": lay,
        "np": np,
        "arr": arr,
        "flat_shape": flat_shape,
        "nested_key": nested_key,
        "flat_coord": flat_coord,
        "mode_key": mode_key,
    }
    # (label, our statement, peer label, peer statement)
    pairs = [
        (
            "lay.index(173)",
            "lay.index(173)",
            "np.unravel_index(173, shape6, order='F')",
            "np.unravel_index(173, flat_shape, order='F')",
        ),
        (
            "lay.index([1,[2,3],4,[1,0]])",
            "lay.index(nested_key)",
            "np.ravel_multi_index(coord6, shape6, order='F')",
            "np.ravel_multi_index(flat_coord, flat_shape, order='F')",
        ),
        (
            "lay.index([1,11,4,1])",
            "lay.index(mode_key)",
            "arr[1,11,4,1] (strided int64 ndarray)",
            "arr[1, 11, 4, 1]",
        ),
        (
            "lay([1,11,4,1])",
            "lay(mode_key)",
            "arr[1,11,4,1] (strided int64 ndarray)",
            "arr[1, 11, 4, 1]",
        ),
    ]
    if torch is not None:
        # The same strided element order as arr, built from a C-ordered tensor.
        t = torch.arange(lay.size).reshape(4, 5, 12, 2).permute(3, 2, 1, 0)
        assert int(t[1, 11, 4, 1]) == arr[1, 11, 4, 1]
        env["t"] = t
        pairs.append(
            (
                "lay([1,11,4,1])",
                "lay(mode_key)",
                "t[1,11,4,1] (strided torch tensor)",
                "t[1, 11, 4, 1]",
            )
        )

    versions = f"Python {platform.python_version()}, NumPy {np.__version__}"
    if torch is not None:
        versions += f", PyTorch {torch.__version__}"
    print(f"StrideWeave {getattr(sw, '__version__', '?')} layout benchmarks ({versions})")
    print(f"ns per call, min of {REPEATS} repeats; lay = {lay}")
    print(f"shape6 = {flat_shape}, coord6 = {flat_coord} (lay flattened, same element)")
    print("arr = np.arange(480).reshape((2, 12, 5, 4), order='F') (lay mode by mode)\n")
    print(f"{'StrideWeave':<30} {'ns':>7}   {'peer':<48} {'ns':>7} {'ours/peer':>9}")
    index_times = []
    for label, stmt, peer_label, peer_stmt in pairs:
        ours = ns_per_call(stmt, env)
        peer = ns_per_call(peer_stmt, env)
        if stmt.startswith("lay.index"):
            index_times.append(ours)
        print(f"{label:<30} {ours:7.0f}   {peer_label:<48} {peer:7.0f} {ours / peer:9.2f}")

    a = Layout(Shape([6, 2]), Stride([8, 2]))
    b = Layout(Shape([4, 3]), Stride([3, 1]))
    big = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
    tiler = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
    nested = Layout(Shape([[2, [3, 4]], [3, 2], 1]), Stride([[4, [8, 24]], [2, 6], 12]))
    env.update(
        a=a,
        b=b,
        big=big,
        tiler=tiler,
        nested=nested,
        lin=Layout.leaf(24, 1),
        tile=Layout.leaf(4, 2),
        blocks=Layout(Shape([2, 4]), Stride([1, 6])),
        perm=Layout(Shape([2, 4, 6]), Stride([4, 1, 8])),
    )
    algebra = [
        (f"a.compose(b)   {a} o {b}", "a.compose(b)"),
        ("lin.divide(tile)   24:1 / 4:2", "lin.divide(tile)"),
        (f"big.zipped_divide(tiler)   {big}", "big.zipped_divide(tiler)"),
        ("nested.coalesce()   ((2,(3,4)),(3,2),1):...", "nested.coalesce()"),
        ("blocks.complement(24)   (2,4):(1,6)", "blocks.complement(24)"),
        ("perm.right_inverse()   (2,4,6):(4,1,8)", "perm.right_inverse()"),
    ]
    print(f"\n{'algebra call (no peer)':<60} {'ns':>7}")
    for label, stmt in algebra:
        print(f"{label:<60} {ns_per_call(stmt, env):7.0f}")

    slowest = max(index_times)
    verdict = "met" if slowest < INDEX_GOAL_NS else "NOT met"
    print(
        f"\nGoal Layout.index < {INDEX_GOAL_NS:.0f} ns: {verdict} "
        f"(slowest key form {slowest:.0f} ns)"
    )


if __name__ == "__main__":
    main()
