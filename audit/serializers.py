from rest_framework import serializers

from config.paging import PageQuery


class AuditQueryInput(PageQuery):
    """The audit list's `page` and `limit`: the rules every paged API list shares."""


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
