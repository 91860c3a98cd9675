"""Rows built through the same code paths the service uses (real digests, real hashes)."""

import itertools

import pyotp

from accounts.jwt_sessions import session_token_issue
from accounts.models import Organization, Role, User
from accounts.services import api_key_create, two_factor_enable, two_factor_setup
from tests.log_scan import register_secret

_counter = itertools.count(1)
PASSWORD = "correct horse battery"
register_secret(PASSWORD)


def make_org(*, plan: str = "free", name: str | None = None) -> Organization:
    return Organization.objects.create(name=name or f"Org {next(_counter)}", plan=plan)


def make_user(*, org: Organization, role: str = Role.OWNER, email: str | None = None,
              verified: bool = True, password: str = PASSWORD) -> User:
    email = email or f"user{next(_counter)}@example.com"
    register_secret(password)
    return User.objects.create_user(email, password, org=org, role=role, email_verified=verified)


def make_api_key(*, org: Organization, name: str = "test") -> str:
    key = api_key_create(org=org, created_by=None, name=name).key
    register_secret(key)
    return key


def session_token(user: User) -> str:
    token = session_token_issue(user_id=str(user.pk), email=user.email, org_id=str(user.org_id))
    register_secret(token)
    return token


# --- generators and records -------------------------------------------------------------------------

def enable_two_factor(user: User) -> tuple[pyotp.TOTP, list[str]]:
    """Turn the user's 2FA on through the services: the authenticator and the recovery codes shown once."""
    totp = pyotp.TOTP(two_factor_setup(user=user).secret)
    codes = two_factor_enable(user=user, otp=totp.now())
    for code in codes:
        register_secret(code)
    return totp, codes


def make_generator(*, org: Organization, name: str = "gen", formats: list[str] | None = None,
                   c2pa_signing: str = "ml-dsa-65"):
    """A server-managed generator with a real, sealed ML-DSA-65 keypair."""
    from generators.services import generator_register

    return generator_register(org=org, name=name, public_key=None, supported_formats=formats,
                              c2pa_signing=c2pa_signing)


def make_client_generator(*, org: Organization, name: str = "client-gen"):
    """A client-managed generator; returns (generator, seed) so tests can sign as the client would."""
    import base64

    from generators.services import SuppliedPublicKey, generator_register
    from record_format import crypto

    seed, public = crypto.generate_keypair()
    generator = generator_register(org=org, name=name, supported_formats=None,
                                   public_key=SuppliedPublicKey(kid=crypto.key_id(public), algorithm="ml-dsa-65",
                                                             key=public))
    register_secret(seed)
    register_secret(base64.b64encode(seed).decode())
    return generator, seed


def record_body(*, generator, seed: bytes, content: bytes = b"content", model: str = "model-x",
                watermark_id: str = "wm-1", phash: str | None = None) -> dict:
    """A POST /v1/records body signed with `seed` exactly as a client-managed caller would."""
    import base64

    from record_format import crypto
    from record_format.hashing import content_hash_of
    from record_format.payload import signed_payload_bytes

    payload = {"content_hash": content_hash_of(content), "generator_id": str(generator.pk), "model": model,
               "watermark_id": watermark_id}
    signature = crypto.sign(seed, signed_payload_bytes(**payload))
    body = {**payload, "signature": base64.b64encode(signature).decode(), "signed_payload": payload}
    if phash is not None:
        body["phash"] = phash
    return body


def set_usage(org: Organization, used: int) -> None:
    """Put this month's signature count of `org` at `used`."""
    from django.utils import timezone

    from billing.models import UsageCounter
    from billing.periods import period_start

    UsageCounter.objects.update_or_create(org=org, period_start=period_start(timezone.now()),
                                          defaults={"signatures_used": used})


# --- teams ----------------------------------------------------------------------------------------

def make_invite(*, org: Organization, inviter: User | None, email: str | None = None, role: str = Role.USER):
    """A pending invite with a real token digest; returns (invite, token). Skips invite_send's checks."""
    from django.utils import timezone

    from accounts.credentials import digest, new_url_token
    from accounts.models import normalize_email
    from teams.models import INVITE_LIFETIME, Invite

    token = new_url_token()
    email = normalize_email(email or f"invitee{next(_counter)}@example.com")
    invite = Invite.objects.create(org=org, inviter=inviter, email=email, role=role, digest=digest(token),
                                   expires_at=timezone.now() + INVITE_LIFETIME)
    register_secret(token)
    return invite, token


def make_personal_key(*, user: User) -> str:
    """A personal API key of `user`, created by the user; returns the full key."""
    from accounts.services import personal_api_key_create

    key = personal_api_key_create(org=user.org, user=user, created_by=user).key
    register_secret(key)
    return key


# --- webhooks -------------------------------------------------------------------------------------

def make_webhook(*, org: Organization, url: str = "https://93.184.216.34/hook", events: list[str] | None = None):
    """An active endpoint made by webhook_create (a literal public address: no DNS); returns (endpoint, secret)."""
    from webhooks.services import webhook_create

    created = webhook_create(org=org, url=url, events=events or ["record.created"])
    register_secret(created.secret)
    return created.endpoint, created.secret
