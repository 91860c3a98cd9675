import base64
from datetime import UTC, datetime, time

from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import extend_schema_field

from core.paging import PageQuery
from core.validation import serializers
from media_codecs import FAMILIES
from provenance.compliance_documents import FORMATS as REPORT_FORMATS
from record_format import crypto, timestamp
from record_format.hashing import is_content_hash
from record_format.times import iso_timestamp

PHASH_PATTERN = r"^[0-9a-f]{16}\Z"
MAX_BATCH_ITEMS = 50  # spec, Limits


class LogOutput(serializers.Serializer):
    """A record's place in the transparency log: `pending` until the sequencer integrates it. Part of the
    record's JSON, so declared here; the transparency app, above provenance, builds it and serves it alone too."""

    status = serializers.ChoiceField(choices=["pending", "integrated"])
    index = serializers.IntegerField(required=False, help_text="The record's leaf index.")
    tree_size = serializers.IntegerField(required=False, help_text="The size of the tree the proof is against.")
    inclusion_proof = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="RFC 9162 inclusion path, base64 SHA-256 hashes, leaf side first.")
    checkpoint = serializers.CharField(required=False, help_text="The signed checkpoint note of `tree_size`.")


@extend_schema_field(LogOutput(allow_null=True))
class LogField(serializers.Field):
    """The `log` object as the transparency selectors build it (pending has only `status`)."""

    def to_representation(self, value: dict | None) -> dict | None:
        return value


# base64 of 3309 bytes (1103 groups of three, so no padding); no `format: byte` beside the pattern, which
# makes generators (schemathesis) draw bytes of any length and then find none that matches.
@extend_schema_field({"type": "string", "description": "base64 ML-DSA-65 signature (3309 bytes)",
                      "pattern": "^[A-Za-z0-9+/]{4412}$"})
class Base64SignatureField(serializers.Field):
    """Base64 of exactly one ML-DSA-65 signature (3309 bytes); validated to raw bytes.

    A plain Field, not a CharField: CharField's per-character surrogate check costs about 1 ms on a
    4.4 KB signature, more than verifying it. Strict base64 decoding already rejects any non-ASCII.
    """

    MAX_CHARS = 4 * (crypto.SIGNATURE_BYTES + 2) // 3 + 4

    def to_internal_value(self, data) -> bytes:
        if not isinstance(data, str) or len(data) > self.MAX_CHARS:
            raise serializers.ValidationError("Expected the base64 text of one signature.")
        try:
            raw = base64.b64decode(data, validate=True)
        except ValueError:
            raise serializers.ValidationError("Not valid base64.") from None
        if len(raw) != crypto.SIGNATURE_BYTES:
            raise serializers.ValidationError(f"An ml-dsa-65 signature is {crypto.SIGNATURE_BYTES} bytes.")
        return raw


def _content_hash_format(value: str) -> None:
    if not is_content_hash(value):
        raise serializers.ValidationError("Expected sha3-256: followed by 64 lowercase hex characters.")


_content_hash_format.openapi_pattern = r"^sha3-256:[0-9a-f]{64}$"  # stated in the schema (core/openapi.py)


def _signed_text(max_length: int) -> serializers.CharField:
    # Signed strings are taken byte for byte: trimming would change what the signature covers.
    return serializers.CharField(max_length=max_length, trim_whitespace=False)


class RecordCreateInput(serializers.Serializer):
    watermark_id = _signed_text(128)
    generator_id = _signed_text(64)
    model = _signed_text(200)
    content_hash = serializers.CharField(max_length=73, trim_whitespace=False, validators=[_content_hash_format])
    signature = Base64SignatureField()
    signed_payload = serializers.DictField(child=serializers.JSONField())
    phash = serializers.RegexField(PHASH_PATTERN, required=False, allow_null=True, trim_whitespace=False)
    # What the content is (outside the signed payload, like `phash`): checked against the generator's
    # supported formats, shown as the record's `format`, and it tells a video's pHash from a picture's.
    format = serializers.ChoiceField(choices=FAMILIES, required=False, allow_null=True)


