"""The store: cox.db, rollouts and the archive under ``$COX_HOME``, behind one writer actor."""

from .layout import Layout, cox_home
from .rollout import RolloutRead, RolloutWriter, read_rollout

__all__ = ["Layout", "RolloutRead", "RolloutWriter", "cox_home", "read_rollout"]
