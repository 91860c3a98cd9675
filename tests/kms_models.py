"""Checks of KMS requests and answers against each service's published model, as its SDK ships it.

- AWS KMS: botocore's `kms/2014-11-01/service-2.json` (loaded with botocore's Loader: it is gzipped in
  recent botocore). A request must name an operation of the model in X-Amz-Target, use its HTTP method and
  path, carry only members of its input shape with the shape's types, lengths and enum values and every
  required member; it must also pass botocore's own parameter validation and serialize to the same JSON
  through botocore's JSON serializer. Answers are checked against output shapes the same way.
- Google Cloud KMS: google-api-python-client's `cloudkms.v1.json` discovery document. A request must match
  exactly one method by HTTP method, path template and parameter patterns, send only declared query
  parameters (enum values from the document), every parameter the document calls "Required.", and a body of
  the method's request schema with no output-only field; answers must fit the response schema.
Any departure raises ModelViolation.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from datetime import datetime
from pathlib import Path

import botocore.model
import botocore.serialize
import botocore.validate
import googleapiclient
from botocore.loaders import Loader

AWS_CONTENT_TYPE = "application/x-amz-json-1.1"


class ModelViolation(Exception):
    """A request or answer the published model does not allow."""


# --- AWS KMS -------------------------------------------------------------------------------------------

@functools.cache
def aws_model() -> dict:
    return Loader().load_service_model("kms", "service-2")


@functools.cache
def _aws_service_model() -> botocore.model.ServiceModel:
    return botocore.model.ServiceModel(aws_model(), service_name="kms")


def check_aws_request(method: str, path: str, headers, body: bytes) -> dict:
    """The request's JSON input after every check against the model; raises ModelViolation."""
    model = aws_model()
    prefix, _, operation = str(headers.get("X-Amz-Target", "")).partition(".")
    if prefix != model["metadata"]["targetPrefix"] or operation not in model["operations"]:
        raise ModelViolation(f"X-Amz-Target {headers.get('X-Amz-Target')!r} is no KMS operation")
    http = model["operations"][operation]["http"]
    if (method, path) != (http["method"], http["requestUri"]):
        raise ModelViolation(f"{operation} is {http['method']} {http['requestUri']}, not {method} {path}")
    if headers.get("Content-Type") != AWS_CONTENT_TYPE:
        raise ModelViolation(f"Content-Type {headers.get('Content-Type')!r} is not {AWS_CONTENT_TYPE}")
    try:
        params = json.loads(body)
    except ValueError:
        raise ModelViolation("the body is not JSON") from None
    check_aws_input(operation, params)
    return params


def check_aws_input(operation: str, params: object) -> None:
    """`params` (JSON wire form) against the operation's input shape, by our reading and by botocore's."""
    shape_name = aws_model()["operations"][operation]["input"]["shape"]
    check_aws_value(shape_name, params, operation)
    operation_model = _aws_service_model().operation_model(operation)
    python_params = _aws_wire_to_python(shape_name, params)
    try:
        botocore.validate.validate_parameters(python_params, operation_model.input_shape)
    except botocore.exceptions.ParamValidationError as error:
        raise ModelViolation(f"botocore refuses {operation}'s input: {error}") from None
    serialized = botocore.serialize.create_serializer("json").serialize_to_request(python_params, operation_model)
    if json.loads(serialized["body"]) != params:
        raise ModelViolation(f"botocore serializes {operation}'s input differently: {serialized['body']!r}")
    if serialized["headers"]["X-Amz-Target"] != f"TrentService.{operation}":
        raise ModelViolation("botocore names another target")


def check_aws_output(operation: str, answer: object) -> None:
    check_aws_value(aws_model()["operations"][operation]["output"]["shape"], answer, f"{operation} output")


