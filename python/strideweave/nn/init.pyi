"""Parameter initialisers for ``strideweave.nn``."""

import random
from typing import Any

from strideweave.tensor import Tensor

__all__ = ["fill_", "kaiming_uniform_"]

def fill_(parameter: Tensor, value: Any) -> None: ...
def kaiming_uniform_(parameter: Tensor, fan_in: int, *, rng: random.Random) -> None: ...
