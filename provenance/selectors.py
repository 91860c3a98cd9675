"""Public reads of records."""

import uuid

from config.errors import NotFound
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