class RecordBatchInput(serializers.Serializer):
    records = RecordCreateInput(many=True, allow_empty=False, max_length=MAX_BATCH_ITEMS)


class RecordCreatedOutput(serializers.Serializer):
    token = serializers.CharField()
    record_id = serializers.UUIDField(source="pk")


class RecordBatchOutput(serializers.Serializer):
    results = RecordCreatedOutput(many=True)


TIME_STAMP_SCHEMA = {
    "type": "object", "nullable": True,
    "description": "The RFC 3161 time-stamp token over the record's signature, from the deployment's time-stamp "
                   "authority, and what it states; null when the record has none.",
    "properties": {"token": {"type": "string", "format": "byte", "description": "DER TimeStampToken, base64"},
                   "time": {"type": "string", "format": "date-time", "nullable": True},
                   "authority": {"type": "string"}},
    "required": ["token", "time", "authority"],
}


@extend_schema_field(TIME_STAMP_SCHEMA)
class TimeStampField(serializers.Field):
    """A record's signature time stamp as stored: the token and what it states (checked by verification)."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, token) -> dict | None:
        if token is None:
            return None
        token = bytes(token)
        try:
            facts = timestamp.token_facts(token)
        except timestamp.TimestampError:  # stored tokens were checked when stamped; say nothing rather than fail
            return {"token": base64.b64encode(token).decode(), "time": None, "authority": ""}
        return {"token": base64.b64encode(token).decode(), "time": _iso_z(facts.time), "authority": facts.authority}


def _iso_z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


class RecordOutput(serializers.Serializer):
    record_id = serializers.UUIDField(source="pk")
    generator_id = serializers.UUIDField()
    org = serializers.CharField(source="org.name")
    model = serializers.CharField()
    watermark_id = serializers.CharField()
    content_hash = serializers.CharField()
    phash = serializers.CharField(allow_null=True)
    signature = serializers.SerializerMethodField()
    signature_algorithm = serializers.SerializerMethodField()
    kid = serializers.CharField(source="key.kid")
    signed_payload = serializers.DictField(child=serializers.CharField())
    signed_at = serializers.DateTimeField()
    signature_timestamp = TimeStampField()
    format = serializers.CharField(allow_null=True)
    token = serializers.CharField()
    log = LogField(help_text="The record's transparency-log index and inclusion proof, or pending.")

    def get_signature(self, record) -> str:
        return base64.b64encode(bytes(record.signature)).decode()

    def get_signature_algorithm(self, record) -> str:
        return crypto.ALGORITHM


class SignInput(serializers.Serializer):
    """The form fields of POST /v1/sign besides the `content` file."""

    model = _signed_text(200)
    generator_id = serializers.CharField(max_length=64)
    format = serializers.ChoiceField(choices=FAMILIES, required=False)
    c2pa = serializers.BooleanField(required=False, default=False)
    watermark = serializers.BooleanField(required=False, default=True)
    disclosure = serializers.ChoiceField(choices=["visible"], required=False, allow_blank=True, default="")


@extend_schema_field({"type": "string", "format": "date-time",
                      "description": "ISO 8601: a date (midnight UTC) or a date and time (UTC without an offset)"})
class InstantField(serializers.Field):
    """An ISO 8601 date or date-time as an aware UTC datetime; a date means its midnight UTC."""

    def to_internal_value(self, data) -> datetime:
        text = data if isinstance(data, str) and len(data) <= 64 else ""
        try:
            moment = parse_datetime(text)
            day = None if moment else parse_date(text)
        except ValueError:  # well-formed but impossible (month 13)
            moment = day = None
        if moment is None and day is None:
            raise serializers.ValidationError("Expected an ISO 8601 date or date-time, e.g. 2026-01-31T12:00:00Z.")
        if moment is None:
            return datetime.combine(day, time(), tzinfo=UTC)
        try:  # in UTC, as stored; an offset can push year 1 or 9999 out of range
            return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
        except OverflowError:
            raise serializers.ValidationError("The instant is out of range.") from None


class RecordListQuery(PageQuery):
    """GET /v1/records: the page, and filters that all apply together."""

    generator_id = serializers.UUIDField(required=False)
    model = serializers.CharField(max_length=200, required=False, trim_whitespace=False)
    format = serializers.ChoiceField(choices=FAMILIES, required=False)

    def get_fields(self) -> dict:
        # `from` is a Python keyword, so the two bounds are added here rather than as class attributes.
        return {**super().get_fields(),
                "from": InstantField(required=False, help_text="Records signed at or after this instant."),
                "to": InstantField(required=False, help_text="Records signed before this instant.")}

    def validate(self, attrs: dict) -> dict:
        if "from" in attrs and "to" in attrs and attrs["from"] >= attrs["to"]:  # as the audit list's filters
            raise serializers.ValidationError({"to": ["Must be later than `from`."]})
        return attrs


class RecordPageOutput(serializers.Serializer):
    records = RecordOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    limit = serializers.IntegerField()


class ComplianceReportQuery(serializers.Serializer):
    """GET /v1/compliance/report: the period and the document's format."""

    format = serializers.ChoiceField(choices=REPORT_FORMATS, default="json", help_text=(
        "json (default); csv and pdf on Growth and above."))

    def get_fields(self) -> dict:
        # `from` is a Python keyword, so the two bounds are added here rather than as class attributes.
        return {**super().get_fields(),
                "from": InstantField(required=False, help_text="Signed or verified at or after this instant "
                                                               "(default: 30 days before `to`)."),
                "to": InstantField(required=False, help_text="Signed or verified before this instant (default: now).")}


