"""Input shapes (validation only) and output shapes (the spec's JSON exactly) of the accounts API."""

from drf_spectacular.utils import extend_schema_serializer

from core.paging import ListPageFields
from core.validation import serializers

PASSWORD_MIN, PASSWORD_MAX = 8, 128  # spec: min 8; the max bounds hashing work


class RegisterInput(serializers.Serializer):
    org_name = serializers.CharField(max_length=200)
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(min_length=PASSWORD_MIN, max_length=PASSWORD_MAX, trim_whitespace=False)


class LoginInput(serializers.Serializer):
    email = serializers.CharField(max_length=254)
    password = serializers.CharField(max_length=PASSWORD_MAX, trim_whitespace=False)


# An authenticator code (6 digits) or a recovery code: 16 characters of Crockford's base32 (any case, the
# look-alikes i, l and o allowed; accounts.credentials.normalize_recovery_code), dashes or spaces between
# the groups of four optional.
SECOND_FACTOR_PATTERN = r"^(\d{6}|[0-9a-tv-zA-TV-Z]{4}([- ]?[0-9a-tv-zA-TV-Z]{4}){3})$"


def _second_factor_field() -> serializers.RegexField:
    return serializers.RegexField(SECOND_FACTOR_PATTERN, max_length=32, error_messages={
        "invalid": "Enter the 6-digit code from your authenticator app or a recovery code."})


class Verify2faInput(serializers.Serializer):
    challenge_token = serializers.CharField(max_length=200)
    otp = _second_factor_field()


class TokenInput(serializers.Serializer):
    token = serializers.CharField(max_length=200)


class EmailInput(serializers.Serializer):
    email = serializers.CharField(max_length=254)


class ResetPasswordInput(serializers.Serializer):
    token = serializers.CharField(max_length=200)
    password = serializers.CharField(min_length=PASSWORD_MIN, max_length=PASSWORD_MAX, trim_whitespace=False)


class OtpInput(serializers.Serializer):
    otp = serializers.RegexField(r"^\d{6}$", max_length=6)


class SecondFactorInput(serializers.Serializer):
    otp = _second_factor_field()


class RecoveryCodesRegenerateInput(serializers.Serializer):
    """Exactly one proof: a current authenticator code or the account password."""

    otp = serializers.RegexField(r"^\d{6}$", max_length=6, required=False)
    password = serializers.CharField(max_length=PASSWORD_MAX, trim_whitespace=False, required=False)

    def validate(self, data):
        if ("otp" in data) == ("password" in data):
            raise serializers.ValidationError("Send either otp (a current authenticator code) or password.")
        return data


class ApiKeyCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")


class UserOutput(serializers.Serializer):
    user_id = serializers.UUIDField(source="pk")
    email = serializers.EmailField()
    email_verified = serializers.BooleanField()
    org_id = serializers.UUIDField()


class MeUserOutput(UserOutput):
    created_at = serializers.DateTimeField()
    two_factor_enabled = serializers.BooleanField()
    role = serializers.CharField()


class OrgOutput(serializers.Serializer):
    org_id = serializers.UUIDField(source="pk")
    name = serializers.CharField()
    plan = serializers.CharField()


class MeOutput(serializers.Serializer):
    user = MeUserOutput()
    org = OrgOutput()


class UserEnvelopeOutput(serializers.Serializer):
    user = UserOutput()


class SessionOutput(serializers.Serializer):
    token = serializers.CharField()
    user = UserOutput()


class ChallengeOutput(serializers.Serializer):
    requires_2fa = serializers.BooleanField()
    challenge_token = serializers.CharField()


class SuccessOutput(serializers.Serializer):
    success = serializers.BooleanField()


class TotpSetupOutput(serializers.Serializer):
    secret = serializers.CharField()
    otpauth_url = serializers.CharField()


class TwoFactorStateOutput(serializers.Serializer):
    enabled = serializers.BooleanField()


class TwoFactorEnabledOutput(TwoFactorStateOutput):
    recovery_codes = serializers.ListField(child=serializers.CharField(), help_text=(
        "Ten single-use recovery codes, returned only here; each signs in once in place of an authenticator code."))


class RecoveryCodesOutput(serializers.Serializer):
    recovery_codes = serializers.ListField(child=serializers.CharField())


class ApiKeyOutput(serializers.Serializer):
    key_id = serializers.UUIDField(source="pk")
    name = serializers.CharField()
    preview = serializers.CharField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)


class ApiKeyCreatedOutput(serializers.Serializer):
    key_id = serializers.UUIDField(source="api_key.pk")
    key = serializers.CharField()
    preview = serializers.CharField(source="api_key.preview")
    name = serializers.CharField(source="api_key.name")
    created_at = serializers.DateTimeField(source="api_key.created_at")


# many=False: the list action answers one object wrapping the array (addendum), which
# drf-spectacular would otherwise document as a bare array.
@extend_schema_serializer(many=False)
class ApiKeyListOutput(ListPageFields):
    keys = ApiKeyOutput(many=True)


class RevokedOutput(serializers.Serializer):
    revoked = serializers.BooleanField()
