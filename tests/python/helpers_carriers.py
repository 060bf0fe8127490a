"""Shared helpers for the carrier and tensor tests."""

from strideweave import Carrier, DType, Layout, Shape, Stride


def L(shape, stride):
    """A Layout from nested lists: L([2, 3], [3, 1])."""
    return Layout(Shape(shape), Stride(stride))


def flat(n):
    """The contiguous layout n:1."""
    return L([n], [1])


class ListCarrier(Carrier):
    """A carrier implemented in Python over a list: every hook in Python."""

    def __init__(self, values=(), *, mutable=True, dtype=DType.Any):
        super().__init__()
        self.values = list(values)
        self.mutable = mutable
        self.kind = dtype
        self.release_calls = 0

    def size(self):
        return len(self.values)

    def dtype(self):
        return self.kind

    def get_value(self, index):
        return self.values[index]

    def set_value(self, index, value):
        self.values[index] = value

    def _is_mutable(self):
        return self.mutable

    def _release(self):
        self.release_calls += 1
        self.values = []

    def new_like(self, values, *, mutable=True):
        return ListCarrier(values, mutable=mutable, dtype=self.kind)

    def allocate_like(self, size, *, mutable=True, dtype=None, empty=False):
        return ListCarrier([None] * size, mutable=mutable, dtype=dtype or self.kind)
