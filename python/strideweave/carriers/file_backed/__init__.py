"""The FileBacked carrier: raw numeric values in a binary file."""

from strideweave.carriers.file_backed.carrier import FileBacked

__all__ = ["FileBacked"]
