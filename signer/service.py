"""What the signer service does with an authenticated request: policy first, then the key, then the
signature, logged (what, for whom, the message's SHA-256) and never the key or the message.

Operations other than `sign` (core/signer_protocol.OPERATIONS) are handlers in OPERATIONS: making a
generator's key here (`generate-key`), and those apps above register at start (`register_operation`), so
that the code that needs a key's work sits with its app and the key stays here. Likewise a purpose signed
with keys that are not a generator's (the log's checkpoints) is registered by its app (`register_purpose`)
with its own policy.

Policy: the generator exists and belongs to the organization the request names, is active and
server-managed; the key is the generator's current key with that kid; the algorithm is the one the
purpose takes (records and countersignatures ML-DSA-65; a C2PA claim ML-DSA-65, or ES256 for a hybrid
generator). Replays are the connection's to refuse (signer/server.py: a request is bound to its
connection's challenge and sequence number), before anything here runs.
"""

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from django.db import connection

from core.errors import KeyUnavailable
from core.signer_client import SignerRefused
from core.signer_protocol import SignRequest, SignResponse
from generators.certificates import generator_es256_key
from generators.models import Generator, GeneratorKey
from generators.services import KeyMaterial, generator_signing_seed, sealed_key_material
from record_format import crypto
from signer.backends.base import BackendError, BackendNotConfigured
from signer.backends.kms_encodings import ecdsa_der_to_raw
from signer.backends.registry import backend_named, default_backend_name
from signer.counting import signature_counted

logger = logging.getLogger("signer")

_ALGORITHMS = {"record": ("ml-dsa-65",), "c2pa-countersignature": ("ml-dsa-65",),
               "c2pa-claim": ("ml-dsa-65", "es256")}


Handler = Callable[[SignRequest], SignResponse]


@dataclass(frozen=True)
class PurposePolicy:
    """How a registered purpose is signed: `check` answers None or why the request is refused, `sign` the
    signature; `start` (optional) runs when the signer starts, say to publish the public keys."""

    check: Callable[[SignRequest], str | None]
    sign: Callable[[SignRequest], bytes]
    start: Callable[[], None] | None = None


_PURPOSES: dict[str, PurposePolicy] = {}


def request_sign(request: SignRequest) -> SignResponse:
    """What the request asks for (a signature, or an operation's result), or the reason it is refused."""
    handler = _OPERATIONS.get(request.op)
    if handler is None:
        return _refused(request, "bad_request", f"this signer does not do {request.op!r}")
    return handler(request)


def register_operation(op: str, handler: Handler) -> None:
    """Let `handler` answer operation `op` (one of signer_protocol.OPERATIONS); an app's ready() calls it."""
    _OPERATIONS[op] = handler


def register_purpose(purpose: str, policy: PurposePolicy) -> None:
    """Sign `purpose` (one of signer_protocol.PURPOSES) by `policy` instead of with a generator's key; an
    app's ready() calls it."""
    _PURPOSES[purpose] = policy


def purposes_start() -> None:
    """Run each registered purpose's `start` (the signer command, before it listens)."""
    for policy in _PURPOSES.values():
        if policy.start is not None:
            policy.start()


def generator_refusal(request: SignRequest, generator: Generator | None) -> SignResponse | None:
    """Why the request may not use `generator` (none, another organization's, revoked), or None."""
    if generator is None:
        return _refused(request, "not_found", "no such generator")
    if str(generator.org_id) != request.org_id:
        return _refused(request, "forbidden", "the generator belongs to another organization")
    if generator.is_revoked:
        return _refused(request, "revoked", "the generator is revoked")
    return None


def result(request: SignRequest, values: dict) -> SignResponse:
    """An operation's successful answer."""
    return SignResponse(request.request_id, result=values)


def refused(request: SignRequest, error: str, detail: str) -> SignResponse:
    """An operation's refusal (error one of signer_protocol.ERRORS), logged."""
    return _refused(request, error, detail)


# Table names from the models, values as parameters.
_KEY_WITH_GENERATOR = (
    f"SELECT g.id, g.org_id, g.status, g.mode, g.c2pa_signing, k.id, k.encrypted_private_key, k.key_backend, "  # noqa: S608
    f"k.key_reference, k.public_key FROM {GeneratorKey._meta.db_table} k "
    f"JOIN {Generator._meta.db_table} g ON g.id = k.generator_id "
    f"WHERE k.generator_id = %s AND k.kid = %s AND k.retired_at IS NULL")


