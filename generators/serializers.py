import base64

from drf_spectacular.utils import extend_schema_serializer

from core.paging import ListPageFields
from core.validation import serializers
from media_codecs import FAMILIES

KID_PATTERN = r"^[A-Za-z0-9._:-]{1,64}$"


class PublicKeyInput(serializers.Serializer):
    kid = serializers.RegexField(KID_PATTERN, required=False)
    algorithm = serializers.CharField(max_length=20)
    key = serializers.CharField(max_length=4000)


class GeneratorRegisterInput(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    public_keys = PublicKeyInput(
        many=True, required=False, max_length=1,
        help_text="Omit (or send []) for a server-managed keypair; one key for client-managed.")
    supported_formats = serializers.ListField(child=serializers.ChoiceField(choices=FAMILIES), required=False,
                                              allow_empty=False, max_length=len(FAMILIES))


class GeneratorRotateInput(serializers.Serializer):
    public_key = PublicKeyInput(required=False)


class PublicKeyOutput(serializers.Serializer):
    kid = serializers.CharField()
    algorithm = serializers.CharField()
    key = serializers.SerializerMethodField()

    def get_key(self, key) -> str:
        return base64.b64encode(bytes(key.public_key)).decode()


class PublicKeyHistoryOutput(PublicKeyOutput):
    created_at = serializers.DateTimeField()
    retired_at = serializers.DateTimeField(allow_null=True)


class GeneratorOutput(serializers.Serializer):
    generator_id = serializers.UUIDField(source="pk")
    org_id = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.CharField()
    mode = serializers.CharField()
    supported_formats = serializers.ListField(child=serializers.CharField())
    public_keys = PublicKeyOutput(source="current_keys", many=True)


class GeneratorDetailOutput(GeneratorOutput):
    created_at = serializers.DateTimeField()


# many=False: the list action answers one object wrapping the array (addendum), which
# drf-spectacular would otherwise document as a bare array.
@extend_schema_serializer(many=False)
class GeneratorListOutput(ListPageFields):
    generators = GeneratorOutput(many=True)


class GeneratorRevokedOutput(serializers.Serializer):
    generator_id = serializers.UUIDField(source="pk")
    status = serializers.CharField()


class PublicKeyListOutput(serializers.Serializer):
    generator_id = serializers.UUIDField(source="pk")
    status = serializers.CharField()
    public_keys = PublicKeyHistoryOutput(source="keys.all", many=True)
