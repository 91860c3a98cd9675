"""`Idempotency-Key`: a retried request gets the first one's response instead of being done twice.

On the routes that sign or store (POST /v1/sign, /v1/records, /v1/records/batch, /v1/records/:id/c2pa/embed),
a request with the header runs in one transaction that first claims the key's row, then does the work,
then keeps the response in that row. The row and the records commit together or not at all, so:

- a retry of the same request (same method, path, query, `Prefer` and body, from the same organization)
  within 24 hours gets the stored status, headers and body, plus `Idempotent-Replayed: true`, and nothing
  is signed, stored, counted, audited or announced again;
- the same key with another request is 409 `idempotency_conflict`;
- a duplicate that arrives while the first still runs waits on the row's lock (PostgreSQL: the unique
  index entry of the uncommitted row; SQLite: the database's one writer) and then replays it;
- a process that dies mid-way leaves nothing: its transaction rolls back and its lock goes with the
  connection, so the next retry runs the request afresh.

Kept: every response the route itself gave, 2xx and 4xx (a 400 for a bad signature, 402 over quota, 404).
Not kept, the key left free: requests refused before the route ran (no credential, rate limited, body
too large or unparsable, a malformed key) and answers that say nothing final about the request (5xx,
408, 409, 429), which a retry may fairly get differently. The body digest covers JSON by value (key
order and spacing do not matter) and multipart forms by field, each file by its bytes (the random
boundary of each upload does not matter).

Infrastructure: core imports no app; the caller's organization comes in as `request.org`.
"""

import functools
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from datetime import timedelta

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.http import HttpResponse
from django.utils import timezone
from rest_framework.exceptions import APIException

from core.errors import ApiError, IdempotencyConflict, ValidationFailed
from core.models import IdempotentRequest

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
# Visible ASCII, as Stripe's keys and UUIDs are: no spaces, no control or non-ASCII characters.
KEY_PATTERN = re.compile(r"[\x21-\x7e]{1,%d}\Z" % MAX_KEY_LENGTH)  # noqa: UP031 (a regex's braces)
LIFETIME = timedelta(hours=24)
NOT_KEPT = frozenset({408, 409, 429})  # and every 5xx: the service's or the network's state, not the request's


def idempotent(handler: Callable) -> Callable:
    """Decorate a DRF view's `post`: with an `Idempotency-Key` header it runs at most once per key."""

    @functools.wraps(handler)
    def post(view, request, *args, **kwargs):
        key = request_key(request)
        if key is None:
            return handler(view, request, *args, **kwargs)
        fingerprint = request_fingerprint(request)  # parses the body: a bad one is refused before the claim
        with transaction.atomic():
            entry = _claim(org_id=request.org.pk, key=key, fingerprint=fingerprint)
            if entry.status:
                return _replay(entry, fingerprint)
            response = _run(view, handler, request, args, kwargs)
            if _kept(response.status_code):
                _keep(entry, response)
            else:
                transaction.set_rollback(True)
        return response

    return post


def request_key(request) -> str | None:
    """The request's Idempotency-Key, or None without one. Raises ValidationFailed for a malformed one."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    if not KEY_PATTERN.match(raw):
        raise ValidationFailed(f"{HEADER} must be 1 to {MAX_KEY_LENGTH} visible ASCII characters (a UUID fits).",
                               details={HEADER: [f"1 to {MAX_KEY_LENGTH} characters from ! to ~, no spaces."]})
    return raw


def request_fingerprint(request) -> str:
    """SHA-256 hex of what makes two requests the same one: method, path, query, `Prefer` and the body."""
    digest = hashlib.sha256()
    for text in (request.method, request.path, request.META.get("QUERY_STRING", ""), request.headers.get("Prefer", "")):
        _add(digest, text.encode("utf-8", "surrogatepass"))
    data = request.data
    if hasattr(data, "lists"):  # a multipart form: every field and file, in name order
        for name, values in sorted(data.lists()):
            for value in values:
                _add(digest, name.encode("utf-8", "surrogatepass"))
                _add(digest, _file_digest(value) if isinstance(value, UploadedFile)
                     else b"field:" + str(value).encode("utf-8", "surrogatepass"))
    else:  # JSON, by value
        _add(digest, json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
             .encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def purge_expired() -> int:
    """Delete the responses older than 24 hours (`manage.py purge_expired`): nothing replays them."""
    deleted, _ = IdempotentRequest.objects.filter(created_at__lt=timezone.now() - LIFETIME).delete()
    return deleted


def _add(digest, part: bytes) -> None:
    digest.update(len(part).to_bytes(8, "big"))  # length-prefixed, so no two sequences of parts collide
    digest.update(part)


def _file_digest(upload: UploadedFile) -> bytes:
    file_digest = hashlib.sha256()
    for chunk in upload.chunks():
        file_digest.update(chunk)
    upload.seek(0)  # the route reads it next
    return b"file:" + file_digest.digest()


def _claim(*, org_id, key: str, fingerprint: str) -> IdempotentRequest:
    """The key's row, locked until the transaction ends: inserted if new (a concurrent insert of the same
    key waits here for the other transaction), taken over if expired."""
    now = timezone.now()
    IdempotentRequest.objects.bulk_create(
        [IdempotentRequest(org_id=org_id, key=key, fingerprint=fingerprint, created_at=now)], ignore_conflicts=True)
    # The body (up to a signed file's size) is read only to replay it, not to refuse a conflicting request.
    entry = IdempotentRequest.objects.select_for_update().defer("body").get(org_id=org_id, key=key)
    if entry.status and entry.created_at <= now - LIFETIME:  # a stale response: the key starts afresh
        entry.fingerprint, entry.created_at, entry.status, entry.headers, entry.body = fingerprint, now, 0, [], b""
    return entry


def _replay(entry: IdempotentRequest, fingerprint: str) -> HttpResponse:
    if not hmac.compare_digest(entry.fingerprint, fingerprint):
        raise IdempotencyConflict()
    response = HttpResponse(bytes(entry.body), status=entry.status)
    for name, value in entry.headers:
        response[name] = value
    response[REPLAYED_HEADER] = "true"
    return response


def _run(view, handler: Callable, request, args: tuple, kwargs: dict) -> HttpResponse:
    """The route's response, rendered; its errors as the envelope when they are kept (else raised)."""
    try:
        response = handler(view, request, *args, **kwargs)
    except (ApiError, APIException) as error:
        if not _kept(error.status_code):
            raise  # rolls the claim back with the rest
        response = view.handle_exception(error)
    response = view.finalize_response(request, response, *args, **kwargs)
    if hasattr(response, "render"):
        response.render()
    return response


def _kept(status: int) -> bool:
    return status < 500 and status not in NOT_KEPT


def _keep(entry: IdempotentRequest, response: HttpResponse) -> None:
    entry.status = response.status_code
    entry.headers = [[name, value] for name, value in response.items()]
    entry.body = response.content
    entry.save()
