"""The protocol: Submission in, Event out, and the types and interfaces every part shares.

No I/O happens here (no threads, sockets or processes), so every surface and test can use it.
"""

from .messages import *  # noqa: F403
from .messages import ProtocolError, decode_event, decode_submission, encode, to_dict  # noqa: F401
from .types import *  # noqa: F403
