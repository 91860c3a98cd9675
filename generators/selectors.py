"""Reads of generators, including the one lookup that crosses organizations."""

import uuid

from accounts.models import Organization
from core.errors import Forbidden, NotFound
from core.hot_sql import ChildWithParents
from generators.models import Generator, GeneratorKey

# Every signature runs this (SQL built once, core.hot_sql.py). At most one current key per
# generator (a unique constraint): LIMIT 1 without ORDER BY.
_CURRENT_KEY_WITH_GENERATOR = ChildWithParents(GeneratorKey, "generator", match=("generator",),
                                               where=GeneratorKey.objects.current())


def generator_for_signing(*, org: Organization, generator_id: str | uuid.UUID) -> GeneratorKey:
    """The current key of a generator the caller may sign with, its generator loaded.

    The only cross-organization read: the spec wants 403 (not 404) for another organization's
    generator named in a request body. Raises NotFound (unknown or revoked) and Forbidden, in the
    spec's order: unknown 404, another organization's 403, revoked 404.
    """
    try:
        generator_uuid = uuid.UUID(str(generator_id))
    except ValueError:
        raise NotFound("Generator not found.") from None
    key = _CURRENT_KEY_WITH_GENERATOR.get(generator_uuid)
    if key is None:
        raise NotFound("Generator not found.")
    if key.generator.org_id != org.pk:
        raise Forbidden("This generator belongs to another organization.")
    if key.generator.is_revoked:
        raise NotFound("This generator is revoked.")
    return key


def current_key(*, generator_id: uuid.UUID) -> GeneratorKey | None:
    """The key a generator signs with now, its generator loaded (None once revoked keys are all retired)."""
    return _CURRENT_KEY_WITH_GENERATOR.get(generator_id)


def key_by_kid(*, generator_id: uuid.UUID, kid: str) -> GeneratorKey | None:
    """One of a generator's keys, current or retired, by its kid (a C2PA signature names it)."""
    return GeneratorKey.objects.filter(generator_id=generator_id, kid=kid).first()


def public_key_lookup(*, generator_id: uuid.UUID) -> Generator:
    """Public: a generator with every key it ever used (for offline verification). Raises NotFound."""
    generator = Generator.objects.prefetch_related("keys").filter(pk=generator_id).first()
    if generator is None:
        raise NotFound("Generator not found.")
    return generator


def generator_list(*, org: Organization) -> list[Generator]:
    """The organization's generators, oldest first, each with every key it has used (one extra query)."""
    return list(Generator.objects.for_org(org).prefetch_related("keys"))


def generator_get(*, org: Organization, generator_id: uuid.UUID) -> Generator:
    """One of the organization's generators with its keys. Raises NotFound (also for another organization's)."""
    generator = Generator.objects.for_org(org).prefetch_related("keys").filter(pk=generator_id).first()
    if generator is None:
        raise NotFound("Generator not found.")
    return generator


def signing_generators(*, org: Organization) -> list[Generator]:
    """The organization's active server-managed generators: the ones POST /v1/sign can use."""
    return list(Generator.objects.for_org(org).filter(status=Generator.Status.ACTIVE, mode=Generator.Mode.SERVER))
