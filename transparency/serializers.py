from core.validation import serializers
from provenance.serializers import LogOutput


class RecordInclusionOutput(LogOutput):
    record_id = serializers.UUIDField()


class InclusionQuery(serializers.Serializer):
    record_id = serializers.UUIDField(required=False)
    index = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1)

    def validate(self, attrs: dict) -> dict:
        if ("record_id" in attrs) == ("index" in attrs):
            raise serializers.ValidationError("Give exactly one of record_id and index.")
        return attrs


class ConsistencyQuery(serializers.Serializer):
    first = serializers.IntegerField(min_value=0, max_value=2**63 - 1)
    second = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1,
                                      help_text="Default: the latest checkpoint's size.")


class ConsistencyOutput(serializers.Serializer):
    first = serializers.IntegerField()
    second = serializers.IntegerField()
    consistency_proof = serializers.ListField(child=serializers.CharField(),
                                              help_text="RFC 9162 consistency proof, base64 SHA-256 hashes.")
    checkpoint = serializers.CharField(help_text="The latest signed checkpoint note.")


class LogKeyOutput(serializers.Serializer):
    algorithm = serializers.ChoiceField(choices=["ed25519", "ml-dsa-65"])
    key_id = serializers.CharField(help_text="hex of the 4-byte signed-note key id")
    signature_type = serializers.CharField(help_text="hex of the signed-note signature type (01, or ff + identifier)")
    public_key = serializers.CharField(help_text="base64 raw public key")
    vkey = serializers.CharField(help_text="signed-note verifier key: name+keyid+base64(type || key)")


class LogKeysOutput(serializers.Serializer):
    origin = serializers.CharField()
    keys = LogKeyOutput(many=True)
