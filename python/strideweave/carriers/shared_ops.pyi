"""The carrier-neutral layout operations: view, permute and rearrange."""

from strideweave.carriers.operation_helpers import Operation

__all__ = ["GenericViewOperation", "PermuteOperation", "RearrangeOperation"]

class GenericViewOperation(Operation):
    """A view selecting one key per top-level mode (an integer removes the mode, a slice keeps part of it); used by every computing carrier.

    The native operation 'view' of the shared backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericViewOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('view')
        >>> type(op).__name__, op._operation_name
        ('GenericViewOperation', 'view')
    """

class PermuteOperation(Operation):
    """A view with the top-level modes reordered; used by every computing carrier.

    The native operation 'permute' of the shared backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        PermuteOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('permute')
        >>> type(op).__name__, op._operation_name
        ('PermuteOperation', 'permute')
    """

class RearrangeOperation(Operation):
    """A view whose layout is the input's rearranged by an output recipe and a selection; used by every computing carrier.

    The native operation 'rearrange' of the shared backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        RearrangeOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('rearrange')
        >>> type(op).__name__, op._operation_name
        ('RearrangeOperation', 'rearrange')
    """
