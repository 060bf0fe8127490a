import os
from typing import Any

import numpy as np

from strideweave.tensor import Tensor

def cpu_from_array(array: np.ndarray[Any, Any], *, column_major: bool = False) -> Tensor: ...
def save(obj: Any, path: str | os.PathLike[str]) -> None: ...
def load(path: str | os.PathLike[str], *, file_backed: bool = False) -> Any: ...
