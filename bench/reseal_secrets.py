"""How long `manage.py reseal_secrets` takes: generator private keys and webhook secrets re-encrypted under
a new KEY_ENCRYPTION_KEY id, on PostgreSQL, each row in its own transaction.

Seeds `--keys` sealed private keys (generators of four keys each, three retired) and `--webhooks` endpoints
(ten per organization) under a plain, pre-ring KEY_ENCRYPTION_KEY, adds a new key in front, then times
the dry run, the run, and a second run (nothing left to do). The database is one of its own, dropped and
created again on each run (never `test` or `bench`).

    .venv/bin/python bench/reseal_secrets.py [--keys 10000] [--webhooks 1000]
        [--database-url postgres://postgres@127.0.0.1:5432/bench_reseal]
"""

import argparse
import io
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.dashboard_pages import set_up_django

OLD_SECRET = "bench-key-encryption-key-0123456789abcdef"  # bench/serve.py's, as a deployment before rings
NEW_RING = f"k2:bench-new-key-encryption-key-0123456789,{OLD_SECRET}"


def seed(keys: int, webhooks: int) -> None:
    from django.utils import timezone

    from accounts.models import Organization
    from core.keyring import private_key_sealing_ring, webhook_secret_sealing_ring
    from core.sealing import seal
    from generators.models import Generator, GeneratorKey
    from webhooks.models import WebhookEndpoint
    from webhooks.services import endpoints_snapshot_refresh

    key_ring, hook_ring = private_key_sealing_ring(), webhook_secret_sealing_ring()
    org = Organization.objects.create(name="reseal bench", plan="scale")
    generators = Generator.objects.bulk_create(
        [Generator(org=org, name=f"g{n}", mode="server", supported_formats=["image"]) for n in range(keys // 4)])
    rows, now = [], timezone.now()
    for generator in generators:
        for n in range(4):
            kid = uuid.uuid4().hex[:16]
            blob = seal(os.urandom(32), key_ring.newest_key, key_id=key_ring.newest_id,
                        associated_data=f"generator-key:{generator.pk}:{kid}".encode())
            rows.append(GeneratorKey(generator=generator, kid=kid, public_key=os.urandom(1952),
                                     encrypted_private_key=blob, retired_at=None if n == 3 else now))
    GeneratorKey.objects.bulk_create(rows, batch_size=1000)
    for o in range(webhooks // 10):
        hook_org = Organization.objects.create(name=f"hooks {o}", plan="growth")
        endpoints = [WebhookEndpoint(id=uuid.uuid4(), org=hook_org, url="https://93.184.216.34/hook",
                                     events=["record.created"]) for _ in range(10)]
        for endpoint in endpoints:
            secret = f"whsec_{os.urandom(32).hex()}".encode()
            endpoint.encrypted_secret = seal(secret, hook_ring.newest_key, key_id=hook_ring.newest_id,
                                             associated_data=f"webhook-secret:{endpoint.pk}".encode())
        WebhookEndpoint.objects.bulk_create(endpoints)
        endpoints_snapshot_refresh(hook_org.pk)


def timed_run(*args: str) -> tuple[float, str]:
    from django.core.management import call_command

    out = io.StringIO()
    started = time.perf_counter()
    call_command("reseal_secrets", *args, stdout=out)
    return time.perf_counter() - started, out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--webhooks", type=int, default=1_000)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_reseal")
    options = parser.parse_args()
    set_up_django(options.database_url)
    from django.conf import settings

    seed(options.keys, options.webhooks)
    settings.KEY_ENCRYPTION_KEY = NEW_RING
    rows = options.keys + options.webhooks
    print(f"{options.keys} private keys + {options.webhooks} webhook secrets under `legacy`; newest id now k2")
    for label, args in (("dry run", ("--dry-run",)), ("reseal", ()), ("second run", ())):
        seconds, output = timed_run(*args)
        print(f"{label:<11} {seconds:7.2f} s  {rows / seconds:8.0f} rows/s")
        for line in output.splitlines()[1:]:
            print(f"            {line}")


if __name__ == "__main__":
    main()
