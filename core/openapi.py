"""drf-spectacular: the schema states what the server enforces, and every /v1 operation documents its errors.

`AutoSchema` adds to each request field what DRF checks but drf-spectacular does not state: a list that
may not be empty has `minItems: 1`, a text field holds no NUL character and, unless it may be blank, more
than whitespace (DRF trims it first), and a serializer that needs one of several optional fields says so
(`required_one_of`). `document_error_responses` marks a request body required where its schema requires
a property, so a schema-valid request always carries it.

All errors share one envelope (addendum section 1, `core/errors.py`), so they are added here once
instead of in each `extend_schema`: which statuses an operation can answer follows from its method,
parameters and security, the way the shared machinery (parsers, authentication, permissions, rate
limits, upload limits) produces them. A status an `extend_schema` declares itself is kept.
"""

from django.core.validators import RegexValidator
from drf_spectacular import openapi
from rest_framework import serializers

# Text DRF's CharField accepts: no NUL anywhere; if it may not be blank, something besides whitespace.
TEXT_PATTERN = r"^[^\x00]*$"
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
NON_BLANK_TEXT_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"
# Past this maxLength a text field states its length alone: a pattern beside a long maximum makes
# schema-driven generators (schemathesis' boundary cases) search for a string of exactly that length that
# matches it, for minutes per operation (a public key's 4,000 characters held a run over ten minutes).
MAX_PATTERNED_LENGTH = 255


class AutoSchema(openapi.AutoSchema):
    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction != "request" or not isinstance(schema, dict):
            return schema
        if isinstance(field, serializers.ListField | serializers.ListSerializer):
            if not field.allow_empty:
                schema["minItems"] = max(schema.get("minItems", 0), 1)
            if field.min_length is not None:
                schema["minItems"] = max(schema.get("minItems", 0), field.min_length)
            if field.max_length is not None:
                schema["maxItems"] = field.max_length
        elif (isinstance(field, serializers.CharField) and schema.get("type") == "string"
              and not ({"pattern", "format", "enum"} & set(schema))
              and not any(isinstance(validator, RegexValidator) for validator in field.validators)):
            stated = [getattr(validator, "openapi_pattern", None) for validator in field.validators]
            if any(stated):  # a validator function that states its rule as a pattern
                schema["pattern"] = next(pattern for pattern in stated if pattern)
                return schema
            if field.max_length is not None and field.max_length > MAX_PATTERNED_LENGTH:
                return schema
            blank_is_refused = not field.allow_blank and field.trim_whitespace
            schema["pattern"] = NON_BLANK_TEXT_PATTERN if blank_is_refused else TEXT_PATTERN
        return schema

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        one_of = getattr(serializer, "required_one_of", None)
        if direction == "request" and one_of:
            schema["anyOf"] = [{"required": [name]} for name in one_of]
        return schema


ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": "The error envelope of every failed request.",
    "properties": {
        "error": {"type": "string", "description": "A stable code, e.g. `validation_error`."},
        "message": {"type": "string"},
        "details": {"description": "For `validation_error`: field name -> list of messages; else any value."},
        "upgrade_url": {"type": "string", "description": "402 `signature_limit_reached` only."},
        "limit": {"type": "integer", "nullable": True, "description": "402 `signature_limit_reached` only."},
        "current": {"type": "integer", "description": "402 `signature_limit_reached` only."},
        "request_id": {"type": "string", "description": "5xx only: the request's id, also in `X-Request-Id`."},
    },
    "required": ["error", "message"],
}
DESCRIPTIONS = {
    "400": "`validation_error` and the operation's own codes (e.g. `signature_invalid`, `format_not_supported`).",
    "401": "`authentication_required` (no or bad credential), `invalid_credentials`, `otp_invalid`.",
    "402": "`signature_limit_reached`, `plan_required`, `seat_limit_reached`.",
    "403": "`forbidden` (role or cross-organization), `email_not_verified`.",
    "404": "`not_found`.",
    "409": "`email_taken`, `already_member`, `idempotency_conflict` (an `Idempotency-Key` reused for another request).",
    "413": "`payload_too_large`.",
    "415": "`unsupported_media_type`.",
    "429": "`rate_limited` (with `Retry-After`), `too_many_attempts`.",
}
WRITE_METHODS = {"post", "put", "patch"}


def _statuses(method: str, operation: dict) -> list[str]:
    statuses = ["401", "429"]
    if method in WRITE_METHODS or operation.get("parameters"):
        statuses.append("400")
    if method in WRITE_METHODS:
        statuses += ["402", "409", "413", "415"]
    if any(parameter.get("in") == "path" for parameter in operation.get("parameters", [])):
        statuses.append("404")
    if operation.get("security") != [{}]:  # public routes have no roles to refuse
        statuses.append("403")
    return sorted(statuses)


def document_error_responses(result: dict, generator, request, public) -> dict:
    """POSTPROCESSING_HOOK: add the shared error envelope to every operation's error statuses."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    components = result["components"]["schemas"]
    reference = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            _require_body_with_required_properties(operation, components)
            responses = operation.setdefault("responses", {})
            declared_errors = {status for status in responses if status[:1] in "45"}
            for status in sorted(set(_statuses(method, operation)) | declared_errors):
                declared = responses.get(status)
                if declared is None or "content" not in declared:
                    description = (declared or {}).get("description") or DESCRIPTIONS.get(status, "An error.")
                    responses[status] = {"description": description,
                                         "content": {"application/json": {"schema": reference}}}
    return result


def _require_body_with_required_properties(operation: dict, components: dict) -> None:
    body = operation.get("requestBody")
    if not body or body.get("required"):
        return
    for media in body.get("content", {}).values():
        schema = media.get("schema", {})
        if "$ref" in schema:
            schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
        if schema.get("required") or schema.get("anyOf"):
            body["required"] = True
            return
