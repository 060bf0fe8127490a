"""The CPU carrier's native operations (not exported at the top level)."""

from strideweave.carriers.operation_helpers import Operation

__all__ = [
    "_CPUAddOperation",
    "_CPUBatchedMatmulOperation",
    "_CPUDivOperation",
    "_CPUELUOperation",
    "_CPUElementwiseMulOperation",
    "_CPUExpOperation",
    "_CPUGELUOperation",
    "_CPULeakyReLUOperation",
    "_CPUMatmulOperation",
    "_CPUPowOperation",
    "_CPUReLUOperation",
    "_CPUReduceSumOperation",
    "_CPUScalarMulOperation",
    "_CPUSiLUOperation",
    "_CPUSigmoidOperation",
    "_CPUSoftplusOperation",
    "_CPUSubOperation",
    "_CPUTanhOperation",
]

class _CPUAddOperation(Operation):
    """Elementwise lhs + rhs in float32 (Int32 exact, overflow-checked).

    The native operation 'add' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUAddOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('add')
        >>> type(op).__name__, op._operation_name
        ('_CPUAddOperation', 'add')
    """

class _CPUBatchedMatmulOperation(Operation):
    """out[i, j, b] = sum over k of lhs[i, k, b] * rhs[j, k, b], a batched blocked GEMM.

    The native operation 'batched_matmul' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUBatchedMatmulOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('batched_matmul')
        >>> type(op).__name__, op._operation_name
        ('_CPUBatchedMatmulOperation', 'batched_matmul')
    """

class _CPUDivOperation(Operation):
    """Elementwise lhs / rhs in float32.

    The native operation 'div' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUDivOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('div')
        >>> type(op).__name__, op._operation_name
        ('_CPUDivOperation', 'div')
    """

class _CPUELUOperation(Operation):
    """x if x > 0 else expm1(x), per element.

    The native operation 'elu' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUELUOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('elu')
        >>> type(op).__name__, op._operation_name
        ('_CPUELUOperation', 'elu')
    """

class _CPUElementwiseMulOperation(Operation):
    """Elementwise lhs * rhs in float32 (Int32 exact, overflow-checked).

    The native operation 'elementwise_mul' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUElementwiseMulOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('elementwise_mul')
        >>> type(op).__name__, op._operation_name
        ('_CPUElementwiseMulOperation', 'elementwise_mul')
    """

class _CPUExpOperation(Operation):
    """expf per element.

    The native operation 'exp' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUExpOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('exp')
        >>> type(op).__name__, op._operation_name
        ('_CPUExpOperation', 'exp')
    """

class _CPUGELUOperation(Operation):
    """0.5*x*(1 + erf(x/sqrt(2))) per element.

    The native operation 'gelu' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUGELUOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('gelu')
        >>> type(op).__name__, op._operation_name
        ('_CPUGELUOperation', 'gelu')
    """

class _CPULeakyReLUOperation(Operation):
    """x if x >= 0 else 0.01*x, per element.

    The native operation 'leaky_relu' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPULeakyReLUOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('leaky_relu')
        >>> type(op).__name__, op._operation_name
        ('_CPULeakyReLUOperation', 'leaky_relu')
    """

class _CPUMatmulOperation(Operation):
    """out[i, j] = sum over k of lhs[i, k] * rhs[j, k] (lhs @ rhs.T), a blocked GEMM.

    The native operation 'matmul' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUMatmulOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('matmul')
        >>> type(op).__name__, op._operation_name
        ('_CPUMatmulOperation', 'matmul')
    """

class _CPUPowOperation(Operation):
    """tensor ** exponent per element; ctx['exponent'] is the float32 exponent.

    The native operation 'pow' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUPowOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('pow')
        >>> type(op).__name__, op._operation_name
        ('_CPUPowOperation', 'pow')
    """

class _CPUReLUOperation(Operation):
    """max(x, 0) per element (Int32 exact).

    The native operation 'relu' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUReLUOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('relu')
        >>> type(op).__name__, op._operation_name
        ('_CPUReLUOperation', 'relu')
    """

class _CPUReduceSumOperation(Operation):
    """out[i] = sum over j of tensor[i, j] for a two-mode tensor.

    The native operation 'reduce' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUReduceSumOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('reduce')
        >>> type(op).__name__, op._operation_name
        ('_CPUReduceSumOperation', 'reduce')
    """

class _CPUScalarMulOperation(Operation):
    """tensor * scalar per element; ctx['scalar'] is the float32 scalar.

    The native operation 'mul' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUScalarMulOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('mul')
        >>> type(op).__name__, op._operation_name
        ('_CPUScalarMulOperation', 'mul')
    """

class _CPUSiLUOperation(Operation):
    """x*sigmoid(x) per element.

    The native operation 'silu' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUSiLUOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('silu')
        >>> type(op).__name__, op._operation_name
        ('_CPUSiLUOperation', 'silu')
    """

class _CPUSigmoidOperation(Operation):
    """The numerically stable logistic function per element.

    The native operation 'sigmoid' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUSigmoidOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('sigmoid')
        >>> type(op).__name__, op._operation_name
        ('_CPUSigmoidOperation', 'sigmoid')
    """

class _CPUSoftplusOperation(Operation):
    """log1p(exp(-|x|)) + max(x, 0) per element.

    The native operation 'softplus' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUSoftplusOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('softplus')
        >>> type(op).__name__, op._operation_name
        ('_CPUSoftplusOperation', 'softplus')
    """

class _CPUSubOperation(Operation):
    """Elementwise lhs - rhs in float32 (Int32 exact, overflow-checked).

    The native operation 'sub' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUSubOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('sub')
        >>> type(op).__name__, op._operation_name
        ('_CPUSubOperation', 'sub')
    """

class _CPUTanhOperation(Operation):
    """tanhf per element.

    The native operation 'tanh' of the cpu backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        _CPUTanhOperation: the operation.

    Examples:
        >>> op = CPU(1).dispatch_op('tanh')
        >>> type(op).__name__, op._operation_name
        ('_CPUTanhOperation', 'tanh')
    """
