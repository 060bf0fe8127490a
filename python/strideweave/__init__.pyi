"""StrideWeave: tensors and autograd on hierarchical, CuTe-style layouts."""

from strideweave.core.layout import Layout as Layout
from strideweave.core.layout import Node as Node
from strideweave.core.layout import Shape as Shape
from strideweave.core.layout import Stride as Stride
from strideweave.core.layout import Tiler as Tiler
from strideweave.core.layout import Tree as Tree

__version__: str

__all__ = ["Layout", "Node", "Shape", "Stride", "Tiler", "Tree"]
