import base64
import binascii
import datetime

from drf_spectacular.utils import extend_schema_field

from core.openapi import BASE64_PATTERN
from core.validation import serializers
from provenance.serializers import LogField
from record_format.manifest_checks import CHECKS
from record_format.times import iso_timestamp
from verification.soft_binding import ALGORITHMS
from verification.summary import summary

MAX_BATCH_ITEMS = 50  # spec: batch verify items


class VerifyInput(serializers.Serializer):
    """The form fields of POST /v1/verify besides the `content` file."""

    token = serializers.CharField(max_length=256, required=False, allow_blank=True)


@extend_schema_field({"type": "string", "format": "byte", "minLength": 4, "pattern": BASE64_PATTERN})
class Base64ContentField(serializers.Field):
    """Base64 file content (standard alphabet), decoded to bytes. Sizes are bounded by the body limit
    (verification/api.py) and the batch budget (verification/services.py)."""

    def to_internal_value(self, data) -> bytes:
        if not isinstance(data, str) or not data:
            raise serializers.ValidationError("Expected the base64 text of a file.")
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise serializers.ValidationError("Not valid base64.") from None


class VerifyBatchItemInput(serializers.Serializer):
    content = Base64ContentField()
    token = serializers.CharField(max_length=256, required=False, allow_blank=True, allow_null=True)


class VerifyBatchInput(serializers.Serializer):
    items = VerifyBatchItemInput(many=True, allow_empty=False, max_length=MAX_BATCH_ITEMS)


class SignalsOutput(serializers.Serializer):
    watermark_found = serializers.BooleanField()
    record_found = serializers.BooleanField()
    signature_valid = serializers.BooleanField()


class ProvenanceOutput(serializers.Serializer):
    org = serializers.CharField(source="org.name")
    model = serializers.CharField()
    signed_at = serializers.DateTimeField()


class DisclosureOutput(serializers.Serializer):
    """The latent disclosure of the record's file: what made it, when, and its identifier."""

    digital_source_type = serializers.CharField(help_text="The IPTC digital source type's URI.")
    provider_name = serializers.CharField(help_text="The provider the generator names; may be empty.")
    system_name = serializers.CharField(help_text="The generative system's name; may be empty.")
    system_version = serializers.CharField(help_text="The system's version; may be empty.")
    created = serializers.DateTimeField(help_text="When the content was signed.")
    identifier = serializers.CharField(help_text="The record's id: the content's unique identifier.")

    def to_representation(self, record) -> dict:
        return record_disclosure(record)


def record_disclosure(record) -> dict:
    """The disclosure of the record's file, as its generator words it now (Generator.disclosure)."""
    disclosed = record.generator.disclosure(identifier=str(record.pk), created=_iso(record.signed_at))
    return {"digital_source_type": disclosed.source_type, "provider_name": disclosed.provider_name,
            "system_name": disclosed.system_name, "system_version": disclosed.system_version,
            "created": disclosed.created, "identifier": disclosed.identifier}


class TimeStampCheckOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=["valid", "invalid", "unchecked"], help_text=(
        "valid: a trusted time-stamp authority stamped this signature at `time`; invalid: the token does not "
        "prove that; unchecked: this deployment trusts no authority root."))
    time = serializers.DateTimeField(allow_null=True)
    authority = serializers.CharField()
    problem = serializers.CharField(allow_null=True)


class ManifestCheckOutput(serializers.Serializer):
    check = serializers.ChoiceField(choices=list(CHECKS))
    status = serializers.ChoiceField(choices=["valid", "invalid", "absent", "unsupported", "trusted", "untrusted",
                                              "unchecked", "none"])
    message = serializers.CharField(help_text="What the check found, in plain words.")


class ManifestReportOutput(serializers.Serializer):
    manifest = serializers.CharField(help_text="The active manifest's label (urn:c2pa:...).")
    signing = serializers.CharField(help_text="hybrid (ES256 + ML-DSA-65), ml-dsa-65, or another signer's algorithm.")
    time = serializers.DateTimeField(allow_null=True, help_text="When a trusted time-stamp authority saw the "
                                                                "signature; null without a trusted stamp.")
    valid = serializers.BooleanField(help_text="Both signatures hold, and the file and statements are as signed.")
    checks = ManifestCheckOutput(many=True)

    def to_representation(self, report) -> dict:
        return report.as_dict()


