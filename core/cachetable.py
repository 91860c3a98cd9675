"""`manage.py migrate` also creates the database cache table, so no deployment step is forgotten.

Without REDIS_URL the default cache is Django's DatabaseCache, whose table Django only makes with
`createcachetable`. A post_migrate hook (not a migration) runs on every `migrate`, so the table
follows the current CACHES even when a deployment drops Redis after its migrations were applied.
"""

from django.core.management import call_command


def create_cache_tables(*, using: str = "default", verbosity: int = 1, **kwargs) -> None:
    """Create the table of every configured DatabaseCache that lacks one (idempotent)."""
    call_command("createcachetable", database=using, verbosity=max(0, verbosity - 1))
