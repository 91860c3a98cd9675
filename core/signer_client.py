"""Asking the signer service, from a web or task worker: one frame out, one frame in, over the Unix socket
settings.SIGNER_SOCKET, authenticated both ways (core/signer_protocol.py).

`signer_call` does any operation; `signature_request` is its `sign`. The signer's refusals come back as
SignerRefused (the caller maps them to the API's errors); a signer that cannot be reached, or answers what
it should not, is ServiceUnavailable (503 with Retry-After): nothing was done.
"""

import socket
import threading
import time
from dataclasses import dataclass

from django.conf import settings

from core import signer_protocol as protocol
from core.errors import RETRY_AFTER_UNAVAILABLE, ServiceUnavailable
from core.keyring import signer_secret

TIMEOUT_SECONDS = 5.0
# Issuing certificates may make a CA (two key pairs, ML-DSA among them) on first need.
SLOW_OPERATION_TIMEOUT_SECONDS = 30.0


class SignerRefused(Exception):
    """The signer answered and did not do it: `error` is one of signer_protocol.ERRORS."""

    def __init__(self, error: str, detail: str):
        super().__init__(f"{error}: {detail}")
        self.error, self.detail = error, detail


def signer_configured() -> bool:
    """Whether a signer service holds the keys (SIGNER_SOCKET set): then this process holds none."""
    return bool(settings.SIGNER_SOCKET)


def signer_call(op: str, *, org_id: str = "", generator_id: str = "", kid: str = "", args: dict | None = None,
                path: str | None = None, secret: bytes | None = None) -> dict:
    """The result of operation `op` (not `sign`) at the configured signer. Raises SignerRefused,
    ServiceUnavailable."""
    request = protocol.SignRequest.new(org_id=org_id, generator_id=generator_id, kid=kid, op=op, args=args,
                                       now_ms=int(time.time() * 1000))
    answer = _exchange(request, path, secret, SLOW_OPERATION_TIMEOUT_SECONDS)
    return answer.result or {}


def signature_request(*, org_id: str, generator_id: str, kid: str, algorithm: str, purpose: str, message: bytes,
                      path: str | None = None, secret: bytes | None = None) -> bytes:
    """The signature, or SignerRefused; ServiceUnavailable (503) when the signer cannot be reached or
    answers what it should not."""
    request = protocol.SignRequest.new(org_id=org_id, generator_id=generator_id, kid=kid, algorithm=algorithm,
                                       purpose=purpose, message=message, now_ms=int(time.time() * 1000))
    answer = _exchange(request, path, secret, TIMEOUT_SECONDS)
    if answer.signature is None:
        raise ServiceUnavailable("The signing service answered without a signature; nothing was signed.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
    return answer.signature


@dataclass
class _Channel:
    """A kept connection to the signer: its socket, the challenge of its hello, the last sequence number used."""

    connection: socket.socket
    challenge: bytes
    sequence: int = 0


class _Connections(threading.local):
    """One open connection to the signer per thread and socket path, kept between requests: the signer
    serves each connection with one thread and one database connection, so a connection a request would
    open and close costs both ends their setup every time."""

    def __init__(self) -> None:
        self.open: dict[str, _Channel] = {}

    def get(self, path: str, secret: bytes, timeout: float) -> tuple[_Channel, bool]:
        """(a channel, whether it was kept from before). A new one reads the signer's hello first."""
        channel = self.open.get(path)
        if channel is not None:
            if channel.connection.gettimeout() != timeout:  # settimeout costs two fcntl calls, even unchanged
                channel.connection.settimeout(timeout)
            return channel, True
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.settimeout(timeout)
            connection.connect(path)
            challenge = protocol.open_hello(protocol.read_frame(connection), secret)
        except (OSError, EOFError, protocol.ProtocolError):
            connection.close()
            raise
        channel = self.open[path] = _Channel(connection, challenge)
        return channel, False

    def drop(self, path: str) -> None:
        channel = self.open.pop(path, None)
        if channel is not None:
            channel.connection.close()


_connections = _Connections()


def _exchange(request: protocol.SignRequest, path: str | None, secret: bytes | None,
              timeout: float) -> protocol.SignResponse:
    path = path or settings.SIGNER_SOCKET
    secret = secret or signer_secret()
    try:
        try:
            answer = _send(request, path, secret, timeout)
        except (OSError, EOFError) as error:
            # A kept connection the signer closed (it restarted, or dropped an idle one) fails before any answer:
            # once more on a new connection. Only then: an answer lost after the send is not guessed at.
            if not getattr(error, "kept_connection", False):
                raise
            answer = _send(request, path, secret, timeout)
    except (OSError, EOFError, protocol.ProtocolError) as error:
        raise ServiceUnavailable(f"The signing service is unavailable ({type(error).__name__}); nothing was "
                                 "signed. Try again shortly.",
                                 headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)}) from None
    if answer.error is not None:
        raise SignerRefused(answer.error, answer.detail)
    return answer


def _send(request: protocol.SignRequest, path: str, secret: bytes, timeout: float) -> protocol.SignResponse:
    channel, kept = _connections.get(path, secret, timeout)
    channel.sequence += 1
    frame = protocol.seal_request(request, secret, challenge=channel.challenge, sequence=channel.sequence)
    try:
        protocol.write_frame(channel.connection, frame)
        body = protocol.read_frame(channel.connection)
    except (OSError, EOFError) as error:
        _connections.drop(path)
        # EOF at the start of the answer on a kept connection: the signer had closed it before our frame.
        error.kept_connection = kept and isinstance(error, EOFError | BrokenPipeError | ConnectionResetError)
        raise
    except protocol.ProtocolError:
        _connections.drop(path)
        raise
    try:
        return protocol.open_response(body, secret, request_id=request.request_id)
    except protocol.ProtocolError:
        _connections.drop(path)
        raise
