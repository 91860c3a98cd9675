"""Server time and queries of every dashboard page, and of the staff admin's big lists, with a full organization.

Seeds one Scale-plan organization with 10,000 records, 1,000 audit events, members, keys, generators and
webhook deliveries (bulk inserts, a few seconds), logs its owner in with a session, then renders every
URL of the `dashboard` namespace, found by walking the URL resolver (pages added later are included
without touching this script): `/dashboard/*` as the owner, the public forms as a visitor. Without that
namespace it says so and times the admin changelists instead. Each page is rendered in process with
Django's test client (no network, no server): the time is the request's time in Django, middleware to
response. A staff superuser then times the admin changelists of organizations, records and audit events
(plain, searched and filtered).

Pages whose path takes an id (a generator, a webhook endpoint, a member's keys, a confirmation page) are
rendered with ids of the seeded rows (`sample_arguments`); a route that answers GET with 405 (a form's
POST target) is listed as not timed, and so is a route with an argument this script has no id for, so a
new page is noticed rather than silently skipped.

The database is a fresh SQLite file in /tmp by default; a PostgreSQL URL works too, naming a database of
its own that each run drops and creates again (never `test` or `bench`: the suite and the other benchmarks
use those, and the script refuses them).

    .venv/bin/python bench/dashboard_pages.py [--runs 20] [--records 10000] [--events 1000]
        [--database-url postgres://postgres@127.0.0.1:5432/bench_pages]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

DEFAULT_DATABASE_URL = "sqlite:////tmp/bench-dashboard-pages.sqlite3"
RESERVED_DATABASES = {"test", "bench"}  # the CI suite's and the other benchmarks' PostgreSQL databases
ADMIN_PAGES = [
    ("organizations", "/admin/accounts/organization/"),
    ("organizations, searched", "/admin/accounts/organization/?q=owner%40pages.example"),
    ("records", "/admin/provenance/record/"),
    ("records, searched", "/admin/provenance/record/?q=wm-4242"),
    ("records, filtered", "/admin/provenance/record/?format=png"),
    ("records, page 50", "/admin/provenance/record/?p=50"),
    ("audit events", "/admin/audit/auditevent/"),
    ("audit events, filtered", "/admin/audit/auditevent/?type__exact=verify"),
    ("audit events, searched", "/admin/audit/auditevent/?q=gen-7"),
]


def set_up_django(database_url: str) -> None:
    """Point Django at a fresh (SQLite) or existing (PostgreSQL) benchmark database and migrate it."""
    parsed = urlparse(database_url)
    if parsed.scheme.startswith("postgres"):
        name = parsed.path.lstrip("/")
        if name in RESERVED_DATABASES:
            raise SystemExit(f"Use a database of its own, not {name!r} (the tests and other benchmarks use it).")
        _recreate_postgres_database(database_url, name)
    elif parsed.scheme == "sqlite":
        Path(parsed.path[1:] if parsed.path.startswith("//") else parsed.path).unlink(missing_ok=True)
    serve.django_in_process(serve.server_env(database_url, redis_url=None))
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _recreate_postgres_database(database_url: str, name: str) -> None:
    """Every run starts from an empty database of its own: drop it (if there) and create it."""
    import psycopg

    with psycopg.connect(database_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def seed(records: int, events: int):
    """One Scale-plan organization with `records` records and `events` audit events.

    Returns its owner and, per `dashboard:` route name with arguments, the arguments of a seeded row."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from audit.models import AuditEvent
    from provenance.models import Record
    from tests import factories
    from webhooks.models import WebhookDelivery

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # seeding, not PBKDF2
    org = factories.make_org(plan="scale", name="Pages Bench Labs")
    owner = factories.make_user(org=org, email="owner@pages.example")
    members = []
    for index in range(5):
        members.append(factories.make_user(org=org, role="user"))
        factories.make_api_key(org=org, name=f"key-{index}")
        factories.make_personal_key(user=members[-1])
        factories.make_personal_key(user=owner)
        invite, invite_token = factories.make_invite(org=org, inviter=owner)
    generators = [factories.make_generator(org=org, name=f"gen-{index}") for index in range(10)]
    keys = [generator.keys.get() for generator in generators]
    now = timezone.now()
    Record.objects.bulk_create(
        (Record(org=org, generator=generators[i % 10], key=keys[i % 10], model="bench-model",
                watermark_id=f"wm-{i}", content_hash=f"sha3-256:{i:064x}", signature=b"\x00" * 64,
                format=("png", "jpeg", "wav", "mp4")[i % 4], signed_at=now - timedelta(minutes=i))
         for i in range(records)), batch_size=1000)
    AuditEvent.objects.bulk_create(
        (AuditEvent(org=org, type=("sign", "verify")[i % 2], timestamp=now - timedelta(minutes=i),
                    metadata={"generator_id": str(generators[i % 10].pk), "generator": f"gen-{i % 10}"})
         for i in range(events)), batch_size=1000)
    endpoint, _ = factories.make_webhook(org=org)
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(org=org, endpoint=endpoint, event="record.created", payload="{}", status="success",
                        response_code=200, created_at=now - timedelta(minutes=i)) for i in range(200))
    factories.set_usage(org, min(records, 2**31 - 1))
    for index in range(20):  # other customers, so that lists are really scoped
        factories.make_user(org=factories.make_org(name=f"Other {index}"))
    return owner, sample_arguments(owner=owner, member=members[0], generator=generators[0], endpoint=endpoint,
                                   invite=invite, invite_token=invite_token)


