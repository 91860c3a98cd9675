"""Authenticated requests a second: an API key on a key route, a session JWT on /v1/auth/me.

/v1/auth/me is a session route (an API key gets 401 there), so the key path is measured on
GET /v1/billing/usage: the key lookup plus the route's one read of the month's usage.

Production shape: gunicorn with 2 gthread workers (keep-alive), PostgreSQL, Redis (rate limits, JWT blocklist),
DEBUG off. Credentials rotate over organizations on the Scale plan so the per-plan rate limiter
runs on every request without ever answering 429.

    .venv/bin/python bench/auth.py [--duration 10] [--connections 8] [--worker-class balanced|gthread|sync]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

ORGS = 20
KEY_ROUTE = "/v1/billing/usage"
SESSION_ROUTE = "/v1/auth/me"


def create_credentials(env: dict[str, str]) -> tuple[list[str], list[str]]:
    """One Scale-plan organization per credential pair: (API keys, session JWTs)."""
    pairs = serve.scale_organizations(env, "bench-auth", ORGS)
    from accounts.services import api_key_create
    from accounts.services.auth import session_token_for

    keys = [api_key_create(org=org, created_by=user, name="bench").key for org, user in pairs]
    return keys, [session_token_for(user) for _, user in pairs]


def main() -> None:
    args = serve.server_arguments(__doc__).parse_args()
    env = serve.prepared_env(args)
    keys, tokens = create_credentials(env)

    print(f"{serve.describe(args, env)}; {ORGS} Scale-plan organizations\n")
    print("| credential | route | requests/s | p50 ms | p99 ms | non-2xx | every run, req/s |")
    print("|---|---|---|---|---|---|---|")
    for label, path, values in (("API key", KEY_ROUTE, keys), ("session JWT", SESSION_ROUTE, tokens)):
        lua = serve.rotating_lua("GET", path, [(f"Bearer {v}", None) for v in values])
        stats = serve.measure(env, lua, args)
        print(f"| {label} | `GET {path}` | {stats['requests_per_second']:.0f} | {stats['p50_ms']:.2f} "
              f"| {stats['p99_ms']:.2f} | {stats['non_2xx']} | {stats['all_runs']} |")


if __name__ == "__main__":
    main()
