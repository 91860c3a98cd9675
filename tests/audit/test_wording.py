"""Audit events in words (no database): every type the code writes has a sentence; unknown ones read as words."""

import re
from pathlib import Path

import pytest

from audit.models import AuditEvent
from audit.wording import _DESCRIBERS, TYPE_LABELS, Names, describe, type_label
from tests.purity import assert_imports_without_django

ROOT = Path(__file__).resolve().parents[2]
GEN = "0f2a6d1e-1111-4c3b-9a55-2d7c2f6b8e01"
ALICE = "5b0e2f8a-2222-4f1e-8d3c-7a9b1c2d3e4f"
HOOK = "9c8d7e6f-3333-4a2b-8c1d-0e9f8a7b6c5d"
NAMES = Names(generators={GEN: "Studio"}, users={ALICE: "alice@example.com"}, webhooks={HOOK: "https://h.example/in"})


def test_the_wording_module_imports_without_django():
    assert_imports_without_django(["audit.wording"])


def _written_types() -> set[str]:
    """Every type passed to audit_write or audit_write_many anywhere in the service's code."""
    found = set()
    for path in ROOT.glob("*/**/*.py"):
        if path.parts[len(ROOT.parts)] in {"tests", "bench", ".venv", "client"}:
            continue
        source = path.read_text()
        for call in re.finditer(r"audit_write(?:_many)?\((.*?)\)", source, re.DOTALL):
            if literal := re.search(r'type="([^"]+)"', call.group(1)):
                found.add(literal.group(1))
            elif member := re.search(r"type=AuditEvent\.Type\.([A-Z_]+)", call.group(1)):
                found.add(AuditEvent.Type[member.group(1)].value)
    return found


def test_every_type_the_code_writes_or_declares_has_a_sentence_and_a_label():
    written = _written_types()
    assert {"sign", "verify", "key_created", "key_revoked", "webhook.created"} <= written  # the scan works
    for type in written | set(AuditEvent.Type.values):
        assert type in _DESCRIBERS and type in TYPE_LABELS, type


@pytest.mark.parametrize(("type", "metadata", "sentence", "references"), [
    ("sign", {"record_id": "r-1", "generator_id": GEN, "model": "dream-2"},
     "Signed a record with model “dream-2” by generator “Studio”.", (("Record", "r-1"), ("Generator", GEN))),
    ("verify", {"record_id": "r-1", "authentic": True, "tampered": False, "token_source": "xmp"},
     "Verified a record: authentic, found through the token in the file's XMP metadata.", (("Record", "r-1"),)),
    ("verify", {"record_id": "r-1", "authentic": False, "tampered": True, "token_source": "content_hash"},
     "Verified a record: the content was changed after signing, found through the file's exact content hash.",
     (("Record", "r-1"),)),
    ("verify", {"record_id": "r-1", "authentic": False, "tampered": False, "token_source": "unheard-of"},
     "Verified a record: not authentic (the signature did not check out, or its generator is revoked).",
     (("Record", "r-1"),)),
    ("key_created", {"generator_id": GEN, "kid": "k2", "previous_kid": "k1"},
     "Rotated the signing key of generator “Studio”: key k2 replaces k1.", (("Generator", GEN), ("Key", "k2"))),
    ("key_created", {"generator_id": "gone", "kid": "k1", "name": "Old name", "mode": "client"},
     "Registered generator “Old name” with its own keys (client-managed).", (("Generator", "gone"), ("Key", "k1"))),
    ("key_revoked", {"generator_id": GEN}, "Revoked generator “Studio”: its signatures no longer verify.",
     (("Generator", GEN),)),
    ("team.role_changed", {"actor_id": ALICE, "email": "b@example.com", "previous_role": "user", "role": "admin"},
     "alice@example.com changed the role of b@example.com from member to admin.", ()),
    ("webhook.updated", {"webhook_id": HOOK, "url": "https://new.example/in"},
     "Changed the webhook endpoint https://h.example/in: its address is now https://new.example/in.",
     (("Endpoint", HOOK),)),
    ("webhook.updated", {"webhook_id": HOOK, "status": "active"},
     "Changed the webhook endpoint https://h.example/in: turned it back on.", (("Endpoint", HOOK),)),
    ("billing.plan_changed", {"plan": "growth", "previous_plan": "free", "actor": "manage.py set_plan"},
     "The plan changed from Free to Growth, by manage.py set_plan.", ()),
    ("account.two_factor_enabled", {"actor_id": ALICE}, "alice@example.com turned on two-factor sign-in.", ()),
    ("account.two_factor_disabled", {"actor_id": ALICE, "proof": "recovery_code"},
     "alice@example.com turned off two-factor sign-in with a recovery code.", ()),
    ("account.recovery_code_used", {"actor_id": ALICE, "remaining": 9},
     "alice@example.com signed in with a recovery code; 9 left.", ()),
    ("account.password_changed", {}, "Someone changed their password.", ()),
])
def test_events_read_as_sentences(type, metadata, sentence, references):
    described = describe(type, metadata, NAMES)
    assert (described.sentence, described.references) == (sentence, references)


def test_missing_values_read_as_words_never_as_none():
    for type in _DESCRIBERS:
        sentence = describe(type, {}, Names()).sentence
        assert "None" not in sentence and "{" not in sentence and sentence.endswith("."), (type, sentence)


def test_an_unknown_type_reads_as_its_name_and_labelled_values():
    described = describe("api_key.created", {"key_name": "ci", "scopes": ["sign"], "limits": {"rpm": 5}}, NAMES)
    assert described.sentence == "Api key created."
    assert described.references == (("Key name", "ci"), ("Limits", '{"rpm": 5}'), ("Scopes", "sign"))
    assert type_label("api_key.created") == "Api key created" and type_label("") == "Event"
    assert describe("sign", [1, "two"], NAMES).references == (("Details", '[1, "two"]'),)
