"""Modules and parameters."""

from strideweave.core.module import Module as Module
from strideweave.core.module import Parameter as Parameter

__all__ = ["Module", "Parameter"]
