"""What `manage.py purge_expired` deletes: each app registers its own purges when it is ready.

core imports no app, so the command cannot name the apps' tables; an app that keeps rows which expire
registers a function that deletes them and returns how many went, under a plural noun for the report
("email tokens"). Purges run in registration order (the order of INSTALLED_APPS).
"""

from collections.abc import Callable

Purge = Callable[[], int]

_purges: dict[str, Purge] = {}


def register(what: str, purge: Purge) -> None:
    """Have `purge_expired` call `purge` and report its count as `what`. Registering a name again replaces it."""
    _purges[what] = purge


def purge_all() -> dict[str, int]:
    """Run every registered purge; returns each one's count by name."""
    return {what: purge() for what, purge in _purges.items()}
