"""Where the ES256 key of a hybrid C2PA claim signature lives, as the signer needs to know before it signs.

The organization's live uploaded key is always sealed in the database; else the key's deployment-CA
certificate records its key's place: `sealed` (generators.certificates unseals it) or a signer backend, after
`signer_migrate_keys` moved it there.
"""

from django.utils import timezone

from generators.models import GeneratorCertificate, GeneratorKey, GeneratorUploadedCertificate
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
