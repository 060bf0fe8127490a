"""Layouts: hierarchical shapes and strides and their CuTe-style algebra.

A re-export of ``strideweave.core.layout``.
"""

from strideweave.core.layout import Layout, Node, Shape, Stride, Tiler, Tree

__all__ = ["Layout", "Node", "Shape", "Stride", "Tiler", "Tree"]
