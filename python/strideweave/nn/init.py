"""Parameter initialisers for ``strideweave.nn``.

Each writes every logical element of a tensor in logical order (first mode
fastest) through the tensor's own layout.

Examples:
    >>> import random
    >>> import strideweave.friendly as F
    >>> from strideweave.nn import init
    >>> w = F.zeros(2, 3)
    >>> init.kaiming_uniform_(w, 3, rng=random.Random(0))
    >>> all(abs(v) <= 3**-0.5 for v in F.to_list(w))
    True
"""

from __future__ import annotations

import math
import random
from typing import Any

from strideweave.tensor import Tensor

__all__ = ["fill_", "kaiming_uniform_"]


def _check_tensor(parameter: object) -> Tensor:
    if not isinstance(parameter, Tensor):
        raise TypeError("parameter must be a Tensor")
    return parameter


def fill_(parameter: Tensor, value: Any) -> None:
    """Writes value at every logical element of parameter.

    Args:
        parameter: a mutable Tensor.
        value: the value to store.

    Returns:
        None.

    Raises:
        TypeError: a non-Tensor, or a value the carrier refuses.
        RuntimeError: an immutable carrier.

    Examples:
        >>> import strideweave.friendly as F
        >>> from strideweave.nn import init
        >>> t = F.zeros(3)
        >>> init.fill_(t, 0.5)
        >>> F.to_list(t)
        [0.5, 0.5, 0.5]
    """
    tensor = _check_tensor(parameter)
    for i in range(tensor.size()):
        tensor[i] = value


def kaiming_uniform_(parameter: Tensor, fan_in: int, *, rng: random.Random) -> None:
    """Fills parameter with ``rng.uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))`` draws.

    The draws are taken in logical order, one per element, so a shared rng
    gives reproducible initialisations.

    Args:
        parameter: a mutable Tensor.
        fan_in: the number of inputs per output, a positive int.
        rng: the generator (a required keyword).

    Returns:
        None.

    Raises:
        TypeError: a non-Tensor.
        ValueError: a fan_in that is not positive.

    Examples:
        >>> import random
        >>> import strideweave.friendly as F
        >>> from strideweave.nn import init
        >>> t = F.zeros(4)
        >>> init.kaiming_uniform_(t, 4, rng=random.Random(1))
        >>> all(-0.5 <= v <= 0.5 for v in F.to_list(t))
        True
    """
    tensor = _check_tensor(parameter)
    if fan_in <= 0:
        raise ValueError("fan_in must be positive")
    bound = 1.0 / math.sqrt(fan_in)
    for i in range(tensor.size()):
        tensor[i] = rng.uniform(-bound, bound)
