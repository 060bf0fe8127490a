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

from strideweave import _native

# One class per operation of the backend, as the library's operation
# registry lists them.
__all__: list[str] = _native._native_classes("shared")
globals().update({name: getattr(_native, name) for name in __all__})
