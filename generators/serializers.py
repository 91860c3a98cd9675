import base64

from drf_spectacular.utils import extend_schema_serializer

from core.paging import ListPageFields
from core.validation import serializers
from media_codecs import FAMILIES
from media_codecs import label as labels
from media_codecs.disclosure import source_type_term
from record_format.certificates import MAX_CHAIN_LENGTH

C2PA_SIGNING = ("ml-dsa-65", "hybrid")
# A PEM certificate of a usual CA is 1-3 KB (an ML-DSA one ~7.5 KB); the bounds keep a body's parsing cheap.
PEM_CERTIFICATE_MAX_CHARS = 16000
PEM_KEY_MAX_CHARS = 4000

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
    c2pa_signing = serializers.ChoiceField(
        choices=C2PA_SIGNING, required=False,
        help_text="How C2PA manifests are signed: `ml-dsa-65` (default) or `hybrid` (an ES256 claim signature "
                  "with an X.509 chain C2PA validators trust, countersigned with ML-DSA-65; server-managed only).")
    provider_name = serializers.CharField(max_length=200, required=False, allow_blank=True,
                                          help_text="The provider named in every signed file's disclosure.")
    system_name = serializers.CharField(max_length=200, required=False, allow_blank=True,
                                        help_text="The generative system's name, in every signed file's disclosure.")
    system_version = serializers.CharField(max_length=100, required=False, allow_blank=True,
                                           help_text="The system's version, in every signed file's disclosure.")
    digital_source_type = serializers.CharField(
        max_length=120, required=False,
        help_text="An IPTC digital source type, its URI or the URI's last segment (default "
                  "`trainedAlgorithmicMedia`); files carry the URI.")

    label_text = serializers.CharField(max_length=labels.MAX_TEXT, required=False,
                                       help_text="The visible label's words (`disclosure=visible`); default "
                                                 "`AI-generated`.")
    label_position = serializers.ChoiceField(choices=list(labels.POSITIONS), required=False,
                                             help_text="The corner of a picture the label goes in; default "
                                                       "`bottom-right`.")
    label_size = serializers.FloatField(min_value=labels.MIN_SIZE, max_value=labels.MAX_SIZE, required=False,
                                        help_text="The label's text height in percent of a picture's width "
                                                  "(default 4; at least 3.2, readable on a 375 px screen).")

    def validate_label_text(self, value: str) -> str:
        if not value.isprintable():
            raise serializers.ValidationError("The label is printable characters on one line.")
        return value

    def validate_digital_source_type(self, value: str) -> str:
        if source_type_term(value) is None:
            raise serializers.ValidationError("Not a term of IPTC's digital source type vocabulary "
                                              "(e.g. trainedAlgorithmicMedia, compositeWithTrainedAlgorithmicMedia).")
        return value.strip()


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
    certificates = serializers.SerializerMethodField(
        help_text='Per algorithm ("ml-dsa-65", and "es256" for hybrid generators), the key\'s C2PA certificate '
                  "chain as PEM, end entity first, no root.")

    def get_certificates(self, key) -> dict[str, list[str]]:
        return self.context.get("certificates", {}).get(key.kid, {})


class GeneratorOutput(serializers.Serializer):
    generator_id = serializers.UUIDField(source="pk")
    org_id = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.CharField()
    mode = serializers.CharField()
    supported_formats = serializers.ListField(child=serializers.CharField())
    c2pa_signing = serializers.CharField()
    provider_name = serializers.CharField()
    system_name = serializers.CharField()
    system_version = serializers.CharField()
    digital_source_type = serializers.CharField()
    label_text = serializers.CharField()
    label_position = serializers.CharField()
    label_size = serializers.FloatField()
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
    c2pa_signing = serializers.CharField()
    public_keys = PublicKeyHistoryOutput(source="keys.all", many=True)


class C2paCertificateUploadInput(serializers.Serializer):
    certificate_chain = serializers.ListField(
        child=serializers.CharField(max_length=PEM_CERTIFICATE_MAX_CHARS, trim_whitespace=False),
        allow_empty=False, max_length=MAX_CHAIN_LENGTH,
        help_text="PEM certificates: the ES256 (P-256) end entity first, then its issuers; the root may be left out.")
    private_key = serializers.CharField(max_length=PEM_KEY_MAX_CHARS, trim_whitespace=False,
                                        help_text="The end entity's P-256 key, unencrypted PEM (PKCS#8 or SEC1).")


class C2paCertificateOutput(serializers.Serializer):
    generator_id = serializers.UUIDField(source="generator.pk")
    certificate_chain = serializers.ListField(child=serializers.CharField(), help_text="PEM, end entity first.")
    subject = serializers.CharField()
    not_after = serializers.DateTimeField()
    sha256 = serializers.CharField(help_text="SHA-256 of the end entity's DER, hex.")


class C2paCertificateRemovedOutput(serializers.Serializer):
    removed = serializers.BooleanField(help_text="False when the generator had no certificate of its own.")


class TrustAnchorOutput(serializers.Serializer):
    certificate = serializers.CharField(help_text="PEM")
    subject = serializers.CharField()
    algorithm = serializers.CharField(help_text="The root's key: ecdsa-p384, ml-dsa-65, ...")
    not_before = serializers.DateTimeField()
    not_after = serializers.DateTimeField()
    sha256 = serializers.CharField(help_text="SHA-256 of the DER certificate, hex.")
    use = serializers.ChoiceField(choices=("signing", "time-stamping"), help_text=(
        "signing: C2PA manifest signers chain to it; time-stamping: a time-stamp authority's root, to be "
        "trusted for time stamps only."))


class TrustAnchorListOutput(serializers.Serializer):
    trust_anchors = TrustAnchorOutput(many=True)


class TrustAnchorQuery(serializers.Serializer):
    format = serializers.ChoiceField(choices=("json", "pem"), required=False, default="json",
                                     help_text="`pem`: the PEM bundle as application/x-pem-file.")