class ComplianceDisclosuresOutput(serializers.Serializer):
    mark = serializers.IntegerField(help_text="Signatures whose file carried an invisible watermark.")
    metadata = serializers.IntegerField(help_text="Signatures whose file carried the token and disclosure metadata.")
    c2pa = serializers.IntegerField(help_text="Signatures whose file carried an embedded C2PA manifest.")
    visible = serializers.IntegerField(help_text="Signatures whose content carried a visible AI label.")
    not_recorded = serializers.IntegerField(help_text="Signatures whose disclosures were not recorded.")


class ComplianceFormatOutput(serializers.Serializer):
    format = serializers.CharField(allow_null=True, help_text="A content family; null: client-managed records "
                                                              "that named no format.")
    signatures = serializers.IntegerField()
    disclosures = serializers.SerializerMethodField()

    @extend_schema_field(ComplianceDisclosuresOutput)
    def get_disclosures(self, figures) -> dict:
        return {**figures.disclosures, "not_recorded": figures.not_recorded}


class ComplianceOrganizationOutput(serializers.Serializer):
    id = serializers.CharField(source="organization_id")
    name = serializers.CharField(source="organization_name")


class ComplianceReportOutput(serializers.Serializer):
    organization = ComplianceOrganizationOutput(source="*")
    period = serializers.SerializerMethodField()
    generated_at = serializers.SerializerMethodField()
    signatures = serializers.SerializerMethodField()
    formats = ComplianceFormatOutput(many=True)
    verifications = serializers.IntegerField(help_text="Verifications that found one of the organization's records.")
    detection_tool_url = serializers.URLField(help_text="The public page where anyone can check a file.")

    @extend_schema_field({"type": "object", "properties": {"from": {"type": "string", "format": "date-time"},
                                                           "to": {"type": "string", "format": "date-time"}},
                          "required": ["from", "to"]})
    def get_period(self, report) -> dict:
        return {"from": iso_timestamp(report.since), "to": iso_timestamp(report.until)}

    def get_generated_at(self, report) -> str:
        return iso_timestamp(report.generated_at)

    def get_signatures(self, report) -> int:
        return report.total.signatures
