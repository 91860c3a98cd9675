"""Asking the deployment's time-stamp authority (settings.TSA_URL) for an RFC 3161 token over some bytes.

The request, and the checks that the answer is a granted stamp of exactly those bytes, are
record_format.timestamp's (pure, shared with the client). Here is the exchange: one POST of the
DER request as `application/timestamp-query`, an answer read up to the token size limit. Each network
wait gets TSA_TIMEOUT_SECONDS, and the body is read as it arrives with the time checked after each
piece, so a TSA that trickles its answer is given up within two timeouts of the request.
"""

import functools
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import requests
import urllib3
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from django.conf import settings

from record_format import timestamp

_CHUNK_BYTES = 8192
_PARALLEL_STAMPS = 8  # requests in flight at once for a batch: a TSA is a shared service


class TimestampUnavailable(Exception):
    """The authority could not be reached, or did not answer with a stamp of what was sent."""


def stamp(data: bytes, *, url: str | None = None) -> bytes | None:
    """The DER TimeStampToken over `data`, or None when no authority is configured."""
    url = url if url is not None else settings.TSA_URL
    if not url:
        return None
    request = timestamp.request_for(data)
    deadline = time.monotonic() + settings.TSA_TIMEOUT_SECONDS
    try:
        with requests.post(url, data=request.as_bytes(), stream=True, allow_redirects=False,
                           timeout=settings.TSA_TIMEOUT_SECONDS,
                           headers={"Content-Type": "application/timestamp-query",
                                    "Accept": "application/timestamp-reply",
                                    "Accept-Encoding": "identity"}) as answer:
            if answer.status_code != 200:
                raise TimestampUnavailable(f"the time-stamp authority answered HTTP {answer.status_code}")
            content_type = answer.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type != "application/timestamp-reply":
                raise TimestampUnavailable(f"the time-stamp authority answered {content_type or 'no'} content")
            body = _read_bounded(answer, deadline)
    except (requests.RequestException, urllib3.exceptions.HTTPError) as error:  # read1 raises urllib3's own
        raise TimestampUnavailable(f"the time-stamp authority could not be reached: {type(error).__name__}") from None
    try:
        return timestamp.token_from_response(body, request)
    except timestamp.TimestampError as error:
        raise TimestampUnavailable(str(error)) from None


def stamp_many(messages: Sequence[bytes], *, url: str | None = None) -> list[bytes | None]:
    """`stamp` of each message, the requests in parallel: one round trip for a manifest's signatures and
    its record's, or a batch of records. Raises TimestampUnavailable when any fails."""
    if len(messages) <= 1:
        return [stamp(message, url=url) for message in messages]
    with ThreadPoolExecutor(max_workers=min(len(messages), _PARALLEL_STAMPS)) as pool:
        return list(pool.map(lambda message: stamp(message, url=url), messages))


def _read_bounded(answer: requests.Response, deadline: float) -> bytes:
    # read1 returns what one receive brings; iter_content would wait for a whole chunk however slowly
    # it arrives. The body is raw: identity was the only encoding asked for.
    body = bytearray()
    while chunk := answer.raw.read1(_CHUNK_BYTES):
        body += chunk
        if len(body) > timestamp.MAX_TOKEN_BYTES:
            raise TimestampUnavailable(f"the time-stamp answer is over {timestamp.MAX_TOKEN_BYTES} bytes")
        if time.monotonic() > deadline:
            raise TimestampUnavailable("the time-stamp authority took too long to answer")
    return bytes(body)


def tsa_roots() -> tuple[bytes, ...]:
    """The DER root certificates of settings.TSA_ROOTS_FILE (none when unset): what stamps must chain to."""
    return _roots_from(settings.TSA_ROOTS_FILE)


@functools.cache
def _roots_from(path: str) -> tuple[bytes, ...]:
    if not path:
        return ()
    with open(path, "rb") as handle:
        return tuple(c.public_bytes(Encoding.DER) for c in x509.load_pem_x509_certificates(handle.read()))
