"""irsim: distributed simulation framework for meta-evaluation in information retrieval."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("irsim-metaeval")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
