"""The webhook delivery signature (spec, Events rule 2): `X-Service-Signature: t=<unix>,v1=<hex>`.

`v1` is the lowercase hex HMAC-SHA256, keyed with the endpoint secret, of `<t>.<raw body>`.
`signature_verify` is what a receiver runs: constant-time compare, 300-second replay window.

Pure module: no Django.
"""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "X-Service-Signature"
TOLERANCE_SECONDS = 300


def signature_header(*, secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The header value signing `body` at `timestamp` (default: now) with the endpoint `secret`."""
    t = int(time.time()) if timestamp is None else int(timestamp)
    return f"t={t},v1={_mac(secret, t, body)}"


def signature_verify(*, secret: str, body: bytes, header: str, now: int | None = None,
                     tolerance: int = TOLERANCE_SECONDS) -> bool:
    """Whether `header` signs `body` with `secret` and its timestamp is at most `tolerance` seconds old."""
    fields = _fields(header)
    try:
        t = int(fields["t"])
    except (KeyError, ValueError):
        return False
    now = int(time.time()) if now is None else int(now)
    if abs(now - t) > tolerance:
        return False
    expected = _mac(secret, t, body)
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1s", []))


def _mac(secret: str, t: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{t}.".encode() + bytes(body), hashlib.sha256).hexdigest()


def _fields(header: str) -> dict:
    fields: dict = {"v1s": []}
    for item in (header or "").split(","):
        key, _, value = item.strip().partition("=")
        if key == "v1":  # several v1 values are allowed, as during a secret rotation
            fields["v1s"].append(value)
        elif key == "t":
            fields["t"] = value
    return fields
