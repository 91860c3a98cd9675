"""The verdict in sentences: the service's own `summary` when a result has one, else sentences built from the
fields every result carries (an older service, offline verification)."""

import pytest

from svc_client.summary import NOTHING_FOUND, describe, offline_text, verdict_text

PROVENANCE = {"org": "Acme Pictures", "model": "m-1", "signed_at": "2026-11-27T02:25:26.123456Z"}
SIGNALS = {"watermark_found": True, "record_found": True, "signature_valid": True}


def result(**fields):
    base = {"authentic": False, "tampered": False, "confidence": "none", "token_source": "none",
            "signals": {"watermark_found": False, "record_found": False, "signature_valid": False},
            "provenance": None, "reason": "no_provenance_found", "record_id": None}
    return {**base, **fields}


def test_the_services_summary_is_printed_as_it_is_when_the_result_has_one():
    answer = result(summary="  A changed copy of content that Acme signed.  ")
    assert verdict_text(answer) == "A changed copy of content that Acme signed."
    assert verdict_text(result(summary="")) == NOTHING_FOUND  # an empty summary is no summary


def test_an_authentic_result_names_the_signer_the_record_and_how_it_was_found():
    text = describe(result(authentic=True, confidence="high", token_source="xmp", signals=SIGNALS,
                           provenance=PROVENANCE, reason=None, record_id="r-1"))
    assert text.startswith("Authentic: this file is exactly the content that Acme Pictures (model m-1, on "
                           "2026-11-27 02:25 UTC) signed (record r-1).")
    assert "through the token in the file's XMP metadata" in text
    assert "watermark was read too" in text


def test_an_authentic_result_without_a_watermark_says_so_without_alarm():
    text = describe(result(authentic=True, confidence="medium", token_source="content_hash",
                           signals={**SIGNALS, "watermark_found": False}, provenance=PROVENANCE, reason=None,
                           record_id="r-1"))
    assert "by the file's exact content hash" in text
    assert "No watermark was read" in text and "still match" in text


def test_a_changed_copy_is_called_a_changed_copy_of_the_signers_content():
    text = describe(result(tampered=True, confidence="low", token_source="watermark",
                           signals={**SIGNALS, "signature_valid": True}, provenance=PROVENANCE,
                           reason="content_tampered", record_id="r-2"))
    assert text.startswith("Changed: this is a changed copy of content that Acme Pictures (model m-1")
    assert "re-saved" in text and "through the watermark" in text
    assert "Authentic" not in text


def test_nothing_found_makes_no_claim_either_way():
    text = describe(result())
    assert text == NOTHING_FOUND
    assert "no claim either way" in text and "human" not in text


@pytest.mark.parametrize(("reason", "expected"), [
    ("invalid_token", "the token is not one this service issued"),
    ("record_not_found", "holds no record for it"),
    ("signature_invalid", "its signature does not hold"),
    ("something_new", "Not authentic (something_new)."),
])
def test_every_reason_has_its_own_sentence(reason, expected):
    provenance = PROVENANCE if reason in ("signature_invalid", "something_new") else None
    text = describe(result(reason=reason, confidence="low", token_source="provided", provenance=provenance,
                           record_id="r-3" if provenance else None))
    assert expected in text


def test_a_watermark_without_a_record_names_nobody():
    text = describe(result(confidence="low", token_source="watermark",
                           signals={"watermark_found": True, "record_found": False, "signature_valid": False}))
    assert "carries this service's watermark, but no record of it was found" in text


def test_offline_verification_reads_as_a_sentence():
    record = {"record_id": "r-4", "generator_id": "g-1", "model": "m", "signed_at": "2026-11-27T02:00:00Z"}
    assert offline_text(True, None, record) == ("Authentic: this file is exactly the content of record r-4, signed "
                                                "by generator g-1 with the model m on 2026-11-27 02:00 UTC; checked "
                                                "offline with the pinned keys.")
    assert offline_text(False, "the file was changed after signing", record) == (
        "Not authentic: the file was changed after signing.")

