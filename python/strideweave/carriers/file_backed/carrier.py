"""The FileBacked carrier: raw numeric values in a binary file.

Temporary files (``FileBacked()`` with no filename) have no name in the file
system: they go on release, when their carrier is garbage-collected, and
with the process however it ends, so nothing needs cleaning up at exit.
"""

from strideweave._native import FileBacked

__all__ = ["FileBacked"]
