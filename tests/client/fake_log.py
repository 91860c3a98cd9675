"""A transparency log built in the test from the contract (RFC 9162 trees, C2SP signed-note checkpoints
with an Ed25519 and an ML-DSA-65 signature), to test the client's log commands before the service has one.

The tree code is the RFC's recursive definitions written out (MTH, PATH, PROOF of sections 2.1.1, 2.1.3.1
and 2.1.4.1), independent of the client's iterative verifier it checks.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey

ED25519_TYPE = b"\x01"
ML_DSA_65_TYPE = b"\xff" + b"ml-dsa-65/fips204-pure-empty-context"


def leaf(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = split_point(len(leaves))
    return node(mth(leaves[:k]), mth(leaves[k:]))


def path(m: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = split_point(len(leaves))
    if m < k:
        return [*path(m, leaves[:k]), mth(leaves[k:])]
    return [*path(m - k, leaves[k:]), mth(leaves[:k])]


def proof(m: int, leaves: list[bytes]) -> list[bytes]:
    if m == 0:
        return []
    return _subproof(m, leaves, True)


def _subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = split_point(n)
    if m <= k:
        return [*_subproof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*_subproof(m - k, leaves[k:], False), mth(leaves[:k])]


@dataclass
class NoteKey:
    name: str
    type: bytes
    private: Ed25519PrivateKey | MLDSA65PrivateKey

    @property
    def public(self) -> bytes:
        return self.private.public_key().public_bytes_raw()

    @property
    def key_id(self) -> bytes:
        return hashlib.sha256(self.name.encode() + b"\n" + self.type + self.public).digest()[:4]

    @property
    def vkey(self) -> str:
        return f"{self.name}+{self.key_id.hex()}+{base64.b64encode(self.type + self.public).decode()}"


def log_keys(origin: str) -> list[NoteKey]:
    return [NoteKey(origin, ED25519_TYPE, Ed25519PrivateKey.generate()),
            NoteKey(origin, ML_DSA_65_TYPE, MLDSA65PrivateKey.generate())]


def signed_checkpoint(origin: str, size: int, root: bytes, keys: list[NoteKey]) -> str:
    text = f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"
    lines = "".join(f"\u2014 {key.name} {base64.b64encode(key.key_id + key.private.sign(text.encode())).decode()}\n"
                    for key in keys)
    return text + "\n" + lines


@dataclass
class FakeLog:
    origin: str = "log.test/svc"
    keys: list[NoteKey] = field(default_factory=list)
    leaves: list[bytes] = field(default_factory=list)
    published: int = 0  # the tree size the checkpoint route shows
    forked: list[bytes] | None = None  # when set, the checkpoint route shows this other history

    def __post_init__(self) -> None:
        self.keys = self.keys or log_keys(self.origin)

    def append(self, entry: bytes) -> int:
        self.leaves.append(leaf(entry))
        return len(self.leaves) - 1

    def publish(self) -> None:
        self.published = len(self.leaves)

    def history(self) -> list[bytes]:
        return (self.forked or self.leaves)[:self.published]

    def checkpoint(self, size: int | None = None) -> str:
        """The signed checkpoint of the published tree (or of its first `size` entries)."""
        size = self.published if size is None else size
        return signed_checkpoint(self.origin, size, mth((self.forked or self.leaves)[:size]), self.keys)

    def log_field(self, index: int) -> dict:
        """What GET /v1/records/:id shows under `log` for the entry at `index`, at the published size."""
        leaves = self.history()
        return {"status": "integrated", "index": index, "tree_size": len(leaves),
                "inclusion_proof": [base64.b64encode(h).decode() for h in path(index, leaves)],
                "checkpoint": self.checkpoint()}

    def keys_document(self) -> dict:
        """GET /v1/log/keys as the log's branch serves it."""
        return {"origin": self.origin, "keys": [
            {"algorithm": "ed25519" if key.type == ED25519_TYPE else "ml-dsa-65", "key_id": key.key_id.hex(),
             "signature_type": key.type.hex(), "public_key": base64.b64encode(key.public).decode(),
             "vkey": key.vkey} for key in self.keys]}

    def consistency(self, first: int, second: int) -> dict:
        """GET /v1/log/consistency?first=&second= as the log's branch serves it."""
        history = (self.forked or self.leaves)[:second]
        return {"first": first, "second": second, "checkpoint": self.checkpoint(),
                "consistency_proof": [base64.b64encode(h).decode() for h in proof(first, history)]}


class _Handler(BaseHTTPRequestHandler):
    log: FakeLog

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/v1/log/checkpoint":
            self._send(self.log.checkpoint().encode(), "text/plain; charset=utf-8")
        elif url.path == "/v1/log/keys":
            self._send(json.dumps(self.log.keys_document()).encode(), "application/json")
        elif url.path == "/v1/log/consistency":
            query = parse_qs(url.query)
            body = self.log.consistency(int(query["first"][0]), int(query["second"][0]))
            self._send(json.dumps(body).encode(), "application/json")
        else:
            self._send(b'{"error": "not_found", "message": "no such path"}', "application/json", 404)

    def _send(self, body: bytes, content_type: str, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def serve(log: FakeLog) -> tuple[ThreadingHTTPServer, str]:
    """Serve the log's routes on a free port; returns the server (shut it down) and its base URL."""
    handler = type("Handler", (_Handler,), {"log": log})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
