"""cox: a coding agent for the terminal, scripts and editors."""

from . import lightimport  # noqa: F401  # dataclasses without inspect and copy, before any module imports it

__version__ = "0.1.0"
