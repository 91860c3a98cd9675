"""Signatures for the rest of the service: through the signer service when SIGNER_SOCKET is set (the
key never enters this process), else in this process as before (development and tests without one).

Both paths apply the same policy (`signer.service`), so what the signer refuses is refused here too, and
its refusals come back as the API's errors.
"""

from core import signer_client as client
from core.errors import Forbidden, KeyUnavailable, NotFound, ServiceUnavailable
from core.signer_protocol import SignRequest
from generators.models import GeneratorKey
from signer import service

_REFUSALS = {"forbidden": Forbidden, "revoked": Forbidden, "not_found": NotFound, "unavailable": KeyUnavailable}


def signature_of(*, key: GeneratorKey, org_id: str, purpose: str, algorithm: str, message: bytes) -> bytes:
    """`message` signed by `key` for `purpose`. Raises Forbidden (revoked or another organization's),
    NotFound, KeyUnavailable, or ServiceUnavailable (503: the signer cannot be reached or refused)."""
    fields = {"org_id": org_id, "generator_id": str(key.generator_id), "kid": key.kid, "algorithm": algorithm,
              "purpose": purpose, "message": message}
    try:
        if client.signer_configured():
            return client.signature_request(**fields)
        return service.signature_in_process(SignRequest.new(now_ms=0, **fields), key)
    except client.SignerRefused as refused:
        raise _REFUSALS.get(refused.error, ServiceUnavailable)(f"The signing service refused: {refused.detail}.") \
            from None

