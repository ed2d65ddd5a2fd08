"""ecombench: validated benchmark splits for LLM shopping agents from the Amazon Reviews 2023 catalog."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ecombench")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.0.0+unknown"
