"""Implementation package of strideweave; import public names from strideweave."""

__all__: list[str] = []
