"""/v1/generators (organization-scoped) and the public /v1/keys/:generator_id."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.scoping import OrgScopedViewSet
from core.cors import PublicCors
from core.paging import PageQuery, optional_page, page_counts
from core.throttles import VerifyIpThrottle
from core.validation import validated
from generators import selectors, services
from generators import serializers as s
from generators.models import Generator


def _public_key(data: dict | None) -> services.SuppliedPublicKey | None:
    if not data:
        return None
    return services.decode_public_key(kid=data.get("kid"), algorithm=data["algorithm"], key_b64=data["key"])


class GeneratorViewSet(OrgScopedViewSet):
    queryset = Generator.objects.prefetch_related("keys").order_by("created_at", "id")
    lookup_value_converter = "uuid"

    @extend_schema(parameters=[PageQuery], responses={200: s.GeneratorListOutput}, tags=["generators"])
    def list(self, request):
        listed = optional_page(self.get_queryset(), request.query_params)
        return Response(s.GeneratorListOutput({"generators": listed.items, **page_counts(listed)}).data)

    @extend_schema(responses={200: s.GeneratorDetailOutput}, tags=["generators"])
    def retrieve(self, request, pk=None):
        return Response(s.GeneratorDetailOutput(self.get_object()).data)

    @extend_schema(request=s.GeneratorRegisterInput, responses={201: s.GeneratorDetailOutput}, tags=["generators"])
    def create(self, request):
        data = validated(s.GeneratorRegisterInput, request)
        keys = data.get("public_keys") or []
        generator = services.generator_register(org=request.org, name=data["name"],
                                                public_key=_public_key(keys[0] if keys else None),
                                                supported_formats=data.get("supported_formats"))
        return Response(s.GeneratorDetailOutput(generator).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: s.GeneratorRevokedOutput}, tags=["generators"])
    @action(detail=True, methods=["put"])
    def revoke(self, request, pk=None):
        generator = services.generator_revoke(generator=self.get_object())
        return Response(s.GeneratorRevokedOutput(generator).data)

    @extend_schema(request=s.GeneratorRotateInput, responses={200: s.GeneratorDetailOutput}, tags=["generators"])
    @action(detail=True, methods=["post"])
    def rotate(self, request, pk=None):
        data = validated(s.GeneratorRotateInput, request)
        generator = self.get_object()
        services.generator_rotate_key(generator=generator, public_key=_public_key(data.get("public_key")))
        return Response(s.GeneratorDetailOutput(self.get_object()).data)


class PublicKeyView(PublicCors, APIView):
    """Public: every key a generator ever used, so anyone can verify its records offline."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]

    @extend_schema(responses={200: s.PublicKeyListOutput}, tags=["generators"])
    def get(self, request, generator_id):
        return Response(s.PublicKeyListOutput(selectors.public_key_lookup(generator_id=generator_id)).data)
