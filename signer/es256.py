"""Where the ES256 key of a hybrid C2PA claim signature lives, as the signer needs to know before it signs.

The organization's live uploaded key is always sealed in the database; else the key's deployment-CA
certificate records its key's place: `sealed` (generators.certificates unseals it) or a signer backend, after
`signer_migrate_keys` moved it there.
"""

from cryptography.hazmat.primitives.asymmetric import ec
from django.utils import timezone

from core.keyring import private_key_sealing_ring
from core.sealing import unseal
from generators import certificates
from generators.models import GeneratorCertificate, GeneratorKey, GeneratorUploadedCertificate
from record_format import certificates as certs
from signer.backends.registry import SEALED


def es256_key_in_backend(key: GeneratorKey) -> tuple[str, str] | None:
    """(backend, reference) of the ES256 key `key` signs hybrid claims with when a backend holds it, else
    None (the sealed key, or none issued yet: generators.certificates then does as before)."""
    if GeneratorUploadedCertificate.objects.filter(generator_id=key.generator_id,
                                                   not_after__gt=timezone.now()).exists():
        return None
    held = (GeneratorCertificate.objects.filter(key_id=key.pk).exclude(es256_key_backend=SEALED)
            .values_list("es256_key_backend", "es256_key_reference").first())
    return tuple(held) if held is not None else None


def es256_certificate_private_key(row: GeneratorCertificate) -> ec.EllipticCurvePrivateKey:
    """The sealed ES256 key of a generator key's certificate, unsealed (signer_migrate_keys moves it).
    Raises SealedBlobError when it does not unseal."""
    # generators.certificates seals it; its table of sealed C2PA keys says with which associated data.
    column, context = certificates._SEALED_COLUMNS[GeneratorCertificate]
    der = unseal(bytes(getattr(row, column)), private_key_sealing_ring().keys, associated_data=context(row.pk))
    return certs.ec_private_key_from_der(der)
