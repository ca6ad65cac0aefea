"""The session actor: the turn loop, request assembly and resume."""
