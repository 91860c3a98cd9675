"""Input checking shared by every view: request bodies and query strings through input serializers.

Strings are strict. DRF's CharField (and its Email, Regex, Slug and URL kin) takes a JSON number and
stores its text (`{"org_name": 0}` made an organization named "0"), UUIDField takes an integer as a
UUID, and ChoiceField matches a number against its choices by text. Here a string field takes a JSON
string and nothing else: a number, boolean, list or object is 400 `validation_error` naming the field.
Every serializers.py imports `serializers` from this module, not from rest_framework, so every field
it declares is strict without saying so (tests/core/test_strict_strings.py checks both).
"""

from types import SimpleNamespace

from rest_framework import serializers as drf_serializers
from rest_framework.exceptions import ValidationError

NOT_A_STRING = "Not a valid string."


class StrictString:
    """Mixin for a DRF field whose input is text: anything but a JSON string is refused before parsing."""

    default_error_messages = {"not_a_string": NOT_A_STRING}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


def _strict(field_class: type) -> type:
    return type(field_class.__name__, (StrictString, field_class), {"__module__": __name__})


# Every DRF field that takes text (DateTimeField, DateField and the rest already refuse numbers).
STRING_FIELDS = ("CharField", "EmailField", "RegexField", "SlugField", "URLField", "IPAddressField",
                 "UUIDField", "ChoiceField")
STRICT_FIELDS = {name: _strict(getattr(drf_serializers, name)) for name in STRING_FIELDS}

# DRF's `serializers` module with the strict string fields in place of DRF's own: `from
# core.validation import serializers` and write `serializers.CharField(...)` as usual.
serializers = SimpleNamespace(**{**{name: value for name, value in vars(drf_serializers).items()
                                    if not name.startswith("__")}, **STRICT_FIELDS})


def validated(serializer_class, request) -> dict:
    """The request body checked by an input serializer; ValidationError (400) for any other shape."""
    if not isinstance(request.data, dict):  # a multipart QueryDict is a dict too
        raise ValidationError({"non_field_errors": ["Expected a JSON object."]})
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def validated_query(serializer_class, request) -> dict:
    """The query string checked by an input serializer; ValidationError (400) for bad values."""
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
