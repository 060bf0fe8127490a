"""The FileBacked carrier: raw numeric values in a binary file.

Temporary files (``FileBacked()`` with no filename) are removed on release,
when their carrier is garbage-collected, and at interpreter exit: importing
this module registers the library's clean-up with :mod:`atexit`.
"""

import atexit

from strideweave import _native
from strideweave._native import FileBacked

__all__ = ["FileBacked"]

atexit.register(_native._file_remove_temporaries)
