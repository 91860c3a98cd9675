"""Users, organizations, organization API keys and the single-use tokens of the auth flows."""

import uuid

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from accounts.plans import BILLING_INTERVALS, DEFAULT_PLAN, PLAN_NAMES


class OrgScopedQuerySet(models.QuerySet):
    def for_org(self, org: "Organization") -> "OrgScopedQuerySet":
        """The only way org-owned rows are read: narrowed to one organization."""
        return self.filter(org=org)


class Organization(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    # The plan lives on the row every request already loads (rate limits and quotas read it).
    plan = models.CharField(max_length=20, choices=[(p, p) for p in PLAN_NAMES], default=DEFAULT_PLAN)
    billing_interval = models.CharField(
        max_length=10, choices=[(i, i) for i in BILLING_INTERVALS], default="monthly"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # The organization's active webhook endpoints as delivery needs them (id, url, events, failure count,
    # sealed secret), rewritten by webhooks.services in the transaction of every endpoint change. It is
    # on the row each request already loads: an event nobody listens to costs nothing, and one that
    # somebody does costs no query to find where it goes.
    active_webhooks = models.JSONField(default=list, blank=True, editable=False)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.plan})"


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    USER = "user"


class UserManager(BaseUserManager.from_queryset(OrgScopedQuerySet)):
    """`User.objects.for_org(org)` scopes members like every other org-owned row."""

    def create_user(self, email: str, password: str | None = None, **fields) -> "User":
        user = self.model(email=normalize_email(email), **fields)
        user.set_password(password)
        user.save()
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields) -> "User":
        """Staff accounts for the Django admin; they get an organization of their own."""
        org = fields.pop("org", None) or Organization.objects.create(name="Staff")
        fields.setdefault("role", Role.OWNER)
        return self.create_user(email, password, org=org, is_staff=True, is_superuser=True,
                                email_verified=True, **fields)


def normalize_email(email: str) -> str:
    """Emails are compared case-insensitively; they are stored lowercased and trimmed."""
    return email.strip().lower()


class User(AbstractBaseUser, PermissionsMixin):
    """Emails are stored normalised (`normalize_email`) and looked up by equality, which uses the unique
    index; the lower(email) constraint also guards rows written around the manager."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254, unique=True)  # stored lowercased; see normalize_email
    email_verified = models.BooleanField(default=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="users")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.USER)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    # Session JWTs issued before this instant are refused (set on password reset).
    sessions_valid_after = models.DateTimeField(null=True, blank=True)
    # Wrong OTPs in a row at verify-2fa; at 5 the account is locked out of 2FA for 15 minutes.
    # Mirrors "has a confirmed TOTP device" so login and /me need no extra query; kept by the 2FA services.
    two_factor_enabled = models.BooleanField(default=False)
    failed_otp_count = models.PositiveIntegerField(default=0)
    otp_locked_until = models.DateTimeField(null=True, blank=True)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        constraints = [models.UniqueConstraint(Lower("email"), name="user_email_ci_unique")]

    def __str__(self) -> str:
        return self.email

    def clean(self) -> None:
        # Forms (the admin's included) store the same normalised form as the API.
        super().clean()
        self.email = normalize_email(self.email)


class ApiKeyQuerySet(OrgScopedQuerySet):
    def active(self) -> "ApiKeyQuerySet":
        return self.filter(revoked_at__isnull=True)

    def organization_keys(self) -> "ApiKeyQuerySet":
        """Keys of the organization itself, the only ones /v1/api-keys lists and revokes."""
        return self.filter(user__isnull=True)

    def personal_of(self, user: "User") -> "ApiKeyQuerySet":
        return self.filter(user=user)


class ApiKey(models.Model):
    """An API key (`svc_key_...`). Only a SHA-256 digest of the full key is stored.

    With `user` empty it is an organization key; with `user` set it is that member's personal key
    (team routes), which acts for the same organization and dies with the member.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Not `created_by`: an owner who creates an organization key does not own it.
    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="personal_api_keys")
    name = models.CharField(max_length=100, blank=True, default="")
    lookup_id = models.CharField(max_length=16, unique=True)  # the first secret characters, indexed
    digest = models.CharField(max_length=64)
    preview = models.CharField(max_length=24)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.preview} ({self.org.name})"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class EmailToken(models.Model):
    """A single-use token mailed to a user: email verification or password reset. Stored as a digest."""

    class Purpose(models.TextChoices):
        VERIFY_EMAIL = "verify_email"
        RESET_PASSWORD = "reset_password"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="email_tokens")
    purpose = models.CharField(max_length=20, choices=Purpose.choices)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["user", "purpose"])]

    def __str__(self) -> str:
        return f"{self.purpose} token for {self.user_id}"


class TwoFactorChallenge(models.Model):
    """Issued by login when 2FA is on; burned by the first verify-2fa submission, right or wrong."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="two_factor_challenges")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # Set when a wrong code burned it: the dashboard may then issue one successor for the same login
    # (same expiry), so a mistyped code keeps the person at the code step. The API never does.
    retry_allowed = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"2FA challenge for {self.user_id}"


class RecoveryCode(models.Model):
    """A single-use two-factor recovery code. Only a SHA-256 digest is stored (80-bit random codes).

    Used codes are kept (with `used_at`) so a second use can be told apart from a wrong code; all of a
    user's codes go when new ones are generated or 2FA is turned off.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="recovery_codes")
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"recovery code of {self.user_id}{' (used)' if self.used_at else ''}"


class BlockedSessionToken(models.Model):
    """A logged-out session JWT, by `jti`, refused until it expires (then `purge_expired` drops it).

    A table, not the cache: Django's database cache culls a third of its rows past 300 entries,
    which would silently revive logged-out tokens.
    """

    jti = models.CharField(max_length=64, primary_key=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"blocked {self.jti} until {self.expires_at:%Y-%m-%d %H:%M}"
