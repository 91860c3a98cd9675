"""Helpers for the log tests: records made fast, and the leaves a client would compute from the API."""

import base64
import json
import os
import uuid
from datetime import UTC, datetime, timedelta

from provenance.models import Record
from tests import factories
from tests.transparency import rfc9162


def make_key(org=None):
    """A client-managed generator's key row (records need one; the sequencer never checks signatures)."""
    from generators.models import GeneratorKey

    generator, _ = factories.make_client_generator(org=org or factories.make_org(plan="scale"))
    return GeneratorKey.objects.get(generator=generator)


def make_records(key, count: int, *, signed_at: datetime | None = None) -> list[Record]:
    """`count` records with random signature bytes, one second apart (their log order)."""
    start = signed_at or datetime.now(tz=UTC)
    records = [Record(id=uuid.uuid4(), org_id=key.generator.org_id, generator_id=key.generator_id, key=key,
                      model="model-x", watermark_id=f"wm-{i}", content_hash="sha3-256:" + os.urandom(32).hex(),
                      signature=os.urandom(3309), signed_at=start + timedelta(seconds=i, microseconds=i))
               for i in range(count)]
    return Record.objects.bulk_create(records, batch_size=2000)


def leaf_from_api(record_json: dict) -> bytes:
    """The leaf hash as a client builds it from GET /v1/records/:id (the contract with the client package)."""
    entry = {name: record_json[name] for name in ("record_id", "content_hash", "generator_id", "model",
                                                   "watermark_id", "signature", "kid", "signed_at")}
    # RFC 8785 for an object of strings: sorted keys, no whitespace, UTF-8 (independent of our encoder).
    return rfc9162.leaf(json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())


def decode(hashes: list[str]) -> list[bytes]:
    return [base64.b64decode(h) for h in hashes]


def leaves_from_records() -> list[bytes]:
    """Leaf hashes recomputed from the stored records in log order, the way the contract spells the entry."""
    rows = Record.objects.filter(log_index__isnull=False).order_by("log_index").select_related("key")
    return [leaf_from_api({"record_id": str(r.pk), "content_hash": r.content_hash, "generator_id": str(r.generator_id),
                           "model": r.model, "watermark_id": r.watermark_id,
                           "signature": base64.b64encode(bytes(r.signature)).decode(), "kid": r.key.kid,
                           "signed_at": r.signed_at.isoformat().replace("+00:00", "Z")}) for r in rows]