class VerificationOutput(serializers.Serializer):
    authentic = serializers.BooleanField()
    tampered = serializers.BooleanField()
    confidence = serializers.ChoiceField(choices=["high", "medium", "low", "none"])
    token_source = serializers.ChoiceField(
        choices=["provided", "c2pa", "xmp", "metadata", "watermark", "content_hash", "phash", "none"])
    signals = serializers.SerializerMethodField()
    provenance = serializers.SerializerMethodField()
    reason = serializers.CharField(required=False, help_text="Present exactly when authentic is false.")
    record_id = serializers.SerializerMethodField()
    log = LogField(allow_null=True, help_text="The record's transparency-log `log` object; null without a record.")
    signature_timestamp = TimeStampCheckOutput(source="time_stamp", allow_null=True, help_text=(
        "The record signature's RFC 3161 time stamp, checked; null when there is no record or it has none."))
    c2pa = ManifestReportOutput(allow_null=True, help_text=(
        "The file's C2PA manifest (ours or another signer's), each check with its status; null without one."))
    summary = serializers.SerializerMethodField(
        help_text="One or two plain sentences for a non-expert: what was found and what it means.")
    disclosure = serializers.SerializerMethodField(help_text=(
        "The record's disclosure (EU AI Act Article 50, California SB 942): its IPTC digital source type, "
        "provider, system and version, time of creation and identifier; null without a record."))

    def get_signals(self, result) -> dict:
        return SignalsOutput(result).data

    def get_provenance(self, result) -> dict | None:
        return ProvenanceOutput(result.record).data if result.record_found else None

    @extend_schema_field(DisclosureOutput(allow_null=True))
    def get_disclosure(self, result) -> dict | None:
        return record_disclosure(result.record) if result.record_found else None

    def get_summary(self, result) -> str:
        return summary(result)

    def get_record_id(self, result) -> str | None:
        return str(result.record.pk) if result.record_found else None

    def to_representation(self, result) -> dict:
        body = super().to_representation(result)
        if result.authentic:
            body.pop("reason", None)
        return body


def _iso(moment: datetime.datetime | None) -> str | None:
    return None if moment is None else iso_timestamp(moment)  # as DRF's DateTimeField writes it here


def verification_body(result) -> dict:
    """What VerificationOutput renders, built directly: the verify routes answer with this.

    VerificationOutput stays the documented shape (the OpenAPI schema is made from it); building the same
    dict by hand skips DRF's per-request copy of every declared field, about a fifth of a verification's
    CPU (docs/performance.md, "Verify by token"). tests/verification/test_body.py holds the two equal.
    """
    record = result.record
    stamp = result.time_stamp
    body = {
        "authentic": bool(result.authentic),
        "tampered": bool(result.tampered),
        "confidence": result.confidence,
        "token_source": result.token_source,
        "signals": {"watermark_found": bool(result.watermark_found), "record_found": record is not None,
                    "signature_valid": bool(result.signature_valid)},
        "provenance": (None if record is None else
                       {"org": str(record.org.name), "model": str(record.model), "signed_at": _iso(record.signed_at)}),
        "reason": None if result.reason is None else str(result.reason),
        "record_id": None if record is None else str(record.pk),
        "log": result.log,
        "signature_timestamp": (None if stamp is None else
                                {"status": stamp.status, "time": _iso(stamp.time), "authority": str(stamp.authority),
                                 "problem": None if stamp.problem is None else str(stamp.problem)}),
        "c2pa": None if result.c2pa is None else result.c2pa.as_dict(),
        "summary": summary(result),
        "disclosure": None if record is None else record_disclosure(record),
    }
    if result.authentic:
        del body["reason"]
    return body


SOFT_BINDING_VALUE = r"^[A-Za-z0-9+/]{11}=$"


class SoftBindingQuery(serializers.Serializer):
    alg = serializers.ChoiceField(choices=list(ALGORITHMS))
    value = serializers.RegexField(SOFT_BINDING_VALUE, max_length=200,  # the 64-bit value in base64
                                   help_text="The 64-bit value, big-endian, in base64 (12 characters).")


class SoftBindingContentQuery(serializers.Serializer):
    alg = serializers.ChoiceField(choices=list(ALGORITHMS), required=False, allow_blank=True)


class SoftBindingLimit(serializers.Serializer):
    maxResults = serializers.IntegerField(min_value=1, max_value=100, default=10)  # the API spells it so


class SoftBindingMatch(serializers.Serializer):
    manifestId = serializers.CharField()
    similarityScore = serializers.IntegerField(min_value=0, max_value=100)


class SoftBindingMatches(serializers.Serializer):
    matches = SoftBindingMatch(many=True)
