"""drf-spectacular post-processing: every /v1 operation documents its error responses.

All errors share one envelope (addendum section 1, `config/errors.py`), so they are added here once
instead of in each `extend_schema`: which statuses an operation can answer follows from its method,
parameters and security, the way the shared machinery (parsers, authentication, permissions, rate
limits, upload limits) produces them. A status an `extend_schema` declares itself is kept.
"""

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
    reference = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            responses = operation.setdefault("responses", {})
            declared_errors = {status for status in responses if status[:1] in "45"}
            for status in sorted(set(_statuses(method, operation)) | declared_errors):
                declared = responses.get(status)
                if declared is None or "content" not in declared:
                    description = (declared or {}).get("description") or DESCRIPTIONS.get(status, "An error.")
                    responses[status] = {"description": description,
                                         "content": {"application/json": {"schema": reference}}}
    return result
