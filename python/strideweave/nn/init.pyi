"""Parameter initialisers for ``strideweave.nn``."""

import random
from typing import Any

from strideweave.tensor import Tensor

__all__ = ["fill_", "kaiming_uniform_"]

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
