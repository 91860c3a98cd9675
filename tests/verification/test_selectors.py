"""The near-match fingerprint lookup: nearest within 7 bits, newest on ties, one kind at a time."""

import datetime as dt

import pytest
from django.utils import timezone

from generators.models import GeneratorKey
from provenance.models import Fingerprint, FingerprintKind, Record, RecordFingerprint
from provenance.phash_bands import signed_value
from tests import factories
from verification.selectors import PHASH_MAX_DISTANCE, record_for_fingerprint

pytestmark = pytest.mark.django_db
IMAGE = FingerprintKind.IMAGE_PHASH
QUERY = "123456789abc0000"


def flip(phash: str, *bits: int) -> str:
    value = int(phash, 16)
    for bit in bits:
        value ^= 1 << bit
    return f"{value:016x}"


@pytest.fixture
def make_records(org):
    key = GeneratorKey.objects.get(generator=factories.make_generator(org=org))
    now = timezone.now()

    def make(phashes: list[str], *, kind: str = IMAGE, age: dt.timedelta = dt.timedelta(0)) -> list[Record]:
        records = [Record(org=org, generator_id=key.generator_id, key=key, model="m", watermark_id=f"wm-{i}",
                          content_hash="sha3-256:" + "0" * 64, signature=b"\0", signed_at=now - age, phash=phash,
                          fingerprint_kind=kind, phash_value=signed_value(phash))
                   for i, phash in enumerate(phashes)]
        return Record.objects.bulk_create(records, batch_size=1000)  # bound parameters: at most 65,535

    return make


def test_the_exact_fingerprint_finds_its_record(make_records):
    [record] = make_records([QUERY])
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == record


@pytest.mark.parametrize("distance", range(1, PHASH_MAX_DISTANCE + 1))
def test_a_fingerprint_within_seven_bits_matches(make_records, distance):
    # Spread over the bands (bits 48-63 are band 0): from 4 bits on, no band agrees exactly.
    [record] = make_records([flip(QUERY, *[0, 17, 34, 51, 8, 25, 42][:distance])])
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == record


@pytest.mark.parametrize("stored", ["8000000000000000", "8000000000000001", "ffffffffffffffff", "0000000000000000",
                                    "7fffffffffffffff"])
def test_the_extreme_64_bit_values_match_exactly_and_nearly(make_records, stored):
    # 8000000000000000, a flat image's pHash, is the most negative BIGINT.
    [record] = make_records([stored])
    for query in (stored, flip(stored, 0), flip(stored, 0, 63)):
        assert record_for_fingerprint(kind=IMAGE, value=query) == record


def test_a_fingerprint_eight_bits_away_does_not_match(make_records):
    make_records([flip(QUERY, 0, 1, 16, 17, 32, 33, 48, 49)])  # two bits in every band
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) is None


def test_one_bit_in_each_band_still_matches(make_records):
    # No band agrees exactly: only the band neighbours (one bit flipped) lead to this record.
    [record] = make_records([flip(QUERY, 3, 19, 35, 51)])
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == record


def test_seven_bits_with_at_most_one_band_within_one_bit_matches(make_records):
    [record] = make_records([flip(QUERY, 0, 1, 16, 17, 32, 33, 48)])  # bands differ by 2, 2, 2, 1
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == record


def test_the_nearest_record_wins_over_a_newer_farther_one(make_records):
    make_records([flip(QUERY, 0, 1, 2, 3, 4)])
    [nearest] = make_records([flip(QUERY, 5, 6)], age=dt.timedelta(days=30))
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == nearest


def test_the_newest_record_wins_a_tie(make_records):
    make_records([flip(QUERY, 1, 2)], age=dt.timedelta(days=2))
    [newest] = make_records([flip(QUERY, 40, 50)])
    make_records([flip(QUERY, 20, 30)], age=dt.timedelta(days=1))
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == newest


def test_the_newest_exact_record_wins(make_records):
    make_records([QUERY], age=dt.timedelta(days=1))
    [newest] = make_records([QUERY])
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == newest


def test_a_fingerprint_of_another_kind_never_matches(make_records):
    make_records([QUERY, flip(QUERY, 1)], kind=FingerprintKind.VIDEO_PHASH)
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) is None
    [image] = make_records([flip(QUERY, 1, 2)])
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == image