def check_aws_value(shape_name: str, value: object, where: str) -> None:
    """A JSON-protocol value (blobs base64, timestamps epoch seconds) against a shape; ModelViolation."""
    shape = aws_model()["shapes"][shape_name]
    kind = shape["type"]
    if kind == "structure":
        _check_aws_structure(shape, value, where)
    elif kind == "list":
        _require(isinstance(value, list), where, "a list")
        _check_length(shape, len(value), where)
        for index, item in enumerate(value):
            check_aws_value(shape["member"]["shape"], item, f"{where}[{index}]")
    elif kind == "string":
        _require(isinstance(value, str), where, "a string")
        _require(value in shape.get("enum", [value]), where, f"one of {shape.get('enum')}")
        _check_length(shape, len(value), where)
    elif kind == "blob":
        _require(isinstance(value, str), where, "base64 text")
        try:
            decoded = base64.b64decode(value, validate=True)
        except binascii.Error:
            raise ModelViolation(f"{where}: not base64") from None
        _check_length(shape, len(decoded), where)
    elif kind in ("integer", "long"):
        _require(isinstance(value, int) and not isinstance(value, bool), where, "an integer")
        _check_length(shape, value, where)
    elif kind == "boolean":
        _require(isinstance(value, bool), where, "a boolean")
    elif kind == "timestamp":
        _require(isinstance(value, int | float) and not isinstance(value, bool), where, "epoch seconds")
    else:
        raise ModelViolation(f"{where}: the checker does not know shape type {kind}")


def _check_aws_structure(shape: dict, value: object, where: str) -> None:
    _require(isinstance(value, dict), where, "an object")
    unknown = set(value) - set(shape["members"])
    if unknown:
        raise ModelViolation(f"{where}: members {sorted(unknown)} are not in the shape")
    missing = set(shape.get("required", [])) - set(value)
    if missing:
        raise ModelViolation(f"{where}: required members {sorted(missing)} are missing")
    for name, item in value.items():
        check_aws_value(shape["members"][name]["shape"], item, f"{where}.{name}")


def _check_length(shape: dict, size: int, where: str) -> None:
    if size < shape.get("min", size) or size > shape.get("max", size):
        raise ModelViolation(f"{where}: {size} is outside {shape.get('min')}..{shape.get('max')}")


def _require(condition: bool, where: str, what: str) -> None:
    if not condition:
        raise ModelViolation(f"{where}: must be {what}")


def _aws_wire_to_python(shape_name: str, value: object) -> object:
    """The JSON wire value as botocore's callers pass it (blobs as bytes), to hand to botocore."""
    shape = aws_model()["shapes"][shape_name]
    if shape["type"] == "structure":
        return {name: _aws_wire_to_python(shape["members"][name]["shape"], item) for name, item in value.items()}
    if shape["type"] == "list":
        return [_aws_wire_to_python(shape["member"]["shape"], item) for item in value]
    if shape["type"] == "blob":
        return base64.b64decode(value)
    return value


# --- Google Cloud KMS ----------------------------------------------------------------------------------

DISCOVERY_PATH = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents" / "cloudkms.v1.json"
# Stated in the method's description rather than in the schema ("CryptoKey.purpose and
# CryptoKey.version_template.algorithm are required."); the tests check the sentence is still there.
CREATE_METHOD = "cloudkms.projects.locations.keyRings.cryptoKeys.create"
CREATE_REQUIRES = (("purpose",), ("versionTemplate", "algorithm"))


@functools.cache
def discovery() -> dict:
    return json.loads(DISCOVERY_PATH.read_text())


@functools.cache
def gcp_methods() -> dict[str, dict]:
    """Every method of the document by id."""
    found: dict[str, dict] = {}

    def walk(resource: dict) -> None:
        for method in resource.get("methods", {}).values():
            found[method["id"]] = method
        for child in resource.get("resources", {}).values():
            walk(child)

    walk(discovery())
    return found


def check_gcp_request(http_method: str, path: str, query: dict[str, list[str]], body: object) -> tuple[str, dict]:
    """The method id and path parameters of a request, after every check; raises ModelViolation."""
    method_id, names = _gcp_method_for(http_method, path)
    method = gcp_methods()[method_id]
    _check_gcp_query(method, query)
    if "request" in method:
        check_gcp_value(method["request"], body, f"{method_id} body", request=True)
    elif body is not None:
        raise ModelViolation(f"{method_id} takes no body")
    if method_id == CREATE_METHOD:
        for member_path in CREATE_REQUIRES:
            value = body
            for member in member_path:
                value = value.get(member) if isinstance(value, dict) else None
            if value is None:
                raise ModelViolation(f"{method_id}: {'.'.join(member_path)} is required")
    return method_id, names


def check_gcp_response(method_id: str, answer: object) -> None:
    check_gcp_value(gcp_methods()[method_id]["response"], answer, f"{method_id} answer", request=False)


def _gcp_method_for(http_method: str, path: str) -> tuple[str, dict]:
    matches = []
    for method_id, method in gcp_methods().items():
        if method["httpMethod"] != http_method:
            continue
        names = _match_template(method, path.lstrip("/"))
        if names is not None:
            matches.append((method_id, names))
    if len(matches) != 1:
        raise ModelViolation(f"{http_method} {path} matches {len(matches)} methods of the document")
    return matches[0]