def _owner_made_rows(owner, generator) -> dict[str, dict]:
    """A key the owner made, a file the owner signed on the dashboard, and the owner's plan request."""
    from accounts.services import api_key_create
    from billing.services import plan_request_create
    from dashboard.services import SignRequest, signed_file_create
    from tests.media import photo_bytes

    key = api_key_create(org=owner.org, created_by=owner, name="made-by-owner").api_key
    signed = signed_file_create(org=owner.org, user=owner, request=SignRequest(
        generator_id=str(generator.pk), model="bench-model", data=photo_bytes("astronaut", "png"),
        declared_family=None, upload_name="astronaut.png"))
    wanted = plan_request_create(org=owner.org, actor=owner, plan="enterprise", billing_interval="annual")
    return {"api-key-created": {"key_id": key.pk}, "signed": {"file_id": signed.pk},
            "signed-download": {"file_id": signed.pk}, "plan-request-cancel": {"request_id": wanted.pk}}


def sample_arguments(*, owner, member, generator, endpoint, invite, invite_token: str) -> dict[str, dict]:
    """Arguments of seeded rows for each `dashboard:` route that takes some."""
    from accounts.selectors import organization_api_keys, personal_api_keys

    org_key = organization_api_keys(org=owner.org)[0]
    delivery = endpoint.deliveries.order_by("-created_at").first()
    member_key = personal_api_keys(org=owner.org, user=member)[0]
    return {
        "generator": {"generator_id": generator.pk}, "generator-rotate": {"generator_id": generator.pk},
        "generator-revoke": {"generator_id": generator.pk},
        "api-key-revoke": {"key_id": org_key.pk},
        "personal-key-revoke": {"key_id": personal_api_keys(org=owner.org, user=owner)[0].pk},
        "member-role": {"user_id": member.pk}, "member-remove": {"user_id": member.pk},
        "member-keys": {"user_id": member.pk},
        "member-key-revoke": {"user_id": member.pk, "key_id": member_key.pk},
        "invite-cancel": {"invite_id": invite.pk}, "accept-invite": {"token": invite_token},
        "webhook": {"webhook_id": endpoint.pk}, "webhook-edit": {"webhook_id": endpoint.pk},
        "webhook-status": {"webhook_id": endpoint.pk}, "webhook-delete": {"webhook_id": endpoint.pk},
        "webhook-retry": {"webhook_id": endpoint.pk, "delivery_id": delivery.pk},
        "webhook-created": {"webhook_id": endpoint.pk},
        **_owner_made_rows(owner, generator),
    }


