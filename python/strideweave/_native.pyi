"""The C extension behind strideweave: layouts and their algebra."""

from typing import Any

from strideweave.core.layout import Layout as Layout
from strideweave.core.layout import Shape as Shape
from strideweave.core.layout import Stride as Stride

c_version: str

def _register_tree_types(tree: type, node: Any, node_id: type, /) -> None: ...
def _debug_live_allocs() -> int: ...
def _debug_fail_alloc_after(n: int, /) -> None: ...
