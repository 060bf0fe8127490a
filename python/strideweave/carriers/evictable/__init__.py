"""The Evictable carrier: a two-tier storage hierarchy, and its operation adapter.

:class:`Evictable` owns a primary and a secondary carrier; ``evict()`` moves
the values to the secondary, ``promote()`` brings them back into fresh
primary storage. Computation runs on the primary through
:class:`EvictableOperation`, the one autograd node of every Evictable
operation.

Examples:
    >>> from strideweave import Generic, Layout, Shape, Stride, Tensor, relu
    >>> from strideweave.carriers.evictable import Evictable
    >>> e = Evictable(Generic([-1.0, 2.0]), Generic([]))
    >>> e.evict()
    >>> e.is_evicted()
    True
    >>> e.promote()
    >>> list(relu(Tensor(e, 0, Layout(Shape(2), Stride(1)))).carrier)
    [0, 2.0]
"""

from strideweave._native import Evictable, EvictableOperation

__all__ = ["Evictable", "EvictableOperation"]
