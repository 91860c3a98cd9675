"""Authenticated GET /v1/auth/me a second, with an API key and with a session JWT.

Production shape: gunicorn with 2 gthread workers (keep-alive), PostgreSQL, Redis (rate limits, JWT blocklist),
DEBUG off. Credentials rotate over organizations on the Scale plan so the per-plan rate limiter
runs on every request without ever answering 429.

    .venv/bin/python bench/auth.py [--duration 10] [--connections 8] [--worker-class gthread|sync]
"""

import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

ORGS = 20


def create_credentials(env: dict[str, str]) -> tuple[list[str], list[str]]:
    """One Scale-plan organization per credential pair: (API keys, session JWTs)."""
    os.environ.update(env)
    import django

    django.setup()
    from accounts.models import Organization
    from accounts.services import api_key_create
    from accounts.services.auth import session_token_for
    from tests.factories import make_user

    run = uuid.uuid4().hex[:8]  # fresh rows each run; earlier runs' rows stay (a throwaway database)
    keys, tokens = [], []
    for index in range(ORGS):
        org = Organization.objects.create(name=f"bench-auth-{run}-{index}", plan="scale")
        user = make_user(org=org, email=f"bench-auth-{run}-{index}@example.com")
        keys.append(api_key_create(org=org, created_by=user, name="bench").key)
        tokens.append(session_token_for(user))
    return keys, tokens


def main() -> None:
    args = serve.server_arguments(__doc__).parse_args()
    env = serve.prepared_env(args)
    keys, tokens = create_credentials(env)

    print(f"{serve.describe(args, env)}; {ORGS} Scale-plan organizations\n")
    print("| credential | requests/s | p50 ms | p99 ms | non-2xx |")
    print("|---|---|---|---|---|")
    with serve.gunicorn(env, workers=args.workers, worker_class=args.worker_class, threads=args.threads) as url:
        for label, values in (("API key", keys), ("session JWT", tokens)):
            lua = serve.rotating_lua("GET", "/v1/auth/me", [(f"Bearer {v}", None) for v in values])
            serve.wrk(url, lua=lua, duration=2, connections=args.connections)  # warm-up
            stats = serve.wrk(url, lua=lua, duration=args.duration, connections=args.connections)
            print(f"| {label} | {stats['requests_per_second']:.0f} | {stats['p50_ms']:.2f} | {stats['p99_ms']:.2f} "
                  f"| {stats['non_2xx']} |")


if __name__ == "__main__":
    main()
