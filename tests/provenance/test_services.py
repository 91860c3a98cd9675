"""records_create: what a stored record's fingerprint columns hold."""

import pytest
from django.db import IntegrityError, transaction

from generators.models import GeneratorKey
from provenance.models import FingerprintKind, Record
from provenance.services import RecordDraft, record_create
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def key(org):
    return GeneratorKey.objects.get(generator=factories.make_generator(org=org))


def _draft(key, **fields) -> RecordDraft:
    return RecordDraft(key=key, content_hash="sha3-256:" + "0" * 64, model="m", watermark_id="wm",
                       signature=b"\0", **fields)


def _image_draft(key) -> RecordDraft:
    return _draft(key, phash="8f0f12345678abcd", format="image", fingerprint_kind=FingerprintKind.IMAGE_PHASH)


def test_an_image_phash_is_stored_with_its_kind_value_and_bands(org, key):
    record = record_create(org=org, draft=_image_draft(key))
    record.refresh_from_db()
    assert record.fingerprint_kind == FingerprintKind.IMAGE_PHASH == "image-phash"
    assert record.phash_value == 0x8F0F12345678ABCD - (1 << 64)
    assert (record.phash_band0, record.phash_band1, record.phash_band2, record.phash_band3) == (
        0x8F0F, 0x1234, 0x5678, 0xABCD)


def test_a_draft_names_its_fingerprint_kind(org, key):
    draft = _draft(key, phash="0000000000000001", format="video", fingerprint_kind=FingerprintKind.VIDEO_PHASH)
    record = record_create(org=org, draft=draft)
    assert Record.objects.get(pk=record.pk).fingerprint_kind == "video-phash"


def test_a_record_without_phash_has_no_fingerprint_columns(org, key):
    record = record_create(org=org, draft=_draft(key, format="image"))
    assert Record.objects.filter(pk=record.pk, fingerprint_kind=None, phash_value=None, phash_band0=None).exists()


@pytest.mark.parametrize("change", [{"fingerprint_kind": None}, {"phash": None}, {"phash_value": None},
                                    {"phash_band3": None}])
def test_the_database_refuses_a_fingerprint_without_its_kind_value_or_bands(org, key, change):
    record = record_create(org=org, draft=_image_draft(key))
    with pytest.raises(IntegrityError), transaction.atomic():
        Record.objects.filter(pk=record.pk).update(**change)


def test_a_fingerprint_without_a_kind_is_a_programming_error(org, key):
    with pytest.raises(ValueError):
        record_create(org=org, draft=_draft(key, phash="8f0f12345678abcd", format="image"))
    assert not Record.objects.exists()


def test_the_database_refuses_a_kind_without_a_fingerprint(org, key):
    record = record_create(org=org, draft=_draft(key, format="image"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Record.objects.filter(pk=record.pk).update(fingerprint_kind=FingerprintKind.IMAGE_PHASH)
