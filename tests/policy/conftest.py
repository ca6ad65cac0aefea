"""Fixtures for the policy tests."""

from __future__ import annotations

import pytest

from cox.policy.permission import Engine

from .helpers import engine


@pytest.fixture
def example3() -> Engine:
    """The spec's Example 3 config."""
    return engine(allow=["Bash(cargo test:*)"], ask=["Bash(git commit:*)"], deny=["Read(~/.ssh/**)"])
