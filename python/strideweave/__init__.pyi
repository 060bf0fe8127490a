"""StrideWeave: tensors and autograd on hierarchical, CuTe-style layouts."""

from strideweave.carriers import CPU as CPU
from strideweave.carriers import Carrier as Carrier
from strideweave.carriers import DType as DType
from strideweave.carriers import FileBacked as FileBacked
from strideweave.carriers import Generic as Generic
from strideweave.core.layout import Layout as Layout
from strideweave.core.layout import Node as Node
from strideweave.core.layout import Shape as Shape
from strideweave.core.layout import Stride as Stride
from strideweave.core.layout import Tiler as Tiler
from strideweave.core.layout import Tree as Tree
from strideweave.tensor import Tensor as Tensor

__version__: str

__all__ = [
    "CPU",
    "Carrier",
    "DType",
    "FileBacked",
    "Generic",
    "Layout",
    "Node",
    "Shape",
    "Stride",
    "Tensor",
    "Tiler",
    "Tree",
]