@dataclass(frozen=True)
class KeyPolicy:
    """What a signature's policy reads, in one row: the generator's state and its current key `kid`. It reads
    like a GeneratorKey (and like its Generator, for `generator_refusal`) without building either model."""

    generator_id: uuid.UUID
    org_id: uuid.UUID
    status: str
    mode: str
    c2pa_signing: str
    pk: uuid.UUID
    kid: str
    encrypted_private_key: bytes | None
    key_backend: str
    key_reference: str
    public_key: bytes

    @property
    def is_revoked(self) -> bool:
        return self.status == Generator.Status.REVOKED

    @property
    def is_server_managed(self) -> bool:
        return self.mode == Generator.Mode.SERVER

    @classmethod
    def of(cls, key: GeneratorKey) -> "KeyPolicy":
        """The policy of a key row a caller in this process already holds (with its generator)."""
        generator = key.generator
        return cls(generator.pk, generator.org_id, generator.status, generator.mode, generator.c2pa_signing, key.pk,
                   key.kid, key.encrypted_private_key, key.key_backend, key.key_reference, key.public_key)

    def as_model(self) -> GeneratorKey:
        """The key as a GeneratorKey with its Generator, for the code that takes models (a hybrid's ES256 key)."""
        generator = Generator(id=self.generator_id, org_id=self.org_id, status=self.status, mode=self.mode,
                              c2pa_signing=self.c2pa_signing)
        return GeneratorKey(id=self.pk, generator=generator, kid=self.kid, retired_at=None, public_key=self.public_key,
                            key_backend=self.key_backend, key_reference=self.key_reference,
                            encrypted_private_key=self.encrypted_private_key)


class _PolicyCursor(threading.local):
    """This thread's kept psycopg cursor for the policy read, and the connection it belongs to."""

    raw_connection: object = None
    cursor: object = None


_policy_cursor = _PolicyCursor()


def _current_key(generator_id: uuid.UUID, kid: str) -> KeyPolicy | None:
    """The generator's current key `kid` with its generator's state, in one prepared statement on a cursor this
    thread keeps, without the ORM or Django's cursor wrapper: the signer's hot path (docs/architecture.md,
    "Where we step around Django")."""
    row = _policy_row([Generator._meta.pk.get_db_prep_value(generator_id, connection), kid])
    if row is None:
        return None
    gid, org_id, status, mode, c2pa_signing, key_id, sealed, backend, reference, public_key = row
    return KeyPolicy(_as_uuid(gid), _as_uuid(org_id), status, mode, c2pa_signing, _as_uuid(key_id), kid,
                     bytes(sealed) if sealed is not None else None, backend, reference, bytes(public_key))


def _policy_row(params: list) -> tuple | None:
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_KEY_WITH_GENERATOR, params)
            return cursor.fetchone()
    connection.ensure_connection()
    raw = connection.connection
    with connection.wrap_database_errors:  # Django's errors, and a broken connection is closed at the next request
        if _policy_cursor.raw_connection is not raw:  # Django reconnected: a cursor of the new connection
            _policy_cursor.raw_connection, _policy_cursor.cursor = raw, raw.cursor()
        _policy_cursor.cursor.execute(_KEY_WITH_GENERATOR, params, prepare=True)
        return _policy_cursor.cursor.fetchone()


def _as_uuid(value: object) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def signature_in_process(request: SignRequest, key: GeneratorKey) -> bytes:
    """`request_sign` for a caller in this process (no signer service) that has the key's row at hand: the
    same policy on it, no replay check (nothing crossed a socket). Raises SignerRefused."""
    answer = _policy_and_sign(request, KeyPolicy.of(key), known_retired=key.retired_at is not None)
    if answer.signature is None:
        raise SignerRefused(answer.error or "refused", answer.detail)
    return answer.signature


