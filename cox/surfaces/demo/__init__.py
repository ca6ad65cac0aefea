"""``cox demo``: a full session offline on a bundled scripted model."""
