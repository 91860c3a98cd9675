"""The signer service's listener: a Unix socket only its own user (and group) can open, a thread per
connection, one authenticated frame in, one authenticated frame out, as many as the connection sends.
Workers keep their connection between requests (core/signer_client.py), so each thread keeps one database
connection for as long as its worker does.

Each connection starts with the signer's hello (its challenge); a request sent again on its connection is
answered `replayed`. A frame that does not authenticate (a forgery, or a request copied from another
connection) gets no answer: the connection is closed (an answer under our secret would tell a forger
nothing, but there is nothing it should be told).
"""

import logging
import os
import socket
import threading
import time
from pathlib import Path

from django.db import close_old_connections, connections

from core import signer_protocol as protocol
from signer.service import refused, request_sign

logger = logging.getLogger("signer")
SOCKET_MODE = 0o660  # the web workers' group may connect; nobody else


class SignerServer:
    def __init__(self, path: str, secret: bytes):
        self.path, self.secret = path, protocol.check_secret(secret)
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()

    def serve_forever(self) -> None:
        Path(self.path).unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, SOCKET_MODE)
        listener.listen(128)
        self._listener = listener
        logger.info("signer listening on %s", self.path)
        while not self._stopping.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                break  # closed by stop()
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            self._listener.close()
        Path(self.path).unlink(missing_ok=True)

    def _serve(self, connection: socket.socket) -> None:
        challenge, last_sequence = os.urandom(protocol.CHALLENGE_BYTES), 0
        checked_connections_at = float("-inf")
        with connection:
            try:
                protocol.write_frame(connection, protocol.seal_hello(challenge, self.secret))
                while True:
                    body = protocol.read_frame(connection)
                    request = protocol.open_request(body, self.secret, now_ms=int(time.time() * 1000),
                                                    challenge=challenge)
                    if request.sequence <= last_sequence:
                        answer = refused(request, "replayed", "this request was already answered on this connection")
                    else:
                        last_sequence = request.sequence
                        if time.monotonic() >= checked_connections_at + 1:
                            # Django's per-request check (a database connection past its age) once a second on
                            # this hot path; a database error ends this thread and its connection at once.
                            close_old_connections()
                            checked_connections_at = time.monotonic()
                        answer = request_sign(request)
                    protocol.write_frame(connection, protocol.seal_response(answer, self.secret))
            except EOFError:
                return
            except protocol.ProtocolError as error:
                logger.warning("signer: refused a frame and closed its connection: %s", error)
            except OSError:
                return
            finally:
                connections.close_all()  # this thread's: the connection it served is gone, and the thread with it
