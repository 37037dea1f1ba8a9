"""Proof-of-work solver for waitq challenges, for the Locust load test.

The scheme is in the Go package internal/challenge (doc.go): a challenge is
"c1.<payload>.<mac>", <payload> the unpadded base64url of a record whose
byte 1 is the difficulty; a solution is the smallest decimal nonce N such
that SHA-256(challenge + ":" + N) starts with that many zero bits (the same
nonce Go's challenge.Solve and the browser's pow-worker.js find).

    import pow
    solution = pow.solve(challenge)

CPython does about a million hashes a second per core here, so 16 bits take
tens of milliseconds and 20 bits about a second; a load test meant to
measure waitq should keep the difficulty low.
"""

import base64
import hashlib
import re

__all__ = ["difficulty", "solve", "meets"]


def difficulty(challenge: str) -> int:
    """Returns the difficulty (leading zero bits) of a challenge, checking its shape."""
    parts = challenge.split(".")
    if len(parts) != 3 or parts[0] != "c1" or len(parts[2]) != 22 or not re.fullmatch(r"[A-Za-z0-9_-]+", parts[1] + parts[2]):
        raise ValueError("malformed challenge")
    payload = parts[1]
    try:
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    except ValueError as err:
        raise ValueError("malformed challenge payload") from err
    # key id, difficulty, expiresAt (8), salt (16), E, event id, S, subject
    e = raw[26] if len(raw) > 26 else 0
    s = raw[27 + e] if len(raw) > 27 + e else 0
    bits = raw[1] if len(raw) > 1 else 0
    if e == 0 or s == 0 or len(raw) != 28 + e + s or bits == 0:
        raise ValueError("malformed challenge record")
    return bits


def meets(digest: bytes, bits: int) -> bool:
    """Reports whether digest starts with at least bits zero bits."""
    return int.from_bytes(digest, "big") >> (8 * len(digest) - bits) == 0


def solve(challenge: str) -> str:
    """Returns the smallest decimal nonce that solves challenge."""
    bits = difficulty(challenge)
    prefix = hashlib.sha256((challenge + ":").encode("ascii"))
    n = 0
    while True:
        h = prefix.copy()
        h.update(str(n).encode("ascii"))
        if meets(h.digest(), bits):
            return str(n)
        n += 1