def _policy_and_sign(request: SignRequest, known: KeyPolicy | None = None, *, known_retired: bool = False
                     ) -> SignResponse:
    if request.purpose in _PURPOSES:
        return _purpose_sign(request, _PURPOSES[request.purpose])
    if known is not None and str(known.generator_id) == request.generator_id and known.kid == request.kid:
        generator = known
        key = None if known_retired else known  # kids are unique per generator: no other current one
    else:  # one query on the way that signs: the current key with its generator; the generator alone to say why not
        generator_id = _uuid(request.generator_id)
        key = _current_key(generator_id, request.kid) if generator_id else None
        generator = key if key is not None else (
            Generator.objects.filter(pk=generator_id).first() if generator_id else None)
    refusal = generator_refusal(request, generator)
    if refusal is not None:
        return refusal
    if not generator.is_server_managed:
        return _refused(request, "refused", "the service holds no key of a client-managed generator")
    if key is None:
        return _refused(request, "not_found", "no current key with this kid")
    if request.algorithm not in _ALGORITHMS.get(request.purpose, ()) or (
            request.algorithm == "es256" and generator.c2pa_signing != Generator.C2paSigning.HYBRID):
        return _refused(request, "refused", f"{request.purpose} is not signed with {request.algorithm} here")
    try:
        signature = _sign(key, request)
    except KeyUnavailable:
        return _refused(request, "unavailable", "the key does not unseal (logged for the operator)")
    logger.info("signed %s for generator %s (kid %s, org %s), message sha256 %s", request.purpose,
                request.generator_id, request.kid, request.org_id, request.message_digest)
    signature_counted(org_id=request.org_id, generator_id=request.generator_id, purpose=request.purpose,
                      algorithm=request.algorithm)
    return SignResponse(request.request_id, signature=signature)


def _purpose_sign(request: SignRequest, policy: PurposePolicy) -> SignResponse:
    reason = policy.check(request)
    if reason is not None:
        return _refused(request, "refused", reason)
    signature = policy.sign(request)
    logger.info("signed %s with %s, message sha256 %s", request.purpose, request.algorithm, request.message_digest)
    signature_counted(org_id=request.org_id, generator_id=None, purpose=request.purpose, algorithm=request.algorithm)
    return SignResponse(request.request_id, signature=signature)


def _sign(key: KeyPolicy, request: SignRequest) -> bytes:
    if request.algorithm == "ml-dsa-65":
        if key.key_backend != "sealed":
            return _backend_signature(key.key_backend, key.key_reference, request)
        return crypto.sign(generator_signing_seed(key), request.message)
    held = generator_es256_key(key.as_model())
    if held.private_key is None:
        return _backend_signature(held.backend, held.reference, request)
    return ecdsa_der_to_raw(held.private_key.sign(request.message, ec.ECDSA(hashes.SHA256())))  # COSE's r || s


def _backend_signature(backend: str, reference: str, request: SignRequest) -> bytes:
    try:
        return backend_named(backend).sign(reference, request.algorithm, request.message)
    except BackendError as error:
        logger.error("backend %s could not sign for generator %s: %s", backend, request.generator_id, error)
        raise KeyUnavailable() from None


def _generate_key(request: SignRequest) -> SignResponse:
    """A new ML-DSA-65 key for generator `generator_id`, made here: sealed, or inside the backend the request
    names (a rotation keeps the generator's), else the deployment's. The generator's row may not be committed
    yet (registration makes both in one transaction), so nothing is checked of it: the key signs nothing
    until a GeneratorKey row of an active server-managed generator holds it, and `sign` checks that."""
    generator_id = _uuid(request.generator_id)
    if generator_id is None:
        return _refused(request, "bad_request", "generator_id is not a UUID")
    backend = str(request.args.get("backend") or default_backend_name())
    try:
        material = _key_material(generator_id, backend)
    except BackendNotConfigured:
        return _refused(request, "bad_request", f"no key backend {backend!r} is configured here")
    except BackendError as error:
        logger.error("backend %s could not make a key for generator %s: %s", backend, generator_id, error)
        return _refused(request, "unavailable", f"the {backend} backend could not make a key")
    logger.info("made key %s for generator %s in %s", material.kid, generator_id, material.backend)
    return result(request, material.as_result())


def _key_material(generator_id: uuid.UUID, backend: str) -> KeyMaterial:
    if backend == "sealed":
        return sealed_key_material(generator_id)
    made = backend_named(backend).generate("ml-dsa-65", f"generator {generator_id}")
    return KeyMaterial(kid=crypto.key_id(made.public_key), public_key=made.public_key, sealed=None,
                       backend=backend, reference=made.reference)


_OPERATIONS: dict[str, Handler] = {"sign": _policy_and_sign, "generate-key": _generate_key}


def _refused(request: SignRequest, error: str, detail: str) -> SignResponse:
    logger.warning("refused %s for generator %s (org %s): %s", request.purpose, request.generator_id,
                   request.org_id, detail)
    return SignResponse(request.request_id, error=error, detail=detail)


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None
