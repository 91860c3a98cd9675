"""Asking the signer service for a signature, from a web or task worker: one frame out, one frame in, over
the Unix socket settings.SIGNER_SOCKET, authenticated both ways (signer.protocol)."""

import socket
import time

from core.errors import RETRY_AFTER_UNAVAILABLE, ServiceUnavailable
from signer import protocol

TIMEOUT_SECONDS = 5.0


class SignerRefused(Exception):
    """The signer answered and did not sign: `error` is one of protocol.ERRORS."""

    def __init__(self, error: str, detail: str):
        super().__init__(f"{error}: {detail}")
        self.error, self.detail = error, detail


def signature_request(*, path: str, secret: bytes, org_id: str, generator_id: str, kid: str, algorithm: str,
                      purpose: str, message: bytes) -> bytes:
    """The signature, or SignerRefused; ServiceUnavailable (503) when the signer cannot be reached or
    answers what it should not."""
    request = protocol.SignRequest.new(org_id=org_id, generator_id=generator_id, kid=kid, algorithm=algorithm,
                                       purpose=purpose, message=message, now_ms=int(time.time() * 1000))
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(TIMEOUT_SECONDS)
            connection.connect(path)
            protocol.write_frame(connection, protocol.seal_request(request, secret))
            answer = protocol.open_response(protocol.read_frame(connection), secret, request_id=request.request_id)
    except (OSError, EOFError, protocol.ProtocolError) as error:
        raise ServiceUnavailable(f"The signing service is unavailable ({type(error).__name__}); nothing was "
                                 "signed. Try again shortly.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)}) from None
    if answer.signature is None:
        raise SignerRefused(answer.error or "refused", answer.detail)
    return answer.signature
