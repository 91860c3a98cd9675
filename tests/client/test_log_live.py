"""The log commands against the service's own transparency log (live_server, the sequencer run in the
test). Skipped while the `transparency` app is not installed (it is built on another branch)."""

import json

import pytest
from django.conf import settings
from django.core.management import call_command

from svc_client import record_sign, verify_offline
from svc_client.checkpoint import log_keys_from_document
from svc_client.cli import main

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif("transparency" not in settings.INSTALLED_APPS, reason="no transparency log yet")]


def _sequence() -> None:
    call_command("log_sequencer", "--once", stdout=open("/dev/null", "w"))  # noqa: SIM115


def test_records_are_proved_in_the_log_and_the_monitor_follows_it(service, client_generator, samples, tmp_path,
                                                                    capsys):
    generator_id, key = client_generator
    url = service.transport.base_url
    created = [service.record_submit(record_sign(key=key, generator_id=generator_id, model="m", data=data))
               for data in list(samples.values())[:3]]
    _sequence()
    assert main(["-q", "--url", url, "log", "pin", "-o", str(tmp_path / "log-keys.json")]) == 0
    monitor = ["-q", "--url", url, "log", "monitor", "--log-keys", str(tmp_path / "log-keys.json"),
               "--state", str(tmp_path / "state.json"), "--count", "1"]
    assert main(monitor) == 0

    data = samples["jpeg"]
    record = dict(service.record_get(created[0].record_id))
    assert record["log"]["status"] == "integrated"
    keys = log_keys_from_document(json.loads((tmp_path / "log-keys.json").read_text()))
    result = verify_offline(data, record, service.keys_pinned(generator_id), log_keys=keys)
    assert result.authentic, result.reason

    for data in list(samples.values())[3:6]:
        service.record_submit(record_sign(key=key, generator_id=generator_id, model="m", data=data))
    _sequence()
    assert main(monitor) == 0
    (tmp_path / "checkpoint.txt").write_text(service.log_checkpoint())
    (tmp_path / "record.json").write_text(json.dumps(record))
    capsys.readouterr()
    code = main(["--url", url, "log", "verify", str(tmp_path / "record.json"), "--log-keys",
                 str(tmp_path / "log-keys.json"), "--checkpoint", str(tmp_path / "checkpoint.txt")])
    assert code == 0, capsys.readouterr()
