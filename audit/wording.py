"""Audit events in words, for people reading the log (pure: no Django).

`describe(type, metadata, names)` gives one sentence ("Signed a record with model "m" by generator
"g".") and the ids worth copying (the record, the generator). `names` turns the ids in metadata into
what the page can show (a generator's name, a member's email, a webhook's URL); an id it does not
know (a member since removed) is still described, never dropped. A type this module does not know
still reads as words: its name spelled out and its metadata as labelled values.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Names:
    """What the ids in a page of events stand for: generator id -> name, user id -> email, webhook id -> URL."""

    generators: dict[str, str] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    webhooks: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Described:
    sentence: str
    references: tuple[tuple[str, str], ...] = ()  # (label, id) pairs shown under the sentence


# The audit types in words, for the filter's choices and for any sentence that needs a type's name.
TYPE_LABELS = {
    "sign": "Record signed",
    "verify": "Record verified",
    "key_created": "Generator registered or key rotated",
    "key_revoked": "Generator revoked",
    "team.invite_sent": "Invitation sent",
    "team.invite_accepted": "Invitation accepted",
    "team.invite_cancelled": "Invitation cancelled",
    "team.role_changed": "Role changed",
    "team.member_removed": "Member removed",
    "webhook.created": "Webhook endpoint added",
    "webhook.updated": "Webhook endpoint changed",
    "webhook.deleted": "Webhook endpoint deleted",
    "billing.plan_changed": "Plan changed",
    "account.two_factor_enabled": "Two-factor sign-in turned on",
    "account.two_factor_disabled": "Two-factor sign-in turned off",
    "account.recovery_codes_regenerated": "Recovery codes replaced",
    "account.recovery_code_used": "Recovery code used",
    "account.password_changed": "Password changed",
    "generator.c2pa_certificate_uploaded": "Generator's own C2PA certificate set",
    "generator.c2pa_certificate_removed": "Generator's own C2PA certificate removed",
}

TOKEN_SOURCES = {
    "provided": "the token sent with the request",
    "xmp": "the token in the file's XMP metadata",
    "metadata": "the token in the file's metadata",
    "watermark": "the watermark",
    "content_hash": "the file's exact content hash",
    "phash": "its resemblance to a signed image (perceptual hash)",
    "fingerprint": "the text's word fingerprint",
}
ROLES = {"owner": "owner", "admin": "admin", "user": "member"}
INTERVALS = {"monthly": "billed monthly", "annual": "billed annually"}
PLANS = {"free": "Free", "starter": "Starter", "growth": "Growth", "scale": "Scale", "enterprise": "Enterprise"}


def type_label(type: str) -> str:
    """A type's name in words; unknown types spelled out from their name (`api_key.created` -> "Api key created")."""
    return TYPE_LABELS.get(type) or _spelled(type)


def describe(type: str, metadata: dict, names: Names) -> Described:
    """The event as a sentence and the ids worth copying."""
    describer = _DESCRIBERS.get(type)
    if describer is None or not isinstance(metadata, dict):
        return _unknown(type, metadata)
    return describer(_Reader(metadata, names))


