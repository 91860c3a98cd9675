"""The /v1/team routes: parse, call one service or selector, render.

Every route takes a session JWT only; any API key, the organization's or a personal one, is 401 like
no credential (spec, Authentication 4). Invite preview and accept are public, limited per client IP.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiKey, Role
from accounts.scoping import HasRole, OrgScopedViewSet, SessionRequired
from accounts.serializers import RevokedOutput
from core.paging import PageQuery, optional_page, page_counts
from core.throttles import AuthIpThrottle
from core.validation import validated
from teams import selectors, services
from teams import serializers as s
from teams.models import Invite

NOT_FOUND = OpenApiResponse(description="not_found")


class TeamViewSet(OrgScopedViewSet):
    """A session JWT, and on top the roles `roles_by_action` names for an action."""

    roles_by_action: dict[str, tuple[str, ...]] = {}

    def get_permissions(self):
        roles = self.roles_by_action.get(self.action)
        return [IsAuthenticated(), SessionRequired(), *([HasRole(*roles)()] if roles else [])]


class MemberViewSet(TeamViewSet):
    """Members: anyone lists them; owners change roles; owners and admins remove."""

    roles_by_action = {"role": (Role.OWNER,), "destroy": (Role.OWNER, Role.ADMIN)}

    @extend_schema(responses={200: s.MemberListOutput}, tags=["team"])
    def list(self, request):
        return Response(s.MemberListOutput(selectors.member_list(org=request.org)).data)

    @extend_schema(request=s.RoleChangeInput, responses={200: s.RoleOutput, 404: NOT_FOUND}, tags=["team"])
    def role(self, request, user_id=None):
        data = validated(s.RoleChangeInput, request)
        member = services.member_role_change(org=request.org, actor=request.user, member_id=user_id, **data)
        return Response(s.RoleOutput(member).data)

    @extend_schema(responses={200: s.RemovedOutput, 404: NOT_FOUND}, tags=["team"])
    def destroy(self, request, user_id=None):
        services.member_remove(org=request.org, actor=request.user, member_id=user_id)
        return Response({"removed": True})


class InviteViewSet(TeamViewSet):
    """Pending invites of the caller's organization: owners and admins list, send and cancel them."""

    queryset = Invite.objects.order_by("-created_at")
    roles_by_action = {"list": (Role.OWNER, Role.ADMIN), "create": (Role.OWNER, Role.ADMIN),
                       "destroy": (Role.OWNER, Role.ADMIN)}

    def get_queryset(self):
        return super().get_queryset().pending()  # per request: "pending" depends on the time

    @extend_schema(responses={200: s.InviteListOutput}, tags=["team"])
    def list(self, request):
        return Response(s.InviteListOutput({"invites": self.get_queryset()}).data)

    @extend_schema(request=s.InviteSendInput, responses={201: s.InviteSentOutput}, tags=["team"])
    def create(self, request):
        data = validated(s.InviteSendInput, request)
        invite = services.invite_send(org=request.org, inviter=request.user, **data)
        return Response(s.InviteSentOutput(invite).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.CancelledOutput, 404: NOT_FOUND}, tags=["team"])
    def destroy(self, request, invite_id=None):
        services.invite_cancel(org=request.org, actor=request.user, invite_id=invite_id)
        return Response({"cancelled": True})


class MemberApiKeyViewSet(TeamViewSet):
    """Personal API keys: users manage their own, owners and admins anyone's (decided in the service)."""

    queryset = ApiKey.objects.active().order_by("-created_at", "-id")

    def get_queryset(self):
        return super().get_queryset().personal_of(self.request.user)

    @extend_schema(parameters=[PageQuery], responses={200: s.PersonalKeyListOutput}, tags=["team"])
    def list(self, request):
        listed = optional_page(self.get_queryset(), request.query_params)
        return Response(s.PersonalKeyListOutput({"keys": listed.items, **page_counts(listed)}).data)

    @extend_schema(request=None, responses={201: s.PersonalKeyCreatedOutput, 404: NOT_FOUND}, tags=["team"])
    def create(self, request, user_id=None):
        created = services.member_api_key_create(org=request.org, actor=request.user, member_id=user_id)
        return Response(s.PersonalKeyCreatedOutput(created).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: RevokedOutput, 404: NOT_FOUND}, tags=["team"])
    def destroy(self, request, user_id=None, key_id=None):
        services.member_api_key_revoke(org=request.org, actor=request.user, member_id=user_id, key_id=key_id)
        return Response({"revoked": True})


class PublicInviteView(APIView):
    """Invite routes that take no credential (the token in the path is one): limited per client IP."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [AuthIpThrottle]


class InvitePreviewView(PublicInviteView):
    @extend_schema(responses={200: s.InvitePreviewOutput, 404: NOT_FOUND}, tags=["team"])
    def get(self, request, token):
        return Response(s.InvitePreviewOutput(selectors.public_invite_lookup(token=token)).data)


class InviteAcceptView(PublicInviteView):
    @extend_schema(request=s.InviteAcceptInput, responses={201: s.InviteAcceptedOutput}, tags=["team"])
    def post(self, request, token):
        accepted = services.invite_accept(token=token, **validated(s.InviteAcceptInput, request))
        return Response(s.InviteAcceptedOutput(accepted).data, status=status.HTTP_201_CREATED)
