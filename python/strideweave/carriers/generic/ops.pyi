"""The Generic carrier's operations: the reference implementations."""

from strideweave.carriers.operation_helpers import Operation

__all__ = [
    "GenericAddOperation",
    "GenericBatchedMatmulOperation",
    "GenericDivOperation",
    "GenericELUOperation",
    "GenericElementwiseMulOperation",
    "GenericExpOperation",
    "GenericGELUOperation",
    "GenericLeakyReLUOperation",
    "GenericMatmulOperation",
    "GenericPowOperation",
    "GenericReLUOperation",
    "GenericReduceSumOperation",
    "GenericScalarMulOperation",
    "GenericSiLUOperation",
    "GenericSigmoidOperation",
    "GenericSoftplusOperation",
    "GenericSubOperation",
    "GenericTanhOperation",
]

class GenericAddOperation(Operation):
    """Elementwise lhs + rhs with the host's +.

    The native operation 'add' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericAddOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('add')
        >>> type(op).__name__, op._operation_name
        ('GenericAddOperation', 'add')
    """

class GenericBatchedMatmulOperation(Operation):
    """out[i, j, b] = sum over k of lhs[i, k, b] * rhs[j, k, b] for three-mode tensors (the third mode is the batch); batched einsum runs it.

    The native operation 'batched_matmul' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericBatchedMatmulOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('batched_matmul')
        >>> type(op).__name__, op._operation_name
        ('GenericBatchedMatmulOperation', 'batched_matmul')
    """

class GenericDivOperation(Operation):
    """Elementwise lhs / rhs with the host's true division.

    The native operation 'div' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericDivOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('div')
        >>> type(op).__name__, op._operation_name
        ('GenericDivOperation', 'div')
    """

class GenericELUOperation(Operation):
    """x as a float if x > 0 else expm1(x), per element (alpha 1).

    The native operation 'elu' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericELUOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('elu')
        >>> type(op).__name__, op._operation_name
        ('GenericELUOperation', 'elu')
    """

class GenericElementwiseMulOperation(Operation):
    """Elementwise lhs * rhs with the host's *.

    The native operation 'elementwise_mul' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericElementwiseMulOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('elementwise_mul')
        >>> type(op).__name__, op._operation_name
        ('GenericElementwiseMulOperation', 'elementwise_mul')
    """

class GenericExpOperation(Operation):
    """exp per element; the context keeps the outputs.

    The native operation 'exp' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericExpOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('exp')
        >>> type(op).__name__, op._operation_name
        ('GenericExpOperation', 'exp')
    """

class GenericGELUOperation(Operation):
    """0.5*x*(1 + erf(x/sqrt(2))) per element, in floats.

    The native operation 'gelu' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericGELUOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('gelu')
        >>> type(op).__name__, op._operation_name
        ('GenericGELUOperation', 'gelu')
    """

class GenericLeakyReLUOperation(Operation):
    """x as a float if x >= 0 else 0.01*x, per element.

    The native operation 'leaky_relu' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericLeakyReLUOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('leaky_relu')
        >>> type(op).__name__, op._operation_name
        ('GenericLeakyReLUOperation', 'leaky_relu')
    """

class GenericMatmulOperation(Operation):
    """out[i, j] = sum over k of lhs[i, k] * rhs[j, k] (lhs @ rhs.T) for two-mode tensors.

    The native operation 'matmul' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericMatmulOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('matmul')
        >>> type(op).__name__, op._operation_name
        ('GenericMatmulOperation', 'matmul')
    """

class GenericPowOperation(Operation):
    """tensor ** exponent per element with the host's **; the context keeps the exponent object.

    The native operation 'pow' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericPowOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('pow')
        >>> type(op).__name__, op._operation_name
        ('GenericPowOperation', 'pow')
    """

class GenericReLUOperation(Operation):
    """max(0, x) per element with the host's max (a negative float gives the integer 0).

    The native operation 'relu' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericReLUOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('relu')
        >>> type(op).__name__, op._operation_name
        ('GenericReLUOperation', 'relu')
    """

class GenericReduceSumOperation(Operation):
    """out[i] = sum over j of tensor[i, j] for a two-mode tensor, with the host's sum; the output layout is canonical column-major over mode 0.

    The native operation 'reduce' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericReduceSumOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('reduce')
        >>> type(op).__name__, op._operation_name
        ('GenericReduceSumOperation', 'reduce')
    """

class GenericScalarMulOperation(Operation):
    """tensor * scalar per element; the context keeps the scalar object.

    The native operation 'mul' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericScalarMulOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('mul')
        >>> type(op).__name__, op._operation_name
        ('GenericScalarMulOperation', 'mul')
    """

class GenericSiLUOperation(Operation):
    """x*sigmoid(x) per element; the context keeps sigmoid(x).

    The native operation 'silu' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericSiLUOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('silu')
        >>> type(op).__name__, op._operation_name
        ('GenericSiLUOperation', 'silu')
    """

class GenericSigmoidOperation(Operation):
    """The numerically stable logistic function per element; the context keeps the outputs.

    The native operation 'sigmoid' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericSigmoidOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('sigmoid')
        >>> type(op).__name__, op._operation_name
        ('GenericSigmoidOperation', 'sigmoid')
    """

class GenericSoftplusOperation(Operation):
    """log1p(exp(-|x|)) + max(x, 0) per element.

    The native operation 'softplus' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericSoftplusOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('softplus')
        >>> type(op).__name__, op._operation_name
        ('GenericSoftplusOperation', 'softplus')
    """

class GenericSubOperation(Operation):
    """Elementwise lhs - rhs with the host's -.

    The native operation 'sub' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericSubOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('sub')
        >>> type(op).__name__, op._operation_name
        ('GenericSubOperation', 'sub')
    """

class GenericTanhOperation(Operation):
    """tanh per element; the context keeps the outputs.

    The native operation 'tanh' of the generic backend: forward(*inputs) runs it and records the autograd context, backward(gradient) returns one gradient per saved input.

    Returns:
        GenericTanhOperation: the operation.

    Examples:
        >>> op = Generic([1.0]).dispatch_op('tanh')
        >>> type(op).__name__, op._operation_name
        ('GenericTanhOperation', 'tanh')
    """
