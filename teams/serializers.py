"""Input shapes (validation only) and output shapes (the spec's JSON exactly) of the team API."""

from drf_spectacular.utils import extend_schema_serializer

from accounts.models import Role
from accounts.serializers import PASSWORD_MAX, PASSWORD_MIN
from core.paging import ListPageFields
from core.validation import serializers

INVITABLE_ROLES = [Role.USER.value, Role.ADMIN.value]  # spec: an invite's role is `user` or `admin`


class InviteSendInput(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=INVITABLE_ROLES)


class InviteAcceptInput(serializers.Serializer):
    password = serializers.CharField(min_length=PASSWORD_MIN, max_length=PASSWORD_MAX, trim_whitespace=False)


class RoleChangeInput(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.values)


class MemberOutput(serializers.Serializer):
    user_id = serializers.UUIDField(source="pk")
    email = serializers.EmailField()
    role = serializers.CharField()
    email_verified = serializers.BooleanField()
    api_key_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


# many=False: the list answers one object wrapping the array (spec), not a bare array.
@extend_schema_serializer(many=False)
class MemberListOutput(serializers.Serializer):
    members = MemberOutput(many=True)
    plan = serializers.CharField()
    max_members = serializers.IntegerField(allow_null=True)  # null: unlimited (enterprise)
    admin_role = serializers.BooleanField()


class RoleOutput(serializers.Serializer):
    user_id = serializers.UUIDField(source="pk")
    role = serializers.CharField()


class RemovedOutput(serializers.Serializer):
    removed = serializers.BooleanField()


class InviteOutput(serializers.Serializer):
    invite_id = serializers.UUIDField(source="pk")
    email = serializers.EmailField()
    role = serializers.CharField()
    inviter_id = serializers.UUIDField(allow_null=True)  # null once the inviter has left
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


@extend_schema_serializer(many=False)
class InviteListOutput(serializers.Serializer):
    invites = InviteOutput(many=True)


class InviteSentOutput(serializers.Serializer):
    invite_id = serializers.UUIDField(source="pk")
    email = serializers.EmailField()
    role = serializers.CharField()
    expires_at = serializers.DateTimeField()


class InvitePreviewOutput(serializers.Serializer):
    invite_id = serializers.UUIDField(source="pk")
    email = serializers.EmailField()
    role = serializers.CharField()
    org_name = serializers.CharField(source="org.name")
    expires_at = serializers.DateTimeField()


class CancelledOutput(serializers.Serializer):
    cancelled = serializers.BooleanField()


class TeamUserOutput(serializers.Serializer):
    user_id = serializers.UUIDField(source="pk")
    email = serializers.EmailField()
    org_id = serializers.UUIDField()
    role = serializers.CharField()
    email_verified = serializers.BooleanField()


class InviteAcceptedOutput(serializers.Serializer):
    token = serializers.CharField()
    user = TeamUserOutput()


class PersonalKeyCreatedOutput(serializers.Serializer):
    key_id = serializers.UUIDField(source="api_key.pk")
    key = serializers.CharField()
    created_at = serializers.DateTimeField(source="api_key.created_at")


class PersonalKeyOutput(serializers.Serializer):
    key_id = serializers.UUIDField(source="pk")
    preview = serializers.CharField()
    created_at = serializers.DateTimeField()


@extend_schema_serializer(many=False)
class PersonalKeyListOutput(ListPageFields):
    keys = PersonalKeyOutput(many=True)
