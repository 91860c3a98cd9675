"""reseal_secrets while the service signs, and two runs at once: PostgreSQL row locks (PostgreSQL only)."""

import io
import re
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connection, connections
from rest_framework.test import APIClient

from generators.models import GeneratorKey
from provenance.models import Record
from record_format import crypto
from record_format.payload import signed_payload_bytes
from tests import factories
from tests.key_rings import NEW_ONLY, OLD_SECRET, ROTATED, private_key_ids

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]
TEXT = ("A paragraph of generated text that the service signs while its keys are being resealed. " * 4).encode()


@pytest.fixture(autouse=True)
def _deployed_before_rings(settings):
    settings.KEY_ENCRYPTION_KEY = OLD_SECRET


@pytest.fixture
def generators(org):
    """Three server-managed generators, each rotated twice: nine sealed private keys, three current."""
    made = [factories.make_generator(org=org, name=f"g{n}") for n in range(3)]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    for generator in made:
        for _ in range(2):
            assert client.post(f"/v1/generators/{generator.pk}/rotate", {}, format="json").status_code == 200
    return made


def _signer(key: str, generator_id: str, signed: list[tuple[float, float, int]], stop: threading.Event,
            start: threading.Barrier):
    """Sign until told to stop (three times at least), noting when each request ran and its status."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    start.wait()
    try:
        while not stop.is_set() or len(signed) < 3:
            began = time.monotonic()
            response = client.post("/v1/sign", {"content": io.BytesIO(TEXT), "model": "m",
                                                "generator_id": generator_id}, format="multipart")
            signed.append((began, time.monotonic(), response.status_code))
    finally:
        connections.close_all()


def test_signing_carries_on_while_every_key_is_resealed(settings, org, generators):
    settings.KEY_ENCRYPTION_KEY = ROTATED
    key = factories.make_api_key(org=org)
    stop, start = threading.Event(), threading.Barrier(len(generators) + 1)
    signed: list[list[tuple[float, float, int]]] = [[] for _ in generators]
    threads = [threading.Thread(target=_signer, args=(key, str(g.pk), signed[n], stop, start))
               for n, g in enumerate(generators)]
    for thread in threads:
        thread.start()
    start.wait()
    output = io.StringIO()
    began = time.monotonic()
    call_command("reseal_secrets", "--batch-size", "1", stdout=output)
    ended = time.monotonic()
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    assert "generator private keys: 9 resealed" in output.getvalue()
    requests = [request for signer in signed for request in signer]
    assert all(status == 201 for _, _, status in requests), requests
    assert any(sent < ended and answered > began for sent, answered, _ in requests)  # signing ran during the reseal
    assert private_key_ids() == ["k2"] * 9
    for record in Record.objects.select_related("key"):
        assert crypto.verify(bytes(record.key.public_key), signed_payload_bytes(**record.signed_payload),
                             bytes(record.signature))
    settings.KEY_ENCRYPTION_KEY = NEW_ONLY
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    for generator in generators:
        assert client.post("/v1/sign", {"content": io.BytesIO(TEXT), "model": "m", "generator_id": str(generator.pk)},
                           format="multipart").status_code == 201


def test_two_runs_at_once_reseal_each_key_exactly_once(settings, generators):
    settings.KEY_ENCRYPTION_KEY = ROTATED
    before = dict(GeneratorKey.objects.values_list("pk", "encrypted_private_key"))
    outputs = [io.StringIO(), io.StringIO()]
    start = threading.Barrier(2)

    def run(output: io.StringIO) -> None:
        start.wait()
        try:
            call_command("reseal_secrets", "--batch-size", "1", stdout=output)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(output,)) for output in outputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    counts = [re.search(r"generator private keys: (\d+) resealed, (\d+) already", o.getvalue()).groups()
              for o in outputs]
    assert sum(int(resealed) for resealed, _ in counts) == 9  # a row the other run took is "already under k2"
    assert all(int(resealed) + int(already) == 9 for resealed, already in counts)
    after = dict(GeneratorKey.objects.values_list("pk", "encrypted_private_key"))
    assert private_key_ids() == ["k2"] * 9 and all(bytes(after[pk]) != bytes(before[pk]) for pk in before)
