"""A string field takes a JSON string and nothing else: never a number, boolean, list or object.

DRF's CharField stores a number's text (`{"org_name": 0}` made an organization named "0") and its
UUIDField takes an integer as a UUID; core/validation.py's strict fields refuse both. Every field
that takes text, in every serializer of every app, at any depth, is walked here.
"""

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from rest_framework import serializers as drf

from accounts.models import Organization
from core.validation import NOT_A_STRING, StrictString

PROJECT = Path(__file__).resolve().parents[2]
SERIALIZER_MODULES = sorted(path.parent.name for path in PROJECT.glob("*/serializers.py"))
TEXT_FIELDS = (drf.CharField, drf.UUIDField, drf.ChoiceField)
NOT_STRINGS = [0, 12.5, True, ["a"], {"a": "b"}]


def _serializer_classes():
    for app in SERIALIZER_MODULES:
        module = importlib.import_module(f"{app}.serializers")
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, drf.Serializer) and value.__module__ == module.__name__:
                yield f"{app}.{name}", value


def _text_fields(field, names=()):
    """(input keys, field) for every text-taking field under `field`; a list's step is the index 0."""
    if isinstance(field, drf.ListSerializer):
        yield from _text_fields(field.child, (*names, 0))
    elif isinstance(field, drf.Serializer):
        for name, child in field.fields.items():
            if not child.read_only:
                yield from _text_fields(child, (*names, name))
    elif isinstance(field, drf.ListField):
        yield from _text_fields(field.child, (*names, 0))
    elif isinstance(field, drf.DictField):
        yield from _text_fields(field.child, (*names, "key"))
    elif isinstance(field, TEXT_FIELDS):
        yield names, field


def _data_with(names, value):
    data = value
    for step in reversed(names):
        data = [data] if isinstance(step, int) else {step: data}
    return data


def _error_at(errors, names):
    node = errors
    for step in names:
        if (isinstance(node, list) and isinstance(step, int)) or (isinstance(node, dict) and step in node):
            node = node[step]
        else:
            return None
    return node


CASES = [(f"{label}.{'.'.join(map(str, names))}", cls, names)
         for label, cls in _serializer_classes() for names, _ in _text_fields(cls())]


def test_the_walk_finds_the_string_fields_of_every_input():
    labels = {label for label, _, _ in CASES}
    assert "accounts.RegisterInput.org_name" in labels
    assert "verification.VerifyBatchInput.items.0.token" in labels
    assert "generators.GeneratorRegisterInput.supported_formats.0" in labels
    assert len(CASES) > 100


@pytest.mark.parametrize(("label", "serializer_class", "names"), CASES, ids=[case[0] for case in CASES])
def test_a_string_field_refuses_every_other_json_type(label, serializer_class, names):
    for value in NOT_STRINGS:
        serializer = serializer_class(data=_data_with(names, value))
        assert not serializer.is_valid(), (label, value)
        error = _error_at(serializer.errors, names)
        assert error is not None, (label, value, serializer.errors)
        assert any(str(message) in (NOT_A_STRING, "Not a valid string.") for message in error), (label, value, error)


def test_every_field_that_takes_text_is_strict():
    loose = [label for label, cls in _serializer_classes() for _, field in _text_fields(cls())
             if not isinstance(field, StrictString)]
    assert loose == []


@pytest.mark.parametrize("app", SERIALIZER_MODULES)
def test_serializers_come_from_config_validation(app):
    tree = ast.parse((PROJECT / app / "serializers.py").read_text())
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not any(node.module == "rest_framework" and any(alias.name == "serializers" for alias in node.names)
                   for node in imports)
    assert not any(node.module == "rest_framework.serializers" for node in imports)


@pytest.mark.django_db
@pytest.mark.parametrize("org_name", [0, 1.5, True, ["Acme"], {"name": "Acme"}])
def test_register_refuses_an_organization_name_that_is_not_a_string(api_client, org_name):
    response = api_client.post("/v1/auth/register", {"email": "new@example.com", "password": "correct horse battery",
                                                     "org_name": org_name}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert "org_name" in response.json()["details"]
    assert not Organization.objects.exists()


@pytest.mark.django_db
def test_a_nested_string_field_refuses_a_number(api_client):
    response = api_client.post("/v1/verify/batch", {"items": [{"content": "aGVsbG8=", "token": 7}]}, format="json")
    assert response.status_code == 400
    items = response.json()["details"]["items"]  # DRF names the failing item by its index
    assert (items[0] if isinstance(items, list) else items["0"])["token"] == [NOT_A_STRING]
