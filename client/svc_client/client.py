"""The service's API as Python calls: signing (both modes), verification, records, keys and the log."""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import requests

from svc_client import multipart
from svc_client.errors import ServiceError, ServiceUnavailable
from svc_client.keys import PinnedKeys
from svc_client.merkle import ProofError
from svc_client.signing import RecordDraft
from svc_client.transport import Progress, Response, RetryPolicy, Transport

BATCH_MAX = 50  # spec: POST /v1/records/batch takes up to 50 items


def new_idempotency_key() -> str:
    """A fresh `Idempotency-Key` for one signing call, kept across its retries."""
    return str(uuid.uuid4())


class Verification(TypedDict, total=False):
    authentic: bool
    tampered: bool
    confidence: str
    token_source: str
    signals: dict[str, bool]
    provenance: dict[str, str] | None
    reason: str
    record_id: str | None


class Record(TypedDict, total=False):
    record_id: str
    generator_id: str
    org: str
    model: str
    watermark_id: str
    content_hash: str
    phash: str | None
    signature: str
    signature_algorithm: str
    kid: str
    signed_payload: dict[str, str]
    signed_at: str
    format: str | None
    token: str
    log: dict[str, Any]


@dataclass(frozen=True)
class RecordCreated:
    token: str
    record_id: str


@dataclass(frozen=True)
class SignedFile:
    """What POST /v1/sign returns: the signed bytes and the headers that describe them."""

    data: bytes
    token: str
    record_id: str
    format: str
    content_type: str


