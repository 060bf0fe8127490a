"""Projection and scatter of selected tiles."""

from typing import Any

from strideweave.carriers.move import AwaitMove
from strideweave.carriers.tiled_evictable import AwaitProjection

__all__ = ["project", "scatter"]

def project(tensor: Any, selection: Any, destination: Any = None) -> AwaitProjection: ...
def scatter(
    compact: Any, template: Any, selection: Any, *, reduction: str = "replace"
) -> AwaitMove: ...
