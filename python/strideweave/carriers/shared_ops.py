"""The carrier-neutral layout operations: view, permute and rearrange.

Every computing carrier (CPU, Generic) dispatches these names to the same
classes. Their results are views: the input's carrier with a new offset and
layout; their backward passes scatter the gradient into fresh storage
shaped like the input.

Examples:
    >>> from strideweave import CPU
    >>> type(CPU(1).dispatch_op("view")).__name__
    'GenericViewOperation'
"""

from strideweave._native import GenericViewOperation, PermuteOperation, RearrangeOperation

__all__ = ["GenericViewOperation", "PermuteOperation", "RearrangeOperation"]
