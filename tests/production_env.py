"""The environment of a test that serves the app from another process: production's settings on a database of
the test's own."""

import os


def production_env(name: str, database_url: str, **settings: str) -> dict[str, str]:
    """This process's environment with DEBUG off, secrets of the test's own (named after `name`), `database_url`,
    no Redis and WARNING logs; `settings` add variables or override these."""
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="false", ALLOWED_HOSTS="127.0.0.1",
               SECRET_KEY=f"{name}-test-secret-key-0123456789-abcdefghijklmnop",
               KEY_ENCRYPTION_KEY=f"{name}-test-kek", TOKEN_SIGNING_KEY=f"{name}-test-tsk",
               LOG_SIGNING_KEY=f"{name}-test-lsk", DATABASE_URL=database_url, LOG_LEVEL="WARNING")
    env.update(settings)
    return env