def _crowd(count: int) -> list[str]:
    """`count` hashes sharing QUERY's first three bands, each more than 7 bits from QUERY."""
    far = [low for low in range(1 << 16) if low.bit_count() > PHASH_MAX_DISTANCE]
    return [f"{QUERY[:12]}{low:04x}" for low in far[:count]]


def test_the_match_is_found_among_thousands_of_records_sharing_its_bands(make_records):
    # Stored first and newer, the crowd comes first in index and insertion order: a candidate cap
    # over unordered rows (5,000) would stop before reaching the match.
    make_records(_crowd(6000))
    [match] = make_records([flip(QUERY, 1, 4, 9, 12, 15)], age=dt.timedelta(days=1))
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == match


def test_an_exact_match_is_found_among_thousands_of_records_sharing_its_bands(make_records):
    *crowd, target = _crowd(6001)
    make_records(crowd)
    [match] = make_records([target], age=dt.timedelta(days=1))
    assert record_for_fingerprint(kind=IMAGE, value=target) == match


def test_nothing_matches_a_hash_far_from_every_record(make_records):
    make_records(_crowd(50))
    assert record_for_fingerprint(kind=IMAGE, value="ffffffffffffffff") is None


def test_a_value_whose_records_are_gone_gives_way_to_the_next_nearest(make_records):
    [gone] = make_records([flip(QUERY, 1)])
    [farther] = make_records([flip(QUERY, 1, 2, 3)])
    gone.delete()  # its Fingerprint row stays: the search must skip it
    assert Fingerprint.objects.filter(value=signed_value(flip(QUERY, 1))).exists()
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) == farther


def test_many_records_of_one_value_are_one_candidate_and_the_newest_wins(make_records):
    make_records([flip(QUERY, 2, 9)] * 300, age=dt.timedelta(days=1))
    [newest] = make_records([flip(QUERY, 2, 9)])
    assert Fingerprint.objects.filter(kind=IMAGE).count() == 1
    assert record_for_fingerprint(kind=IMAGE, value=flip(QUERY, 2)) == newest


# --- a record's further values (a video's later frames) ---------------------------------------------

VIDEO = FingerprintKind.VIDEO_PHASH


def _with_more(record: Record, *values: str) -> None:
    RecordFingerprint.objects.bulk_create([RecordFingerprint(record=record, kind=record.fingerprint_kind,
                                                             value=signed_value(v), signed_at=record.signed_at)
                                           for v in values])


def test_any_of_a_records_further_values_finds_it_exactly_or_nearly(make_records):
    [record] = make_records(["0f0f0f0f0f0f0f0f"], kind=VIDEO)
    _with_more(record, QUERY, "fedcba9876543210")
    assert Fingerprint.objects.filter(kind=VIDEO).count() == 3  # the trigger added both values
    for query in (QUERY, flip(QUERY, 3, 40), "fedcba9876543210", flip("fedcba9876543210", 60)):
        assert record_for_fingerprint(kind=VIDEO, value=query) == record
    assert record_for_fingerprint(kind=IMAGE, value=QUERY) is None  # kinds never mix


def test_the_newest_holder_of_a_value_wins_whether_first_or_further(make_records):
    [old] = make_records([QUERY], kind=VIDEO, age=dt.timedelta(days=2))
    assert record_for_fingerprint(kind=VIDEO, value=QUERY) == old
    [new] = make_records(["0f0f0f0f0f0f0f0f"], kind=VIDEO)
    _with_more(new, QUERY)
    assert record_for_fingerprint(kind=VIDEO, value=QUERY) == new
    assert record_for_fingerprint(kind=VIDEO, value=flip(QUERY, 9)) == new


def test_a_nearer_further_value_beats_a_farther_first_one(make_records):
    [far] = make_records([flip(QUERY, 1, 20, 40)], kind=VIDEO)
    assert record_for_fingerprint(kind=VIDEO, value=QUERY) == far
    [near] = make_records(["0f0f0f0f0f0f0f0f"], kind=VIDEO, age=dt.timedelta(days=5))
    _with_more(near, flip(QUERY, 1))
    assert record_for_fingerprint(kind=VIDEO, value=QUERY) == near


def test_deleting_a_record_takes_its_further_values_with_it(make_records):
    [record] = make_records(["0f0f0f0f0f0f0f0f"], kind=VIDEO)
    _with_more(record, QUERY)
    record.delete()
    assert not RecordFingerprint.objects.exists()
    assert record_for_fingerprint(kind=VIDEO, value=QUERY) is None  # the value row stays, without a holder