def dashboard_urls(arguments: dict[str, dict]) -> tuple[list[str], list[str]]:
    """Every `dashboard:` URL (nested namespaces included), with `arguments[name]` for routes taking some.

    Returns the paths, and the names of routes with arguments `arguments` has no values for."""
    from django.urls import URLPattern, URLResolver, get_resolver, reverse

    def walk(patterns, namespace: str | None):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                if entry.pattern.regex.groups:
                    continue  # a prefix with an argument
                inner = ":".join(filter(None, (namespace, entry.namespace))) or None
                yield from walk(entry.url_patterns, inner)
            elif isinstance(entry, URLPattern) and entry.name and namespace and namespace.split(":")[0] == "dashboard":
                yield f"{namespace}:{entry.name}", bool(entry.pattern.regex.groups)

    paths, missing = [], []
    for name, takes_arguments in walk(get_resolver().url_patterns, None):
        short = name.rsplit(":", 1)[1]
        if takes_arguments and short not in arguments:
            missing.append(name)
            continue
        path = reverse(name, kwargs=arguments.get(short) if takes_arguments else None)
        if path not in paths:
            paths.append(path)
    return paths, missing


def time_page(client, path: str, runs: int) -> dict:
    """`runs` renders of `path` after two warm-ups: status, median and max ms, queries of one render."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(2):
        client.get(path)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    queries = len(captured.captured_queries)  # now: the next request clears the connection's log
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
    return {"status": response.status_code, "median": statistics.median(timings), "max": max(timings),
            "queries": queries}


def report(title: str, rows: list[tuple[str, dict]]) -> None:
    print(f"\n{title}\n")
    print("| page | status | median ms | max ms | queries |")
    print("|---|---|---|---|---|")
    for label, row in rows:
        print(f"| `{label}` | {row['status']} | {row['median']:.1f} | {row['max']:.1f} | {row['queries']} |")
    if rows:
        label, slowest = max(rows, key=lambda pair: pair[1]["median"])
        print(f"\nslowest: `{label}`, median {slowest['median']:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1_000)
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    args = parser.parse_args()

    started = time.perf_counter()
    set_up_django(args.database_url)
    owner, arguments = seed(args.records, args.events)
    from django.db import connection
    from django.test import Client

    from accounts.models import User

    print(f"{connection.vendor}, DEBUG off; {args.records:,} records and {args.events:,} audit events in one "
          f"organization; seeded in {time.perf_counter() - started:.1f} s; {args.runs} renders a page")

    staff = Client()
    staff.force_login(User.objects.create_superuser("staff@pages.example", "staff-password"))
    pages, missing = dashboard_urls(arguments)
    if pages:
        owner_client, anonymous = Client(), Client()
        owner_client.force_login(owner)

        def client_for(path: str) -> Client:  # the public forms as a visitor (signed in, /login redirects)
            return owner_client if path.startswith("/dashboard") else anonymous

        post_only = [path for path in pages if client_for(path).get(path).status_code == 405]
        timed = [path for path in pages if path not in post_only]
        report(f"Dashboard pages ({len(timed)} answering GET: /dashboard as the owner, session login; "
               "the public forms as a visitor)",
               [(path, time_page(client_for(path), path, args.runs)) for path in timed])
        print(f"\nnot timed, POST only ({len(post_only)}): {', '.join(post_only)}")
        if missing:
            print(f"not timed, no seeded id for: {', '.join(missing)}")
    else:
        from django.contrib import admin

        print("\nNo `dashboard` URL namespace yet: timing every admin changelist instead.")
        changelists = [f"/admin/{model._meta.app_label}/{model._meta.model_name}/" for model in admin.site._registry]
        report("Admin changelists (staff)", [(path, time_page(staff, path, args.runs)) for path in changelists])
    pages = [*ADMIN_PAGES, ("records of the organization", f"/admin/provenance/record/?org__id__exact={owner.org_id}"),
             ("audit events of the organization", f"/admin/audit/auditevent/?org__id__exact={owner.org_id}")]
    report("Admin lists (staff)", [(f"{label}: {path}", time_page(staff, path, args.runs)) for label, path in pages])


if __name__ == "__main__":
    main()
