"""A new secret (API key, webhook signing secret) shown once, on a GET page after the POST that made it.

The POST seals the secret into the signed-in person's session (server-side rows, never the URL or a
cookie) under the id of what it belongs to, and redirects; the page takes it out, and the first showing
is the only one: a reload, Back or a bookmark finds it gone and says so. The seal (AES-256-GCM under a
key of its own, bound to the user and the object id) keeps the plaintext out of the session table
even for the seconds between the POST and the page.
"""

import base64
import uuid

from django.http import HttpRequest

from core.keyring import one_time_secret_sealing_ring
from core.sealing import SealedBlobError, seal, unseal

SESSION_KEY = "dashboard_one_time_secrets"
MAX_KEPT = 10  # secrets made in other tabs and never opened do not pile up in the session


def _context(request: HttpRequest, object_id: uuid.UUID) -> bytes:
    return f"{request.user.pk}:{object_id}".encode()


def secret_keep(request: HttpRequest, *, object_id: uuid.UUID, secret: str) -> None:
    """Keep `secret` (sealed) in the session until `secret_take` shows it."""
    ring = one_time_secret_sealing_ring()
    blob = seal(secret.encode(), ring.newest_key, key_id=ring.newest_id,
                associated_data=_context(request, object_id))
    kept = dict(request.session.get(SESSION_KEY, {}))
    kept[str(object_id)] = base64.b64encode(blob).decode()
    request.session[SESSION_KEY] = dict(list(kept.items())[-MAX_KEPT:])


def secret_take(request: HttpRequest, *, object_id: uuid.UUID) -> str | None:
    """The secret kept for `object_id`, removed from the session; None once shown (or never kept here)."""
    kept = dict(request.session.get(SESSION_KEY, {}))
    blob = kept.pop(str(object_id), None)
    if blob is None:
        return None
    request.session[SESSION_KEY] = kept
    try:
        return unseal(base64.b64decode(blob), one_time_secret_sealing_ring().keys,
                      associated_data=_context(request, object_id)).decode()
    except SealedBlobError:
        return None  # sealed under a key since removed from the ring: as good as shown
