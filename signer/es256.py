"""The ES256 key a hybrid C2PA claim signature uses, as the signer signs with it: the organization's live
uploaded key (always sealed in the database), else the key's deployment-CA certificate's, sealed or in the
signer backend `signer_migrate_keys` moved it to.

The certificate's row is read once, its backend and its sealed blob together: a key that moves between two
reads would otherwise be looked for sealed after its blob is gone.
"""

import logging
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import ec
from django.utils import timezone

from core.errors import KeyUnavailable
from core.keyring import private_key_sealing_ring
from core.sealing import SealedBlobError, unseal
from generators import certificates
from generators.models import GeneratorCertificate, GeneratorKey, GeneratorUploadedCertificate
from record_format import certificates as certs
from signer.backends.registry import SEALED

logger = logging.getLogger("signer")


@dataclass(frozen=True)
class Es256Key:
    """Either the unsealed key (`private_key`), or where a backend holds it (`backend`, `reference`)."""

    backend: str
    reference: str = ""
    private_key: ec.EllipticCurvePrivateKey | None = None


def es256_signing_key(key: GeneratorKey) -> Es256Key:
    """The ES256 key `key` signs hybrid claims with. Raises KeyUnavailable when a sealed one does not unseal."""
    if GeneratorUploadedCertificate.objects.filter(generator_id=key.generator_id,
                                                   not_after__gt=timezone.now()).exists():
        return Es256Key(SEALED, private_key=certificates.generator_es256_signing_key(key))
    row = (GeneratorCertificate.objects.filter(key_id=key.pk)
           .only("key_id", "es256_key_backend", "es256_key_reference", "encrypted_es256_private_key").first())
    if row is not None and row.encrypted_es256_private_key is not None:
        # Sealed; or moved, then issued again with a new sealed key (moving clears the blob in the UPDATE that
        # records the backend, so a blob beside a backend is newer than the key the backend holds).
        try:
            return Es256Key(SEALED, private_key=es256_certificate_private_key(row))
        except (SealedBlobError, ValueError, certs.CertificateError) as error:
            logger.error("the ES256 key of generator key %s does not unseal: %s", key.pk, error)
            raise KeyUnavailable() from None
    if row is not None and row.es256_key_backend != SEALED:
        return Es256Key(row.es256_key_backend, row.es256_key_reference)
    return Es256Key(SEALED, private_key=certificates.generator_es256_signing_key(key))  # issues one


def es256_certificate_private_key(row: GeneratorCertificate) -> ec.EllipticCurvePrivateKey:
    """The sealed ES256 key of a generator key's certificate, unsealed. Raises SealedBlobError when it does
    not unseal."""
    # generators.certificates seals it; its table of sealed C2PA keys says with which associated data.
    column, context = certificates._SEALED_COLUMNS[GeneratorCertificate]
    der = unseal(bytes(getattr(row, column)), private_key_sealing_ring().keys, associated_data=context(row.pk))
    return certs.ec_private_key_from_der(der)
