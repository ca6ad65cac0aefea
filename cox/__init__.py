"""cox: a coding agent for the terminal, scripts and editors."""

__version__ = "0.1.0"
