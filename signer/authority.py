"""The signer service's certificate work: the operations that need the C2PA CAs' private keys or seal a
C2PA private key, done here because only this process holds the key-encryption key.

- `issue-certificates` (org, generator, kid): the key's end-entity certificates issued or renewed as
  in-process code does (generators.certificates.key_certificates_issue), the row written here; answers
  {"issued": True}. The CA certifies a key's public key, so a client-managed generator's current key gets
  its ML-DSA-65 certificate too; an ES256 key is made only for a hybrid server-managed generator.
- `ensure-authorities`: each family's issuing CA, made on first need; answers {"authorities": count}.
- `seal-secret` (org, generator; args `context`, `secret`): an uploaded ES256 key sealed under the
  upload's context; answers {"sealed": blob}. Any other context is refused: a caller that could seal under
  `generator-key:...` or `c2pa-ca:...` could plant a key it knows where the service trusts its own.
"""

import logging
import uuid

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec

from core.errors import KeyUnavailable
from core.signer_protocol import SignRequest, SignResponse
from generators import certificate_authority as authority
from generators.certificates import (
    generator_wants_es256,
    key_certificates_issue,
    upload_context_generator,
    upload_key_seal,
)
from generators.models import Generator, GeneratorKey
from record_format import certificates as certs
from signer.service import generator_refusal, refused, result

logger = logging.getLogger("signer")


def certificates_issue(request: SignRequest) -> SignResponse:
    """Issue what the key `kid` of the request's generator lacks (policy first)."""
    generator, refusal = _active_generator(request)
    if refusal is not None:
        return refusal
    key = (GeneratorKey.objects.current().select_related("generator__org")
           .filter(generator=generator, kid=request.kid).first())
    if key is None:
        return refused(request, "not_found", "no current key with this kid")
    try:
        key_certificates_issue(key, es256=generator_wants_es256(generator))
    except KeyUnavailable:
        return refused(request, "unavailable", "a CA key does not unseal (logged for the operator)")
    logger.info("certificates current for generator %s (kid %s, org %s)", generator.pk, key.kid, request.org_id)
    return result(request, {"issued": True})


def authorities_ensure(request: SignRequest) -> SignResponse:
    """Make each family's issuing CA where none is usable (idempotent: nothing is made when one is)."""
    try:
        made = authority.authorities_ensure()
    except KeyUnavailable:
        return refused(request, "unavailable", "a CA key does not unseal (logged for the operator)")
    return result(request, {"authorities": len(made)})


def secret_seal(request: SignRequest) -> SignResponse:
    """Seal an uploaded ES256 private key under its generator's upload context, and nothing else."""
    context, secret = request.args.get("context"), request.args.get("secret")
    if not isinstance(context, str) or not isinstance(secret, bytes):
        return refused(request, "bad_request", "seal-secret takes a text context and a bytes secret")
    generator_id = upload_context_generator(context)
    if generator_id is None or str(generator_id) != request.generator_id:
        return refused(request, "refused", "only an uploaded certificate's key, under its generator's context")
    generator, refusal = _active_generator(request)
    if refusal is not None:
        return refusal
    if not generator.is_server_managed:
        return refused(request, "refused", "the service holds no key of a client-managed generator")
    if not _is_p256_key(secret):
        return refused(request, "bad_request", "the secret is not a P-256 private key (PKCS#8 DER)")
    logger.info("sealed an uploaded ES256 key for generator %s (org %s)", generator.pk, request.org_id)
    return result(request, {"sealed": upload_key_seal(generator.pk, secret)})


def _active_generator(request: SignRequest) -> tuple[Generator | None, SignResponse | None]:
    try:
        generator = Generator.objects.select_related("org").filter(pk=uuid.UUID(request.generator_id)).first()
    except ValueError:
        return None, refused(request, "bad_request", "generator_id is not a UUID")
    refusal = generator_refusal(request, generator)
    return (None, refusal) if refusal is not None else (generator, None)


def _is_p256_key(der: bytes) -> bool:
    try:
        key = certs.ec_private_key_from_der(der)
    except (certs.CertificateError, ValueError, TypeError, UnsupportedAlgorithm):
        return False
    return isinstance(key.curve, ec.SECP256R1)
