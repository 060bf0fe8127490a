"""Layouts: hierarchical shapes and strides and their CuTe-style algebra."""

from strideweave.core.layout import Layout as Layout
from strideweave.core.layout import Node as Node
from strideweave.core.layout import Shape as Shape
from strideweave.core.layout import Stride as Stride
from strideweave.core.layout import Tiler as Tiler
from strideweave.core.layout import Tree as Tree

__all__ = ["Layout", "Node", "Shape", "Stride", "Tiler", "Tree"]
