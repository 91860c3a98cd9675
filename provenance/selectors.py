"""Public reads of records."""

import uuid

from accounts.models import Organization
from config.errors import Forbidden, NotFound
from config.keyring import token_mac_keys
from provenance.models import Record
from provenance.tokens import mint_token, parse_token


def record_token(record_id: uuid.UUID) -> str:
    """The record's `svc_` token (deterministic: the same record always has the same token)."""
    return mint_token(record_id, token_mac_keys()[0])


def record_id_from_token(token: str) -> uuid.UUID:
    """The record id a `svc_` token carries. Raises InvalidToken for anything altered or malformed."""
    return parse_token(token, token_mac_keys())


def public_record_get(*, record_id: uuid.UUID) -> Record:
    """Public: one record with what its JSON needs, its token attached. Raises NotFound."""
    record = Record.objects.select_related("org", "key").filter(pk=record_id).first()
    if record is None:
        raise NotFound("Record not found.")
    record.token = record_token(record.pk)
    return record


def record_for_embed(*, org: Organization, record_id: uuid.UUID) -> Record:
    """A record whose signed asset the caller may embed a C2PA manifest into. Records are public, so
    another organization's answers 403 (the spec's Errors table), not 404. Raises NotFound, Forbidden."""
    record = Record.objects.select_related("generator", "upstream_manifest").filter(pk=record_id).first()
    if record is None:
        raise NotFound("Record not found.")
    if record.generator.org_id != org.pk:
        raise Forbidden("This record's generator belongs to another organization.")
    return record
