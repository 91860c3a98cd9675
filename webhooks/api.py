"""/v1/webhooks: an organization's webhook endpoints (Growth or above, owner's email verified)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from accounts.gates import require_feature
from accounts.scoping import OrgScopedViewSet
from core.validation import validated
from webhooks import serializers as s
from webhooks import services
from webhooks.delivery import delivery_retry
from webhooks.models import WebhookEndpoint
from webhooks.selectors import delivery_for_retry, delivery_page


class WebhooksEnabled(BasePermission):
    """402 `plan_required` below Growth, then 403 `email_not_verified`: on every webhook route."""

    def has_permission(self, request, view) -> bool:
        require_feature(request.org, "webhooks")
        return True


class WebhookViewSet(OrgScopedViewSet):
    queryset = WebhookEndpoint.objects.all()
    permission_classes = [IsAuthenticated, WebhooksEnabled]
    lookup_value_converter = "uuid"

    @extend_schema(responses={200: s.WebhookListOutput}, tags=["webhooks"])
    def list(self, request):
        return Response(s.WebhookListOutput({"webhooks": self.get_queryset()}).data)

    @extend_schema(request=s.WebhookCreateInput, responses={201: s.WebhookCreatedOutput}, tags=["webhooks"])
    def create(self, request):
        created = services.webhook_create(org=request.org, **validated(s.WebhookCreateInput, request))
        body = {**s.WebhookOutput(created.endpoint).data, "secret": created.secret}  # WebhookCreatedOutput
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.WebhookUpdateInput, responses={200: s.WebhookOutput}, tags=["webhooks"])
    def partial_update(self, request, pk=None):
        data = validated(s.WebhookUpdateInput, request)
        endpoint = services.webhook_update(endpoint=self.get_object(), **data)
        return Response(s.WebhookOutput(endpoint).data)

    @extend_schema(responses={200: s.WebhookDeletedOutput}, tags=["webhooks"])
    def destroy(self, request, pk=None):
        services.webhook_delete(endpoint=self.get_object())
        return Response({"deleted": True})

    @extend_schema(parameters=[s.DeliveryQueryInput], responses={200: s.DeliveryListOutput}, tags=["webhooks"])
    @action(detail=True, methods=["get"], url_path="deliveries")
    def deliveries(self, request, pk=None):
        query = s.DeliveryQueryInput(data=request.query_params)
        query.is_valid(raise_exception=True)
        page, limit = query.validated_data["page"], query.validated_data["limit"]
        entries = delivery_page(endpoint=self.get_object(), number=page, per_page=limit).items
        return Response(s.DeliveryListOutput({"deliveries": entries}).data)

    @extend_schema(request=None, responses={200: s.DeliveryOutput}, tags=["webhooks"],
                   parameters=[OpenApiParameter("delivery_id", OpenApiTypes.UUID, OpenApiParameter.PATH)])
    @action(detail=True, methods=["post"], url_path="deliveries/<uuid:delivery_id>/retry")
    def retry(self, request, pk=None, delivery_id=None):
        delivery = delivery_for_retry(org=request.org, endpoint=self.get_object(), delivery_id=delivery_id)
        return Response(s.DeliveryOutput(delivery_retry(delivery)).data)
