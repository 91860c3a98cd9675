"""/v1/generators (organization-scoped), the public /v1/keys/:generator_id and /v1/c2pa/trust-anchors."""

import base64

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.scoping import OrgScopedViewSet
from core.cors import PublicCors
from core.errors import Forbidden
from core.paging import PageQuery, optional_page, page_counts
from core.throttles import VerifyIpThrottle
from core.validation import validated, validated_query
from generators import certificates, selectors, services
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
                                                supported_formats=data.get("supported_formats"),
                                                c2pa_signing=data.get("c2pa_signing", "ml-dsa-65"),
                                                disclosure=services.DeclaredDisclosure.of(data))
        return Response(s.GeneratorDetailOutput(generator).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: s.GeneratorRevokedOutput}, tags=["generators"])
    @action(detail=True, methods=["put"])
    def revoke(self, request, pk=None):
        generator = services.generator_revoke(generator=self.get_object())
        return Response(s.GeneratorRevokedOutput(generator).data)

    def get_permissions(self):
        if self.action in ("c2pa_certificate", "c2pa_certificate_remove"):
            return [*super().get_permissions(), NotMemberRole()]
        return super().get_permissions()

    @extend_schema(request=s.GeneratorRotateInput, responses={200: s.GeneratorDetailOutput}, tags=["generators"])
    @action(detail=True, methods=["post"])
    def rotate(self, request, pk=None):
        data = validated(s.GeneratorRotateInput, request)
        generator = self.get_object()
        services.generator_rotate_key(generator=generator, public_key=_public_key(data.get("public_key")))
        return Response(s.GeneratorDetailOutput(self.get_object()).data)

    @extend_schema(request=s.C2paCertificateUploadInput, tags=["generators"], responses={
        200: s.C2paCertificateOutput,
        400: OpenApiResponse(description="`validation_error` (details say what fails) or `generator_client_managed`"),
    })
    @action(detail=True, methods=["put"], url_path="c2pa-certificate")
    def c2pa_certificate(self, request, pk=None):
        data = validated(s.C2paCertificateUploadInput, request)
        upload = certificates.generator_c2pa_certificate_upload(
            generator=self.get_object(), chain_pem=data["certificate_chain"], key_pem=data["private_key"],
            actor=_actor_id(request))
        return Response(s.C2paCertificateOutput(_upload_body(upload)).data)

    @extend_schema(request=None, responses={200: s.C2paCertificateRemovedOutput}, tags=["generators"])
    @c2pa_certificate.mapping.delete
    def c2pa_certificate_remove(self, request, pk=None):
        removed = certificates.generator_c2pa_certificate_remove(generator=self.get_object(), actor=_actor_id(request))
        return Response(s.C2paCertificateRemovedOutput({"removed": removed}).data)


class PublicKeyView(PublicCors, APIView):
    """Public: every key a generator ever used, so anyone can verify its records offline."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]

    @extend_schema(responses={200: s.PublicKeyListOutput}, tags=["generators"])
    def get(self, request, generator_id):
        generator = selectors.public_key_lookup(generator_id=generator_id)
        chains = certificates.public_key_certificates(generator)
        return Response(s.PublicKeyListOutput(generator, context={"certificates": chains}).data)


class TrustAnchorsView(PublicCors, APIView):
    """Public: the root certificates a C2PA validator should trust for this deployment's manifests."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]

    @extend_schema(parameters=[s.TrustAnchorQuery], tags=["c2pa"], responses={
        (200, "application/json"): s.TrustAnchorListOutput,
        (200, "application/x-pem-file"): OpenApiResponse(OpenApiTypes.STR, description="PEM bundle (?format=pem)"),
    })
    def get(self, request):
        query = validated_query(s.TrustAnchorQuery, request)
        anchors = certificates.trust_anchor_summaries()
        if query["format"] == "pem":
            return HttpResponse("".join(anchor["certificate"] for anchor in anchors),
                                content_type="application/x-pem-file")
        body = {"trust_anchors": anchors}
        return Response(s.TrustAnchorListOutput(body).data)


class NotMemberRole(BasePermission):
    """A generator's own signing key is an Owner's or Admin's to change: a session of the `user` role is 403.
    API keys act for the organization, as on the other generator routes."""

    def has_permission(self, request, view) -> bool:
        if request.auth is not None and request.auth.is_session and request.user.role not in ("owner", "admin"):
            raise Forbidden("This needs the role owner or admin.")
        return True


def _actor_id(request) -> str | None:
    return str(request.user.pk) if request.auth is not None and request.auth.is_session else None


def _upload_body(upload) -> dict:
    chain = [certificates.certificate_summary(base64.b64decode(der)) for der in upload.chain]
    return {"generator": upload.generator, "certificate_chain": [c["certificate"] for c in chain],
            "subject": chain[0]["subject"], "not_after": upload.not_after, "sha256": chain[0]["sha256"]}
