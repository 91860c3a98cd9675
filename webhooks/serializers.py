import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer

from core.validation import serializers
from webhooks.events import EVENT_KINDS
from webhooks.targets import MAX_URL_LENGTH

MAX_DELIVERIES_PER_PAGE = 100


def _events(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.ChoiceField(choices=EVENT_KINDS), allow_empty=False,
                                 max_length=50, help_text="One or more event kinds; duplicates are ignored.",
                                 **kwargs)


class WebhookCreateInput(serializers.Serializer):
    url = serializers.CharField(max_length=MAX_URL_LENGTH, help_text="An https:// URL on a public address.")
    events = _events()


class WebhookUpdateInput(serializers.Serializer):
    required_one_of = ("url", "events", "status")  # stated in the schema (core/openapi.py)
    url = serializers.CharField(max_length=MAX_URL_LENGTH, required=False)
    events = _events(required=False)
    status = serializers.ChoiceField(choices=["active", "disabled"], required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Send url, events or status.")
        return attrs


class WebhookOutput(serializers.Serializer):
    webhook_id = serializers.UUIDField(source="pk")
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    status = serializers.CharField()
    failure_count = serializers.IntegerField(source="consecutive_failures")
    created_at = serializers.DateTimeField()


class WebhookCreatedOutput(WebhookOutput):
    secret = serializers.CharField(help_text="Shown once: sign-checking key for deliveries.")


@extend_schema_serializer(many=False)
class WebhookListOutput(serializers.Serializer):
    webhooks = WebhookOutput(many=True)


class WebhookDeletedOutput(serializers.Serializer):
    deleted = serializers.BooleanField()


class DeliveryQueryInput(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=10_000_000, default=1)
    limit = serializers.IntegerField(min_value=1, max_value=2**31 - 1, default=50,
                                     help_text="Entries per page, newest first; above 100 is taken as 100.")

    def validate_limit(self, value: int) -> int:
        return min(value, MAX_DELIVERIES_PER_PAGE)


@extend_schema_field(OpenApiTypes.OBJECT)
class PayloadField(serializers.Field):
    """The stored request body shown as the JSON object it is."""

    def to_representation(self, value: str):
        return json.loads(value)


class DeliveryOutput(serializers.Serializer):
    delivery_id = serializers.UUIDField(source="pk")
    event = serializers.CharField()
    status = serializers.ChoiceField(choices=["success", "failed"])
    response_code = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField()
    payload = PayloadField(help_text="The envelope as sent: {id, event, timestamp, org_id, data}.")
    created_at = serializers.DateTimeField()


@extend_schema_serializer(many=False)
class DeliveryListOutput(serializers.Serializer):
    deliveries = DeliveryOutput(many=True)