class _Reader:
    """Metadata values as words; a missing value reads as a neutral phrase, never as "None"."""

    def __init__(self, metadata: dict, names: Names):
        self.metadata, self.names = metadata, names

    def text(self, key: str, missing: str = "unknown") -> str:
        value = self.metadata.get(key)
        return missing if value in (None, "") else str(value)

    def quoted(self, key: str) -> str:
        return f"“{self.text(key)}”"

    def generator(self) -> str:
        generator_id = self.text("generator_id", "")
        name = self.names.generators.get(generator_id) or self.metadata.get("name")
        return f"generator “{name}”" if name else "a generator"

    def actor(self) -> str:
        actor_id = self.text("actor_id", "")
        if not actor_id:
            return "Someone"
        return self.names.users.get(actor_id, "A former member")

    def role(self, key: str = "role") -> str:
        role = self.text(key)
        return ROLES.get(role, role)

    def webhook(self) -> str:
        return self.text("url", "") or self.names.webhooks.get(self.text("webhook_id", ""), "(address not recorded)")

    def references(self, *pairs: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        return tuple((label, str(self.metadata[key])) for label, key in pairs if self.metadata.get(key))


def _sign(event: _Reader) -> Described:
    return Described(f"Signed a record with model {event.quoted('model')} by {event.generator()}.",
                     event.references(("Record", "record_id"), ("Generator", "generator_id")))


def _verify(event: _Reader) -> Described:
    if event.metadata.get("authentic"):
        verdict = "authentic"
    elif event.metadata.get("tampered"):
        verdict = "the content was changed after signing"
    else:
        verdict = "not authentic (the signature did not check out, or its generator is revoked)"
    source = TOKEN_SOURCES.get(event.text("token_source", ""))
    found = f", found through {source}" if source else ""
    return Described(f"Verified a record: {verdict}{found}.", event.references(("Record", "record_id")))


def _key_created(event: _Reader) -> Described:
    references = event.references(("Generator", "generator_id"), ("Key", "kid"))
    if event.metadata.get("previous_kid"):
        return Described(f"Rotated the signing key of {event.generator()}: key {event.text('kid')} replaces "
                         f"{event.text('previous_kid')}.", references)
    mode = {"server": "keys held by the service", "client": "its own keys (client-managed)"}.get(
        event.text("mode", ""), "a signing key")
    return Described(f"Registered {event.generator()} with {mode}.", references)


def _key_revoked(event: _Reader) -> Described:
    return Described(f"Revoked {event.generator()}: its signatures no longer verify.",
                     event.references(("Generator", "generator_id")))


def _invite_sent(event: _Reader) -> Described:
    return Described(f"{event.actor()} invited {event.text('email')} to join as {event.role()}.")


def _invite_cancelled(event: _Reader) -> Described:
    return Described(f"{event.actor()} cancelled the invitation of {event.text('email')} ({event.role()}).")


def _invite_accepted(event: _Reader) -> Described:
    return Described(f"{event.text('email')} accepted the invitation and joined as {event.role()}.")


def _role_changed(event: _Reader) -> Described:
    return Described(f"{event.actor()} changed the role of {event.text('email')} from "
                     f"{event.role('previous_role')} to {event.role()}.")


def _member_removed(event: _Reader) -> Described:
    return Described(f"{event.actor()} removed {event.text('email')} ({event.role()}) from the team.")


def _events(value) -> str:
    return ", ".join(value) if isinstance(value, list) and value else "no events"


def _webhook_created(event: _Reader) -> Described:
    return Described(f"Added the webhook endpoint {event.webhook()} for {_events(event.metadata.get('events'))}.",
                     event.references(("Endpoint", "webhook_id")))


def _webhook_updated(event: _Reader) -> Described:
    changes = []
    if "url" in event.metadata:
        changes.append(f"its address is now {event.text('url')}")
    if "events" in event.metadata:
        changes.append(f"it now receives {_events(event.metadata['events'])}")
    if "status" in event.metadata:
        changes.append({"active": "turned it back on", "disabled": "turned it off"}.get(
            event.text("status"), f"status {event.text('status')}"))
    url = event.names.webhooks.get(event.text("webhook_id", ""))
    endpoint = f"the webhook endpoint {url}" if url else "a webhook endpoint since deleted"
    return Described(f"Changed {endpoint}: {'; '.join(changes) or 'no change'}.",
                     event.references(("Endpoint", "webhook_id")))


def _webhook_deleted(event: _Reader) -> Described:
    return Described(f"Deleted the webhook endpoint {event.webhook()}.", event.references(("Endpoint", "webhook_id")))


def _plan(event: _Reader, plan_key: str, interval_key: str) -> str:
    plan = PLANS.get(event.text(plan_key), event.text(plan_key))
    interval = INTERVALS.get(event.text(interval_key, ""))
    return f"{plan} ({interval})" if interval else plan


def _plan_changed(event: _Reader) -> Described:
    return Described(f"The plan changed from {_plan(event, 'previous_plan', 'previous_billing_interval')} to "
                     f"{_plan(event, 'plan', 'billing_interval')}, by {event.text('actor', 'staff')}.")


def _c2pa_certificate_uploaded(event: _Reader) -> Described:
    return Described(f"{event.actor()} set the C2PA signing certificate of {event.generator()} to the "
                     f"organization's own ({event.text('subject', 'subject not recorded')}).",
                     event.references(("Generator", "generator_id"), ("Certificate SHA-256", "sha256")))


def _c2pa_certificate_removed(event: _Reader) -> Described:
    return Described(f"{event.actor()} removed the organization's own C2PA signing certificate of "
                     f"{event.generator()}: the service's certificates sign again.",
                     event.references(("Generator", "generator_id")))


def _account(done: str) -> Callable[[_Reader], Described]:
    return lambda event: Described(f"{event.actor()} {done}.")


def _two_factor_disabled(event: _Reader) -> Described:
    proof = {"authenticator": " with an authenticator code", "recovery_code": " with a recovery code"}.get(
        event.text("proof", ""), "")
    return Described(f"{event.actor()} turned off two-factor sign-in{proof}.")


def _recovery_code_used(event: _Reader) -> Described:
    left = event.metadata.get("remaining")
    remaining = f"; {left} left" if isinstance(left, int) else ""
    return Described(f"{event.actor()} signed in with a recovery code{remaining}.")


_DESCRIBERS: dict[str, Callable[[_Reader], Described]] = {
    "sign": _sign,
    "verify": _verify,
    "key_created": _key_created,
    "key_revoked": _key_revoked,
    "team.invite_sent": _invite_sent,
    "team.invite_accepted": _invite_accepted,
    "team.invite_cancelled": _invite_cancelled,
    "team.role_changed": _role_changed,
    "team.member_removed": _member_removed,
    "webhook.created": _webhook_created,
    "webhook.updated": _webhook_updated,
    "webhook.deleted": _webhook_deleted,
    "billing.plan_changed": _plan_changed,
    "account.two_factor_enabled": _account("turned on two-factor sign-in"),
    "account.two_factor_disabled": _two_factor_disabled,
    "account.recovery_codes_regenerated": _account("replaced their recovery codes"),
    "account.recovery_code_used": _recovery_code_used,
    "account.password_changed": _account("changed their password"),
    "generator.c2pa_certificate_uploaded": _c2pa_certificate_uploaded,
    "generator.c2pa_certificate_removed": _c2pa_certificate_removed,
}


def _spelled(name: str) -> str:
    words = name.replace(".", " ").replace("_", " ").split()
    return " ".join(words).capitalize() if words else "Event"


def _value(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return ", ".join(value)
    return json.dumps(value, ensure_ascii=False)


def _unknown(type: str, metadata) -> Described:
    """A type without its own sentence: its name in words, each metadata value under a spelled-out label."""
    if not isinstance(metadata, dict):
        return Described(f"{type_label(type)}.", (("Details", _value(metadata)),))
    # Sorted: PostgreSQL's jsonb keeps keys in its own order (shortest first), SQLite in the written one.
    return Described(f"{type_label(type)}.",
                     tuple((_spelled(key), _value(value)) for key, value in sorted(metadata.items())))
