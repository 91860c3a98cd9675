"""RFC 3161 time-stamp tokens: the request for a signature's bytes, and the checks of what comes back.

A time-stamp authority (TSA) signs the SHA-256 digest of what we send with the time it saw it; the
token (a CMS SignedData, RFC 3161's TimeStampToken) is kept beside the signature it stamps and proves
that the signature existed then, whatever happens to our own clock or keys later. rfc3161-client parses
the DER and checks the CMS signature and the certificate chain; this module states what we accept.

Pure: no Django and no network (core/tsa.py asks the authority), so the client's offline verifier
checks tokens with the same code.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cryptography import x509

if TYPE_CHECKING:  # rfc3161-client's native library loads when a token is first handled, not in every worker
    from rfc3161_client import TimeStampRequest, TimeStampResponse

# A token carries the TSA's certificate chain: a few kilobytes. Anything far larger is not a token.
MAX_TOKEN_BYTES = 64 * 1024
# TimeStampResp ::= SEQUENCE { status PKIStatusInfo { status INTEGER 0 (granted) }, timeStampToken }
_GRANTED_STATUS = bytes.fromhex("3003020100")


class TimestampError(ValueError):
    """A time-stamp response or token that does not prove what it should; the message says why."""


def request_for(data: bytes) -> TimeStampRequest:
    """A request for the SHA-256 digest of `data`, with a fresh nonce, asking for the TSA's certificate."""
    from rfc3161_client import TimestampRequestBuilder

    return TimestampRequestBuilder().data(data).nonce(nonce=True).cert_request(cert_request=True).build()


def token_from_response(response: bytes, request: TimeStampRequest) -> bytes:
    """The TimeStampToken of the TSA's answer to `request`, after checking it answers that request.

    Checked here: the status is granted, the nonce and the digest are the request's. Who signed it is
    checked by `time_of` against the roots a verifier trusts (the service may not know them).
    """
    if len(response) > MAX_TOKEN_BYTES:
        raise TimestampError(f"the time-stamp response is {len(response)} bytes, over {MAX_TOKEN_BYTES}")
    decoded = _decode(response)
    from rfc3161_client import PKIStatus

    if decoded.status not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        raise TimestampError(f"the time-stamp authority refused: status {decoded.status} "
                             f"{' '.join(decoded.status_string)}".rstrip())
    info = decoded.tst_info
    if request.nonce is not None and info.nonce != request.nonce:
        raise TimestampError("the time-stamp response answers another request (nonce)")
    if (info.message_imprint.hash_algorithm != request.message_imprint.hash_algorithm
            or info.message_imprint.message != request.message_imprint.message):
        raise TimestampError("the time-stamp response stamps other data than was asked")
    return decoded.time_stamp_token()


def time_of(token: bytes, data: bytes, roots: Sequence[x509.Certificate]) -> datetime.datetime:
    """The time `token` proves for `data`, once it is shown to be a TSA's stamp of exactly these bytes.

    Raises TimestampError unless: the token's digest is that of `data`; its CMS signature verifies; the
    signer's certificate chains to one of `roots` as of the stamped time and has the time-stamping
    extended key usage, critical (RFC 3161, 2.3).
    """
    if not roots:
        raise TimestampError("no time-stamp authority is trusted here")
    if len(token) > MAX_TOKEN_BYTES:
        raise TimestampError(f"the time-stamp token is {len(token)} bytes, over {MAX_TOKEN_BYTES}")
    response = _decode(_granted_response(token))
    from rfc3161_client import VerificationError, VerifierBuilder

    builder = VerifierBuilder()
    for root in roots:
        builder = builder.add_root_certificate(root)
    try:
        builder.build().verify_message(response, data)
    except (VerificationError, ValueError) as error:
        raise TimestampError(f"the time-stamp token does not verify: {error}") from None
    return response.tst_info.gen_time.astimezone(datetime.UTC)


@dataclass(frozen=True)
class TokenFacts:
    """What a token states, read without checking it (`time_of` checks)."""

    time: datetime.datetime
    authority: str  # the signing certificate's common name (or its whole subject), "" when it carries none


def token_facts(token: bytes) -> TokenFacts:
    """The time and authority a token states. Raises TimestampError for bytes that are not a token."""
    if len(token) > MAX_TOKEN_BYTES:
        raise TimestampError(f"the time-stamp token is {len(token)} bytes, over {MAX_TOKEN_BYTES}")
    response = _decode(_granted_response(token))
    return TokenFacts(response.tst_info.gen_time.astimezone(datetime.UTC), _authority(response))


def _authority(response: TimeStampResponse) -> str:
    certificates = []
    for der in response.signed_data.certificates:
        try:
            certificates.append(x509.load_der_x509_certificate(der))
        except ValueError:
            continue
    if not certificates:
        return ""
    # The signer is the certificate that issued none of the others (the chain's leaf).
    leaves = [c for c in certificates
              if not any(other is not c and other.issuer == c.subject for other in certificates)] or certificates
    names = leaves[0].subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(names[0].value) if names else leaves[0].subject.rfc4514_string()


def _decode(response: bytes) -> TimeStampResponse:
    try:
        from rfc3161_client import decode_timestamp_response

        return decode_timestamp_response(response)
    except (ValueError, TypeError) as error:
        raise TimestampError(f"not a time-stamp response: {error}") from None


def _granted_response(token: bytes) -> bytes:
    """Wrap a stored token back into a granted TimeStampResp, the shape rfc3161-client verifies."""
    body = _GRANTED_STATUS + token
    return b"\x30" + _der_length(len(body)) + body


def _der_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    octets = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets
