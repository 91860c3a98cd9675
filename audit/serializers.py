from rest_framework import serializers

MAX_LIMIT = 100  # spec: audit page size default 20, max 100 (above 100 is clamped, addendum 6)


class AuditQueryInput(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=10_000_000, default=1)
    limit = serializers.IntegerField(min_value=1, max_value=2**31 - 1, default=20)

    def validate_limit(self, value: int) -> int:
        return min(value, MAX_LIMIT)


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
