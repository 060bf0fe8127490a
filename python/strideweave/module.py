"""Modules and parameters.

A re-export of ``strideweave.core.module``.
"""

from strideweave.core.module import Module, Parameter

__all__ = ["Module", "Parameter"]