class Client:
    """One service. `api_key` is needed for signing and registration only; reads and verify are public.

    Every method raises a ServiceError subclass for an error answer and ServiceUnavailable when the
    service cannot be reached (after the retries, for idempotent calls).
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, session: requests.Session | None = None):
        self.transport = Transport(base_url, api_key, timeout=timeout, retry=retry, session=session)

    # --- generators and keys ---------------------------------------------------------------------------

    def generator_register(self, *, name: str, public_key: str | None = None, kid: str | None = None,
                           supported_formats: Sequence[str] | None = None,
                           c2pa_signing: str | None = None, provider_name: str | None = None,
                           system_name: str | None = None, system_version: str | None = None,
                           digital_source_type: str | None = None) -> dict[str, Any]:
        """POST /v1/generators: client-managed with `public_key` (base64), server-managed without;
        `c2pa_signing` "hybrid" has its C2PA manifests signed ES256 + ML-DSA-65 (default "ml-dsa-65"); the
        provider, system, version and IPTC digital source type are what its signed files disclose."""
        body: dict[str, Any] = {"name": name}
        if public_key is not None:
            entry = {"algorithm": "ml-dsa-65", "key": public_key}
            body["public_keys"] = [{**entry, "kid": kid} if kid else entry]
        if supported_formats is not None:
            body["supported_formats"] = list(supported_formats)
        if c2pa_signing is not None:
            body["c2pa_signing"] = c2pa_signing
        declared = {"provider_name": provider_name, "system_name": system_name, "system_version": system_version,
                    "digital_source_type": digital_source_type}
        body.update({field: value for field, value in declared.items() if value is not None})
        return self._json("POST", "/v1/generators", idempotent=False, json=body, authenticated=True)

    def generator_rotate(self, generator_id: str, *, public_key: str | None = None,
                         kid: str | None = None) -> dict[str, Any]:
        """POST /v1/generators/:id/rotate: a new key (client-managed: the given one); old records keep theirs."""
        body: dict[str, Any] = {}
        if public_key is not None:
            body["public_key"] = {"algorithm": "ml-dsa-65", "key": public_key, **({"kid": kid} if kid else {})}
        return self._json("POST", f"/v1/generators/{generator_id}/rotate", idempotent=False, json=body,
                          authenticated=True)

    def keys_get(self, generator_id: str) -> dict[str, Any]:
        """GET /v1/keys/:generator_id: every public key the generator used (what `svc keys pin` stores)."""
        return self._json("GET", f"/v1/keys/{generator_id}", idempotent=True)

    def trust_anchors(self) -> dict[str, Any]:
        """GET /v1/c2pa/trust-anchors: the certificates this deployment's manifests and time stamps chain to."""
        return self._json("GET", "/v1/c2pa/trust-anchors", idempotent=True)

    def keys_pinned(self, generator_id: str) -> PinnedKeys:
        return PinnedKeys.from_document(self.keys_get(generator_id))

    # --- signing ---------------------------------------------------------------------------------------

    def record_submit(self, draft: RecordDraft) -> RecordCreated:
        """POST /v1/records with a locally signed record (retried under one Idempotency-Key: stored once)."""
        body = self._json("POST", "/v1/records", idempotent=False, json=draft.body(), authenticated=True,
                          idempotency_key=new_idempotency_key())
        return RecordCreated(token=body["token"], record_id=body["record_id"])

    def records_submit(self, drafts: Sequence[RecordDraft],
                       on_batch: Callable[[int, int], None] | None = None) -> list[RecordCreated]:
        """POST /v1/records/batch in batches of 50, in order; `on_batch(done, total)` after each batch.

        A failing batch raises its ServiceError (the service stores none of it); the batches before it stay
        stored, and the error's `stored` lists them.
        """
        created: list[RecordCreated] = []
        for start in range(0, len(drafts), BATCH_MAX):
            items = [draft.body() for draft in drafts[start:start + BATCH_MAX]]
            try:
                body = self._json("POST", "/v1/records/batch", idempotent=False, json={"records": items},
                                  authenticated=True, idempotency_key=new_idempotency_key())
            except ServiceError as error:
                error.stored = created
                raise
            created += [RecordCreated(token=item["token"], record_id=item["record_id"]) for item in body["results"]]
            if on_batch:
                on_batch(len(created), len(drafts))
        return created

    def sign(self, data: bytes, *, generator_id: str, model: str, family: str | None = None,
             filename: str = "content", progress: Progress | None = None, c2pa: bool = False,
             watermark: bool = True, visible_label: bool = False) -> SignedFile:
        """POST /v1/sign (server-managed generator): the file back, watermarked and carrying its token (and,
        with `c2pa`, a C2PA manifest where its format carries one; without `watermark`, no mark; with
        `visible_label`, the generator's visible AI label on it)."""
        fields = {"generator_id": generator_id, "model": model, **({"format": family} if family else {}),
                  **({"c2pa": "true"} if c2pa else {}), **({} if watermark else {"watermark": "false"}),
                  **({"disclosure": "visible"} if visible_label else {})}
        body, content_type = multipart.encode(fields, {"content": (filename, data)})
        response = self.transport.request("POST", "/v1/sign", idempotent=False, body=body,
                                          content_type=content_type, progress=progress, authenticated=True,
                                          idempotency_key=new_idempotency_key())
        headers = {key.lower(): value for key, value in response.headers.items()}
        if not {"x-service-token", "x-service-record-id", "x-service-format"} <= headers.keys():
            raise ServiceUnavailable("the answer carries no X-Service-Token: is the URL the service's?")
        return SignedFile(data=response.content, token=headers["x-service-token"],
                          record_id=headers["x-service-record-id"], format=headers["x-service-format"],
                          content_type=headers.get("content-type", "application/octet-stream"))

    # --- verification and records -----------------------------------------------------------------------

    def verify(self, data: bytes, *, token: str | None = None, filename: str = "content",
               progress: Progress | None = None) -> Verification:
        """POST /v1/verify: the service's verdict on a file (retried: verifying twice changes nothing)."""
        body, content_type = multipart.encode({"token": token} if token else {}, {"content": (filename, data)})
        response = self.transport.request("POST", "/v1/verify", idempotent=True, body=body,
                                          content_type=content_type, progress=progress)
        return response.json()

    def record_get(self, record_id: str) -> Record:
        """GET /v1/records/:record_id."""
        return self._json("GET", f"/v1/records/{record_id}", idempotent=True)

    # --- transparency log --------------------------------------------------------------------------------

    def log_checkpoint(self) -> str:
        """GET /v1/log/checkpoint: the latest signed checkpoint, as its note text."""
        return self.transport.request("GET", "/v1/log/checkpoint", idempotent=True).content.decode()

    def log_keys(self) -> dict[str, Any]:
        """GET /v1/log/keys: the log's public keys (what `svc log pin` stores)."""
        return self._json("GET", "/v1/log/keys", idempotent=True)

    def log_consistency(self, first: int, second: int) -> list[bytes]:
        """GET /v1/log/consistency?first=&second=: the RFC 9162 proof between two tree sizes, decoded.

        Raises ProofError for an answer that holds no list of base64 hashes.
        """
        document = self._json("GET", f"/v1/log/consistency?first={first}&second={second}", idempotent=True)
        items = document.get("consistency_proof") if isinstance(document, dict) else None
        try:
            return [base64.b64decode(item, validate=True) for item in items]
        except (TypeError, binascii.Error):
            raise ProofError("the log's consistency proof is malformed") from None

    def _json(self, method: str, path: str, **options: Any) -> Any:
        response: Response = self.transport.request(method, path, **options)
        return response.json()
