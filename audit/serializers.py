from audit.export import FORMATS
from audit.models import AuditEvent
from audit.selectors import AuditFilter
from core.paging import PageQuery
from core.validation import serializers

FILTERS = ("type", "from", "to")


class AuditFilterInput(serializers.Serializer):
    """`type`, `from` (inclusive) and `to` (exclusive), ISO 8601; an empty value is no filter, as a form sends it."""

    type = serializers.ChoiceField(choices=AuditEvent.Type.values, required=False, error_messages={
        "invalid_choice": f"\"{{input}}\" is not an audit event type; the types: {', '.join(AuditEvent.Type.values)}."})

    def get_fields(self) -> dict:
        fields = super().get_fields()
        # `from` is a Python keyword, so these two cannot be class attributes.
        fields["from"] = serializers.DateTimeField(required=False, help_text="ISO 8601; events at or after it")
        fields["to"] = serializers.DateTimeField(required=False, help_text="ISO 8601; events before it")
        return fields

    def to_internal_value(self, data):
        data = {name: value for name, value in data.items() if not (name in FILTERS and value == "")}
        return super().to_internal_value(data)

    def validate(self, attrs: dict) -> dict:
        if "from" in attrs and "to" in attrs and attrs["from"] >= attrs["to"]:
            raise serializers.ValidationError({"to": ["Must be later than `from`."]})
        return attrs

    @staticmethod
    def as_filter(data: dict) -> AuditFilter:
        return AuditFilter(type=data.get("type"), since=data.get("from"), until=data.get("to"))


class AuditQueryInput(AuditFilterInput, PageQuery):
    """The filters, and `page` and `limit` by the rules every paged API list shares (core/paging.py)."""


class AuditExportInput(AuditFilterInput):
    format = serializers.ChoiceField(choices=FORMATS)


class AuditEventOutput(serializers.Serializer):
    event_id = serializers.UUIDField(source="pk")
    type = serializers.CharField()
    timestamp = serializers.DateTimeField()
    metadata = serializers.JSONField()


class AuditPageOutput(serializers.Serializer):
    events = AuditEventOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
