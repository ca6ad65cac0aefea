"""cox's session ids as Claude Code's: a UUID in this dialect.

cox names a session with a ULID (26 characters of Crockford base32: 128 bits). A UUID is 128 bits
too, so the two are the same number written two ways: the dialect shows the UUID, and
``--resume UUID`` reads it back as the ULID the store knows. Nothing is stored twice, and any id
cox prints in either dialect resumes the same session.
"""

from __future__ import annotations

import uuid

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_VALUE = {c: i for i, c in enumerate(_ALPHABET)}


def ulid_to_uuid(ulid: str) -> str:
    """The UUID of a ULID; anything that is not one is returned unchanged."""
    text = ulid.upper()
    if len(text) != 26 or any(c not in _VALUE for c in text) or _VALUE[text[0]] > 7:
        return ulid
    n = 0
    for c in text:
        n = (n << 5) | _VALUE[c]
    return str(uuid.UUID(int=n))


def uuid_to_ulid(text: str) -> str:
    """The ULID a UUID stands for; anything that is not a UUID is returned unchanged."""
    try:
        n = uuid.UUID(text).int
    except (ValueError, AttributeError, TypeError):
        return text
    out = []
    for _ in range(26):
        out.append(_ALPHABET[n & 31])
        n >>= 5
    return "".join(reversed(out))
