"""records_create: what a stored record's fingerprint columns hold."""

import pytest
from django.db import IntegrityError, transaction

from generators.models import GeneratorKey
from provenance.models import Fingerprint, FingerprintKind, Record, RecordFingerprint
from provenance.phash_bands import phash_bands, signed_value
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
    # The database trigger adds the distinct value with its bands (the most significant band first).
    value = Fingerprint.objects.get(kind="image-phash", value=record.phash_value)
    assert (value.band0, value.band1, value.band2, value.band3) == (0x8F0F, 0x1234, 0x5678, 0xABCD)


@pytest.mark.parametrize("phash", ["0000000000000000", "0000000000000001", "7fffffffffffffff", "8000000000000000",
                                   "ffffffffffffffff", "fedcba9876543210", "0123456789abcdef"])
def test_the_trigger_splits_every_value_as_phash_bands_does(org, key, phash):
    draft = _draft(key, phash=phash, format="image", fingerprint_kind=FingerprintKind.IMAGE_PHASH)
    record_create(org=org, draft=draft)
    value = Fingerprint.objects.get(kind="image-phash", value=signed_value(phash))
    assert (value.band0, value.band1, value.band2, value.band3) == phash_bands(phash)


def test_a_value_is_listed_once_per_kind_however_many_records_share_it(org, key):
    for _ in range(3):
        record_create(org=org, draft=_image_draft(key))
    record_create(org=org, draft=_draft(key, phash="8f0f12345678abcd", format="video",
                                        fingerprint_kind=FingerprintKind.VIDEO_PHASH))
    assert Record.objects.count() == 4
    assert sorted(Fingerprint.objects.values_list("kind", flat=True)) == ["image-phash", "video-phash"]


def test_a_draft_names_its_fingerprint_kind(org, key):
    draft = _draft(key, phash="0000000000000001", format="video", fingerprint_kind=FingerprintKind.VIDEO_PHASH)
    record = record_create(org=org, draft=draft)
    assert Record.objects.get(pk=record.pk).fingerprint_kind == "video-phash"


def test_a_record_without_phash_has_no_fingerprint_columns(org, key):
    record = record_create(org=org, draft=_draft(key, format="image"))
    assert Record.objects.filter(pk=record.pk, fingerprint_kind=None, phash_value=None).exists()
    assert not Fingerprint.objects.exists()


@pytest.mark.parametrize("change", [{"fingerprint_kind": None}, {"phash": None}, {"phash_value": None}])
def test_the_database_refuses_a_fingerprint_without_its_kind_or_value(org, key, change):
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


def test_further_fingerprints_are_stored_beside_the_first_and_listed_as_values(org, key, django_assert_num_queries):
    draft = _draft(key, phash="0f0f0f0f0f0f0f0f", format="video", fingerprint_kind=FingerprintKind.VIDEO_PHASH,
                   more_fingerprints=("0f0f0f0f0f0f0f0f", "123456789abcdef0", "fedcba9876543210"))
    record = record_create(org=org, draft=draft)
    more = RecordFingerprint.objects.filter(record=record).order_by("id")
    assert [(m.kind, m.value, m.signed_at) for m in more] == [
        ("video-phash", signed_value("123456789abcdef0"), record.signed_at),
        ("video-phash", signed_value("fedcba9876543210"), record.signed_at)]  # the first is not repeated
    assert Fingerprint.objects.filter(kind="video-phash").count() == 3


def test_further_fingerprints_need_a_first_one(org, key):
    with pytest.raises(ValueError):
        record_create(org=org, draft=_draft(key, more_fingerprints=("123456789abcdef0",)))
