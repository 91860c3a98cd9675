"""The /v1/auth and /v1/api-keys routes: parse, call one service, render."""

from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import mixins, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import serializers as s
from accounts import services
from accounts.models import ApiKey
from accounts.scoping import HasRole, OrgScopedViewSet, SessionOnly, SessionRequired
from core.paging import PageQuery, optional_page, page_counts
from core.throttles import AuthIpThrottle
from core.validation import validated

SUCCESS = {"success": True}


class PublicAuthView(APIView):
    """Auth routes that take no credential: limited per client IP against guessing."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [AuthIpThrottle]


class SessionView(APIView):
    """Auth routes for a signed-in person: a session JWT; an API key is 401 like no credential."""

    permission_classes = [IsAuthenticated, SessionRequired]


def _session_body(result) -> dict:
    return s.SessionOutput({"token": result.token, "user": result.user}).data


class RegisterView(PublicAuthView):
    @extend_schema(request=s.RegisterInput, responses={201: s.UserEnvelopeOutput}, tags=["auth"])
    def post(self, request):
        data = validated(s.RegisterInput, request)
        user = services.user_register(**data)
        return Response(s.UserEnvelopeOutput({"user": user}).data, status=status.HTTP_201_CREATED)


class LoginView(PublicAuthView):
    @extend_schema(
        request=s.LoginInput,
        responses={200: PolymorphicProxySerializer("LoginResult", [s.SessionOutput, s.ChallengeOutput], None)},
        tags=["auth"],
    )
    def post(self, request):
        result = services.session_login(**validated(s.LoginInput, request))
        if result.requires_2fa:
            return Response({"requires_2fa": True, "challenge_token": result.challenge_token})
        return Response(_session_body(result))


class Verify2faView(PublicAuthView):
    @extend_schema(request=s.Verify2faInput, responses={200: s.SessionOutput}, tags=["auth"])
    def post(self, request):
        result = services.two_factor_verify(**validated(s.Verify2faInput, request))
        return Response(_session_body(result))


class VerifyEmailView(PublicAuthView):
    @extend_schema(request=s.TokenInput, responses={200: s.SuccessOutput}, tags=["auth"])
    def post(self, request):
        services.email_verify(**validated(s.TokenInput, request))
        return Response(SUCCESS)


class ResendVerificationView(PublicAuthView):
    @extend_schema(request=s.EmailInput, responses={200: s.SuccessOutput}, tags=["auth"])
    def post(self, request):
        services.verification_resend(**validated(s.EmailInput, request))
        return Response(SUCCESS)


class ForgotPasswordView(PublicAuthView):
    @extend_schema(request=s.EmailInput, responses={200: s.SuccessOutput}, tags=["auth"])
    def post(self, request):
        services.password_forgot(**validated(s.EmailInput, request))
        return Response(SUCCESS)


class ResetPasswordView(PublicAuthView):
    @extend_schema(request=s.ResetPasswordInput, responses={200: s.SuccessOutput}, tags=["auth"])
    def post(self, request):
        services.password_reset(**validated(s.ResetPasswordInput, request))
        return Response(SUCCESS)


class MeView(SessionView):
    """The signed-in user and their organization."""

    @extend_schema(responses={200: s.MeOutput}, tags=["auth"])
    def get(self, request):
        return Response(s.MeOutput({"user": request.user, "org": request.org}).data)


class LogoutView(SessionView):
    @extend_schema(request=None, responses={200: s.SuccessOutput}, tags=["auth"])
    def post(self, request):
        services.session_logout(jti=request.auth.jti, exp=request.auth.exp)
        return Response(SUCCESS)


class TwoFactorSetupView(SessionView):
    @extend_schema(request=None, responses={200: s.TotpSetupOutput}, tags=["auth"])
    def post(self, request):
        setup = services.two_factor_setup(user=request.user)
        return Response(s.TotpSetupOutput(setup).data)


class TwoFactorEnableView(SessionView):
    @extend_schema(request=s.OtpInput, responses={200: s.TwoFactorEnabledOutput}, tags=["auth"])
    def post(self, request):
        codes = services.two_factor_enable(user=request.user, **validated(s.OtpInput, request))
        return Response(s.TwoFactorEnabledOutput({"enabled": True, "recovery_codes": codes}).data)


class TwoFactorDisableView(SessionView):
    @extend_schema(request=s.SecondFactorInput, responses={200: s.TwoFactorStateOutput}, tags=["auth"])
    def post(self, request):
        services.two_factor_disable(user=request.user, **validated(s.SecondFactorInput, request))
        return Response({"enabled": False})


class RecoveryCodesView(SessionView):
    """New recovery codes in place of the old ones; a password guess here counts like one at login."""

    throttle_classes = [*SessionView.throttle_classes, AuthIpThrottle]

    @extend_schema(request=s.RecoveryCodesRegenerateInput, responses={200: s.RecoveryCodesOutput}, tags=["auth"])
    def post(self, request):
        codes = services.recovery_codes_regenerate(
            user=request.user, **validated(s.RecoveryCodesRegenerateInput, request))
        return Response(s.RecoveryCodesOutput({"recovery_codes": codes}).data)


class ApiKeyViewSet(mixins.ListModelMixin, OrgScopedViewSet):
    """Organization API keys: any member lists them; owners and admins create and revoke."""

    # Members' personal keys live in the same table; they are managed on the team routes only.
    queryset = ApiKey.objects.active().organization_keys().order_by("-created_at", "-id")
    serializer_class = s.ApiKeyOutput
    pagination_class = None

    def get_permissions(self):
        roles = [] if self.action == "list" else [HasRole("owner", "admin")()]
        return [IsAuthenticated(), SessionOnly(), *roles]

    @extend_schema(parameters=[PageQuery], responses={200: s.ApiKeyListOutput}, tags=["api-keys"])
    def list(self, request):
        listed = optional_page(self.get_queryset(), request.query_params)
        return Response(s.ApiKeyListOutput({"keys": listed.items, **page_counts(listed)}).data)

    @extend_schema(request=s.ApiKeyCreateInput, responses={201: s.ApiKeyCreatedOutput}, tags=["api-keys"])
    def create(self, request):
        data = validated(s.ApiKeyCreateInput, request)
        created = services.api_key_create(org=request.org, created_by=request.user, name=data["name"])
        return Response(s.ApiKeyCreatedOutput(created).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.RevokedOutput, 404: OpenApiResponse(description="not_found")},
                   tags=["api-keys"])
    def destroy(self, request, pk=None):
        services.api_key_revoke(org=request.org, key_id=pk)
        return Response({"revoked": True})