def _match_template(method: dict, path: str) -> dict | None:
    pattern = re.sub(r"\\\{\\\+?(\w+)\\\}", r"(?P<\1>.+)", re.escape(method["path"]))
    match = re.fullmatch(pattern, path)
    if not match:
        return None
    names = match.groupdict()
    for name, value in names.items():
        parameter = method["parameters"][name]
        if parameter.get("location") != "path" or not re.search(parameter.get("pattern", ".*"), value):
            return None
    return names


def _check_gcp_query(method: dict, query: dict[str, list[str]]) -> None:
    declared = {**discovery()["parameters"], **method.get("parameters", {})}
    for name, values in query.items():
        parameter = declared.get(name)
        if parameter is None or parameter.get("location") != "query":
            raise ModelViolation(f"{method['id']}: query parameter {name} is not declared")
        if len(values) != 1 and not parameter.get("repeated"):
            raise ModelViolation(f"{method['id']}: {name} given {len(values)} times")
        for value in values:
            _check_gcp_scalar(parameter, value, f"{method['id']}?{name}", query=True)
    for name, parameter in method.get("parameters", {}).items():
        is_required = parameter.get("required") or parameter.get("description", "").startswith("Required.")
        if is_required and parameter["location"] == "query" and name not in query:
            raise ModelViolation(f"{method['id']}: {name} is required")


def check_gcp_value(schema: dict, value: object, where: str, *, request: bool) -> None:
    """A JSON value against a discovery schema (or $ref); output-only fields refused in requests."""
    if "$ref" in schema:
        schema = discovery()["schemas"][schema["$ref"]]
    kind = schema.get("type")
    if kind == "object" and "properties" in schema:
        _require(isinstance(value, dict), where, "an object")
        for name, item in value.items():
            if name not in schema["properties"]:
                raise ModelViolation(f"{where}: {name} is not a property of {schema.get('id', 'the object')}")
            prop = schema["properties"][name]
            is_output_only = prop.get("readOnly") or prop.get("description", "").startswith("Output only.")
            if request and is_output_only:
                raise ModelViolation(f"{where}.{name} is output only")
            check_gcp_value(prop, item, f"{where}.{name}", request=request)
    elif kind == "object":
        _require(isinstance(value, dict), where, "an object")
        for name, item in value.items():
            check_gcp_value(schema.get("additionalProperties", {"type": "any"}), item, f"{where}.{name}",
                            request=request)
    elif kind == "array":
        _require(isinstance(value, list), where, "an array")
        for index, item in enumerate(value):
            check_gcp_value(schema["items"], item, f"{where}[{index}]", request=request)
    elif kind != "any":
        _check_gcp_scalar(schema, value, where, query=False)


def _check_gcp_scalar(schema: dict, value: object, where: str, *, query: bool) -> None:
    kind, form = schema.get("type"), schema.get("format")
    if kind == "boolean":
        _require(value in ("true", "false") if query else isinstance(value, bool), where, "a boolean")
    elif kind == "integer" or form in ("int64", "uint64"):
        is_digits = isinstance(value, str) and re.fullmatch(r"-?\d+", value) is not None
        is_number = isinstance(value, int) and not isinstance(value, bool)
        # int64 travels as a JSON string (proto3 JSON mapping), int32 as a number; a query parameter is text.
        _require(is_digits if query or kind == "string" else is_number, where, f"an integer ({form})")
    elif kind == "number":
        _require(isinstance(value, int | float) and not isinstance(value, bool), where, "a number")
    elif kind == "string":
        _require(isinstance(value, str), where, "a string")
        _require(value in schema.get("enum", [value]), where, f"one of {schema.get('enum')}")
        _check_gcp_format(form, value, where)
    else:
        raise ModelViolation(f"{where}: the checker does not know type {kind}")


def _check_gcp_format(form: str | None, value: str, where: str) -> None:
    if form == "byte":
        try:
            base64.b64decode(value.replace("-", "+").replace("_", "/"), validate=True)
        except binascii.Error:
            raise ModelViolation(f"{where}: not base64") from None
    elif form == "google-datetime":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ModelViolation(f"{where}: not an RFC 3339 time") from None
    elif form == "google-duration":
        _require(re.fullmatch(r"-?\d+(\.\d+)?s", value) is not None, where, "a duration like 3.5s")
