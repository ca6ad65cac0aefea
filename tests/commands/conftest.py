from __future__ import annotations

from pathlib import Path

import pytest

from tests.hooks.rig import Rig


@pytest.fixture
def rig(tmp_path: Path, cox_home: Path) -> Rig:
    return Rig(tmp_path, cox_home)
