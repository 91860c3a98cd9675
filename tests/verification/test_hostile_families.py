"""Hostile input for every family, against a live gunicorn worker: time, memory and the next request.

Every case of tests.hostile_media.FAMILY_CASES goes to POST /v1/sign and POST /v1/verify; every JSON
operation of the schema gets a body nested 10,000 deep and a 1 MB string in each of its fields; the
upload routes get 1,000 multipart parts. Each answer must cost the worker under 2 s of CPU (its own, from
/proc: a busy machine stretches the wall-clock time, not this), leave the worker's resident
memory (read from /proc) less than 100 MB bigger, peak less than 100 MB above where it started, carry
the error envelope when it is an error, and be followed by a normal answer from the same worker.
bench/hostile.py --families prints the same rows, with their wall-clock seconds.
"""

import sys
from pathlib import Path

import pytest

from bench import hostile_live
from tests import hostile_media as hm

CPU_BOUND = 2.0  # seconds of the worker's CPU per request
MEMORY_BOUND_MB = 100

# Files still valid in their format once the attack is applied: signed (201) and verified (200) as such.
STILL_VALID = {
    "flac-truncated-half", "flac-truncated-last-byte",  # a FLAC cut between frames is a shorter FLAC
    "mp3-truncated-half", "mp3-truncated-last-byte",  # an MP3 is a run of frames
    "text-first-16-bytes", "text-truncated-half", "text-truncated-last-byte",  # shorter UTF-8 text
    "html-first-16-bytes", "html-truncated-half", "html-truncated-last-byte",  # browsers read unclosed HTML
    "pdf-truncated-last-byte",  # the last byte is the newline after %%EOF
    # Polyglots: the leading format is whole; what follows it is not read (docs/reliability.md).
    "polyglot-jpeg+zip", "polyglot-jpeg+pdf", "polyglot-jpeg+html", "polyglot-png+mp4", "polyglot-wav+zip",
    "polyglot-mp4+zip",
    # Compressed metadata and content streams are never inflated by signing or verification.
    "bomb-png-ztxt-1GB", "bomb-png-iccp-1GB", "bomb-pdf-stream-2GB", "bomb-pdf-stream-2GB-single-filter",
    "loop-pdf-page-tree-cycle", "deep-pdf-array-10000",  # the page tree and page dictionaries are not walked
    "deep-html-10000-divs", "deep-html-100000-unclosed-tags", "text-one-20MB-line",
    "text-a-million-zero-width-characters",
}

pytestmark = pytest.mark.skipif(not (Path(sys.executable).parent / "gunicorn").exists(),
                                reason="gunicorn is not installed")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = hostile_live.LiveServer(tmp_path_factory.mktemp("hostile-live")).start()
    try:
        server.warm_up()
        yield server
    finally:
        server.stop()


def _assert_bounded(row: hostile_live.Row) -> None:
    assert row.cpu_seconds < CPU_BOUND, row
    assert row.rss_growth_mb < MEMORY_BOUND_MB and row.peak_growth_mb < MEMORY_BOUND_MB, row
    assert row.status < 500 and row.envelope, row
    assert row.next_ok, row


def test_every_format_has_its_truncated_and_empty_files():
    for fmt in hm.FORMATS:
        for attack in ("zero-bytes", "first-16-bytes", "truncated-half", "truncated-last-byte"):
            assert f"{fmt}-{attack}" in hm.FAMILY_CASES


@pytest.mark.parametrize("name", list(hm.FAMILY_CASES))
def test_a_hostile_file_is_refused_or_read_within_bounds(live, name):
    fmt, build = hm.FAMILY_CASES[name]
    content = build()
    signed = live.upload(name, "sign", fmt, content)
    verified = live.upload(name, "verify", fmt, content)
    _assert_bounded(signed)
    _assert_bounded(verified)
    if name in STILL_VALID:
        assert (signed.status, verified.status) == (201, 200), (signed, verified)
    elif signed.status == 413:  # over a limit read from the headers: verification refuses it the same way
        assert (signed.code, verified.status, verified.code) == ("payload_too_large", 413, "payload_too_large")
    else:
        assert signed.status == 400 and signed.code in ("validation_error", "format_not_supported"), signed
        if content:
            assert (verified.status, verified.code) == (200, "no_provenance_found"), verified
        else:
            assert (verified.status, verified.code) == (400, "validation_error"), verified


@pytest.fixture(scope="module")
def schema(live):
    return live.http.get(f"{live.base}/v1/openapi.json", timeout=30).json()


def test_every_json_operation_refuses_deep_nesting_and_1mb_strings_within_bounds(live, schema):
    operations = hostile_live.json_operations(schema)
    assert len(operations) >= 20, operations  # every JSON route of the schema, not a sample
    rows = hostile_live.json_rows(live, schema)
    assert len(rows) > 2 * len(operations)
    for row in rows:
        _assert_bounded(row)
        if row.case == "json-nested-10000-deep":
            assert (row.status, row.code) == (400, "validation_error"), row
        elif row.route == "POST /v1/verify/batch" and row.case.endswith("items[0].content"):
            assert row.status == 200, row  # read as a file that carries no token (verification reports it)
        else:
            assert 400 <= row.status < 500, row  # no field takes 1 MB: every one is bounded


def test_multipart_of_a_thousand_parts_within_bounds(live):
    rows = hostile_live.multipart_rows(live)
    for row in rows:
        _assert_bounded(row)
    answers = {(row.case, row.route): (row.status, row.code) for row in rows}
    assert answers[("multipart-1000-file-parts", "sign")] == (400, "validation_error")
    assert answers[("multipart-1000-file-parts", "verify")] == (400, "validation_error")
    # Django allows 1,000 fields: sign's two of its own make 1,002 and are refused, verify's 1,000 are read.
    assert answers[("multipart-1000-fields-and-a-file", "sign")] == (400, "validation_error")
    assert answers[("multipart-1000-fields-and-a-file", "verify")] == (200, "no_provenance_found")


@pytest.mark.parametrize("fmt", ["png", "jpeg", "wav", "flac", "pdf", "mp4"])
def test_a_polyglot_made_after_signing_is_never_authentic(live, fmt):
    name, content_type = hm.FILE_NAMES[fmt]
    signed = live.http.post(f"{live.base}/v1/sign", data={"model": "m", "generator_id": live.generator_id},
                            files={"content": (name, hm.sample(fmt), content_type)}, headers=live.headers(),
                            timeout=60)
    assert signed.status_code == 201
    appended = signed.content + hm.jpeg_zip_polyglot()[len(hm.sample("jpeg")):]  # a ZIP after the signed file
    answers = [live.http.post(f"{live.base}/v1/verify", files={"content": (name, data, content_type)},
                              timeout=60).json() for data in (signed.content, appended)]
    assert answers[0]["authentic"] is True
    assert answers[1]["authentic"] is False  # the content hash covers every byte: tampered, or no token found
