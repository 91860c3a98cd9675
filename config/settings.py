"""Settings for the provenance service: one module, every value from the environment.

Production differs from development only through environment variables (addendum section 8).
`os.environ` is read nowhere else in the project.
"""

import os
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

from core.secret_ring import RingError, read_key_encryption_key, read_token_signing_key

BASE_DIR = Path(__file__).resolve().parent.parent

DEV_SECRET_KEY = "dev-insecure-secret-key-change-me-in-production-0123456789"


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    if not 0 < number < float("inf"):
        raise ImproperlyConfigured(f"{name} must be a positive number, got {value!r}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str) -> dict:
    """Turn a DATABASE_URL (postgres://, postgresql:// or sqlite:///path) into Django's dict."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        path = unquote(parsed.path)
        name = path[1:] if path.startswith("//") else path  # sqlite:////abs/path or sqlite:///rel
        # Concurrent writers (threads, processes): BEGIN IMMEDIATE takes the write lock when a
        # transaction starts, so a second writer waits up to `timeout` seconds. With SQLite's default
        # deferred BEGIN, a transaction that read first fails at once with "database is locked".
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name or BASE_DIR / "db.sqlite3",
                "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20}}
    if parsed.scheme in ("postgres", "postgresql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            # Persistent connections: a new PostgreSQL connection costs more than a whole request.
            "CONN_MAX_AGE": 600,
            # Parameters bound by the server, and a statement run twice on a connection is prepared:
            # PostgreSQL then skips parsing and planning the hot statements. Needs direct connections
            # or session pooling; DATABASE_PREPARED_STATEMENTS=false for a pooler in transaction mode
            # (docs/decisions.md, "Hot paths and serving").
            "OPTIONS": ({"server_side_binding": True, "prepare_threshold": 2}
                        if env_bool("DATABASE_PREPARED_STATEMENTS", True) else {}),
            # No CONN_HEALTH_CHECKS: it adds a round trip to every request. A connection the server
            # dropped (PostgreSQL restarted) fails one request with 503 `service_unavailable` and is
            # closed at the end of that request (Django closes connections that saw an error and fail
            # `is_usable`); the next request connects again (docs/reliability.md, "Faults").
        }
    raise ImproperlyConfigured(f"DATABASE_URL scheme {parsed.scheme!r} is not supported")


# DEBUG is off unless set (addendum section 8): a deployment that forgets it shows no technical pages,
# and then refuses to start on development secrets. `make run` and the test settings turn it on.
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", DEV_SECRET_KEY)
if SECRET_KEY == DEV_SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured("Set SECRET_KEY: DEBUG is off, so the development default is refused "
                               "(for development, set DEBUG=true instead)")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL", "http://127.0.0.1:8000").rstrip("/")

# Separate secrets per purpose; each defaults to one derived from SECRET_KEY in development.
# KEY_ENCRYPTION_KEY, SECRET_ENCRYPTION_KEY and TOKEN_SIGNING_KEY are key rings, "k2:<secret>,k1:<secret>":
# the first entry seals or mints, every entry reads; a plain secret is the ring key `legacy` (core/secret_ring.py).
# KEY_ENCRYPTION_KEY seals private keys; SECRET_ENCRYPTION_KEY seals the secrets the web process itself must
# read (webhook signing secrets, a new secret's one showing) and falls back to KEY_ENCRYPTION_KEY when unset.
KEY_ENCRYPTION_KEY = env_str("KEY_ENCRYPTION_KEY", "")
SECRET_ENCRYPTION_KEY = env_str("SECRET_ENCRYPTION_KEY", "")
TOKEN_SIGNING_KEY = env_str("TOKEN_SIGNING_KEY", "")
for _read, _value in ((read_key_encryption_key, KEY_ENCRYPTION_KEY), (read_key_encryption_key, SECRET_ENCRYPTION_KEY),
                      (read_token_signing_key, TOKEN_SIGNING_KEY)):
    if _value:
        try:
            _read(_value)
        except RingError as error:
            raise ImproperlyConfigured(str(error)) from None
# The transparency log's Ed25519 and ML-DSA-65 checkpoint keys are derived from LOG_SIGNING_KEY
# (core/keyring.py); its public keys are published, so changing it changes the log's identity.
LOG_SIGNING_KEY = env_str("LOG_SIGNING_KEY", "")
# The signer service (`manage.py signer`): the Unix socket it listens on and the others connect to, and the
# secret it and they authenticate each other's frames with (derived from SECRET_KEY when unset).
# SIGNER_SERVICE=true marks the signer's own environment: it alone holds KEY_ENCRYPTION_KEY and
# LOG_SIGNING_KEY. With DEBUG off and SIGNER_SOCKET set, any other process (web, sequencer, jobs) refuses to
# start if it is given them: the code that faces the network never holds a key (docs/key-backends.md).
SIGNER_SOCKET = env_str("SIGNER_SOCKET", "")
SIGNER_SECRET = env_str("SIGNER_SECRET", "")
SIGNER_SERVICE = env_bool("SIGNER_SERVICE", False)
if not DEBUG and SIGNER_SOCKET and not SIGNER_SERVICE:
    _held = [name for name, value in (("KEY_ENCRYPTION_KEY", KEY_ENCRYPTION_KEY), ("LOG_SIGNING_KEY", LOG_SIGNING_KEY))
             if value]
    if _held:
        raise ImproperlyConfigured(f"Remove {' and '.join(_held)} from this process's environment: SIGNER_SOCKET is "
                                   "set, so the signer service holds the keys and this process must not "
                                   "(set SIGNER_SERVICE=true only in the signer's own environment)")
    _required = [("SECRET_ENCRYPTION_KEY", SECRET_ENCRYPTION_KEY), ("TOKEN_SIGNING_KEY", TOKEN_SIGNING_KEY),
                 ("SIGNER_SECRET", SIGNER_SECRET)]
elif SIGNER_SERVICE:  # mints no tokens, reads no webhook secrets: holds the keys and the secret it answers with
    _required = [("KEY_ENCRYPTION_KEY", KEY_ENCRYPTION_KEY), ("LOG_SIGNING_KEY", LOG_SIGNING_KEY),
                 ("SIGNER_SECRET", SIGNER_SECRET)]
else:
    _required = [("KEY_ENCRYPTION_KEY", KEY_ENCRYPTION_KEY), ("TOKEN_SIGNING_KEY", TOKEN_SIGNING_KEY),
                 ("LOG_SIGNING_KEY", LOG_SIGNING_KEY)]
_unset_secrets = [name for name, value in _required if not value]
# Whether an unset KEY_ENCRYPTION_KEY, SECRET_ENCRYPTION_KEY or LOG_SIGNING_KEY falls back to one derived from
# SECRET_KEY (core/keyring.py): in development only, fixed here because test runners turn DEBUG off later.
DEVELOPMENT_KEY_FALLBACK = DEBUG
if not DEBUG and _unset_secrets:
    # Each outlives SECRET_KEY rotations (sealed private keys, issued tokens, published log keys), and the
    # signer's secret is shared by two processes: production sets them.
    raise ImproperlyConfigured(f"Set {' and '.join(_unset_secrets)}: DEBUG is off, so they may not fall back "
                               "to SECRET_KEY (for development, set DEBUG=true instead)")

# The checkpoint origin line and the log keys' name (c2sp.org/tlog-checkpoint): a schema-less URL.
LOG_ORIGIN = env_str("LOG_ORIGIN", "") or f"{urlparse(PUBLIC_BASE_URL).hostname or 'localhost'}/provenance-log"
# Seconds between the sequencer's rounds: a record is in a signed checkpoint at most this long after
# its commit, under load; an idle log signs nothing new (manage.py log_sequencer). 0.9 s, not 1: rounds start at
# a fixed rate, but on a busy machine a round starts late now and then, and a checkpoint a second is the promise.
LOG_SEQUENCER_INTERVAL = env_float("LOG_SEQUENCER_INTERVAL", 0.9)

VERIFY_RATE_PER_MINUTE = env_int("VERIFY_RATE_PER_MINUTE", 300)
AUTH_RATE_PER_MINUTE = env_int("AUTH_RATE_PER_MINUTE", 60)
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)  # proxies in front that append X-Forwarded-For
# Slow clients (core/body_timeout.py): seconds a request body may go without a byte, and seconds for
# all of it (64 MB at 10 Mbit/s takes 54 s); 0 turns either off.
BODY_READ_TIMEOUT = env_int("BODY_READ_TIMEOUT", 10)
BODY_READ_DEADLINE = env_int("BODY_READ_DEADLINE", 60)
WEBHOOK_ALLOW_PRIVATE_TARGETS = env_bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", False)
# Spec, Limits: an endpoint answers within 10 s or the delivery fails. Tests shorten it.
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 10.0)
WEBHOOK_DELIVERY_THREADS = env_int("WEBHOOK_DELIVERY_THREADS", 32)  # per process, shared by all requests
# An RFC 3161 time-stamp authority (core/tsa.py): unset, nothing is stamped. Seconds for one stamp,
# connect to last byte.
TSA_URL = env_str("TSA_URL", "")
TSA_TIMEOUT_SECONDS = env_float("TSA_TIMEOUT_SECONDS", 5.0)
# PEM file of the root certificates the time-stamp authority chains to: verification checks stamps against
# them, and GET /v1/c2pa/trust-anchors lists them beside the signing roots.
TSA_ROOTS_FILE = env_str("TSA_ROOTS_FILE", "")
# Read by the signer service only (signer/backends/): where new generator keys are made (`sealed`, `pkcs11`,
# `aws-kms`, `gcp-kms`), and each backend's configuration (docs/key-backends.md).
SIGNER_KEY_BACKEND = env_str("SIGNER_KEY_BACKEND", "sealed")
SIGNER_PKCS11_MODULE = env_str("SIGNER_PKCS11_MODULE", "")
SIGNER_PKCS11_TOKEN = env_str("SIGNER_PKCS11_TOKEN", "")
SIGNER_PKCS11_PIN = env_str("SIGNER_PKCS11_PIN", "")
SIGNER_AWS_KMS_REGION = env_str("SIGNER_AWS_KMS_REGION", "")  # credentials: AWS_ACCESS_KEY_ID and the rest
SIGNER_AWS_KMS_ENDPOINT = env_str("SIGNER_AWS_KMS_ENDPOINT", "")  # a VPC endpoint, else the region's
# The standard AWS variables: an IAM user's key, or the temporary ones a role hands out.
SIGNER_AWS_ACCESS_KEY_ID = env_str("AWS_ACCESS_KEY_ID", "")
SIGNER_AWS_SECRET_ACCESS_KEY = env_str("AWS_SECRET_ACCESS_KEY", "")
SIGNER_AWS_SESSION_TOKEN = env_str("AWS_SESSION_TOKEN", "")
SIGNER_GCP_KMS_KEY_RING = env_str("SIGNER_GCP_KMS_KEY_RING", "")  # projects/P/locations/L/keyRings/R
SIGNER_GCP_KMS_TOKEN_FILE = env_str("SIGNER_GCP_KMS_TOKEN_FILE", "")  # else the metadata server's token
SIGNER_GCP_KMS_ENDPOINT = env_str("SIGNER_GCP_KMS_ENDPOINT", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, pinned and served from our static files
    "django_otp",
    "django_otp.plugins.otp_totp",
    "accounts",
    "billing",
    "generators",
    "signer",
    "provenance",
    "audit",
    "webhooks",
    "verification",
    "jobs",  # long signing work run by Celery workers, under /v1/jobs and /v1/sign/batch
    "teams",
    "transparency",  # the transparency log of every record (RFC 9162), under /v1/log
    "dashboard",  # the server-rendered pages (session login), under /dashboard and a few public paths
    "core",  # the shared platform: the limiter's RateCounter table, idempotent responses
]

MIDDLEWARE = [
    "core.middleware.RequestContextMiddleware",  # first: request id and access log for every response
    "core.middleware.RequestHeadLimitMiddleware",  # 414/431 for a request head over gunicorn's limits
    "core.health.ProbeMiddleware",  # /healthz and /readyz, before the Host header is checked
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.middleware.ContentSecurityPolicyMiddleware",
    "core.middleware.RateLimitHeadersMiddleware",
]
# The JSON API under /v1/ (core/api_chain.py; the test client splits the same way): bearer credentials
# only, so it skips the session, CSRF, user and messages layers the pages need, and never sets or varies
# on a cookie, even for a request that carries a browser's.
API_MIDDLEWARE = [name for name in MIDDLEWARE if name not in (
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
)]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False  # paths match the spec exactly; a redirect would drop POST bodies

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_from_url(env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

# Rate-limit counters and the JWT blocklist use Redis when REDIS_URL is set, else their own tables
# (core.RateCounter, accounts.BlockedSessionToken). Without Redis the cache is the database cache,
# never per-process memory; `migrate` creates its table (core/cachetable.py).
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    # Short socket timeouts: a Redis that hangs must cost a request half a second, not redis-py's 5 s;
    # what each user of Redis does then is in docs/decisions.md, "Faults: Redis".
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "cache_table"}}

# Jobs (jobs/): long signing work runs on Celery workers (`celery -A config worker`). The broker is the
# deployment's Redis; without REDIS_URL (development) a folder beside the job files, which one machine's
# processes share (docs/decisions.md, "Jobs on Celery"). CELERY_BROKER_URL names another broker (amqp://
# for RabbitMQ, sqs://) by configuration only. A job's state lives in its rows, not in a result store.
JOB_STORAGE_DIR = env_str("JOB_STORAGE_DIR", str(BASE_DIR / "job-files"))  # shared by web and workers
# Or an S3-compatible bucket for the jobs' files (jobs/storage/s3.py): "s3://<bucket>/<prefix>". Its
# credentials come from boto3's own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a role).
JOB_STORAGE_URL = env_str("JOB_STORAGE_URL", "")
if JOB_STORAGE_URL and not re.fullmatch(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^?#]*)?", JOB_STORAGE_URL):
    raise ImproperlyConfigured("JOB_STORAGE_URL must be empty (the directory JOB_STORAGE_DIR) or "
                               f"s3://<bucket>/<prefix>, got {JOB_STORAGE_URL!r}")
# MinIO, Cloudflare R2, Ceph: the service's URL (addressed by path); empty: AWS S3.
JOB_STORAGE_S3_ENDPOINT_URL = env_str("JOB_STORAGE_S3_ENDPOINT_URL", "")
JOB_STORAGE_S3_REGION = env_str("JOB_STORAGE_S3_REGION", "")  # empty: boto3's own (AWS_REGION, the profile)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "") or REDIS_URL or "filesystem://"
JOBS_QUEUE = env_str("JOBS_QUEUE", "jobs")
# How long a job whose worker died unannounced (SIGKILL, lost machine) waits before Redis or SQS hands it
# to another worker; a job still running past it is handed out again and the second run skips done items.
JOBS_VISIBILITY_TIMEOUT = env_int("JOBS_VISIBILITY_TIMEOUT", 1800)
if JOBS_VISIBILITY_TIMEOUT < 1:
    raise ImproperlyConfigured("JOBS_VISIBILITY_TIMEOUT must be at least 1 (seconds)")
CELERY_TASK_DEFAULT_QUEUE = JOBS_QUEUE
CELERY_TASK_ACKS_LATE = True  # acknowledged when done: a worker that dies mid-job leaves it to another
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # a pool child killed mid-job puts it back at once
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # a worker holds one job at a time; the others wait for a free worker
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # our LOGGING, one line per record, in workers too
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_folder = str(Path(JOB_STORAGE_DIR) / ".broker")
    CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": _broker_folder, "data_folder_out": _broker_folder,
                                       "control_folder": str(Path(JOB_STORAGE_DIR) / ".broker-control")}
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": JOBS_VISIBILITY_TIMEOUT,
                                       # look for a dead worker's jobs a few times per timeout
                                       "unacked_restore_interval": max(1, min(10, JOBS_VISIBILITY_TIMEOUT // 3)),
                                       "unacked_restore_throttle": 1}
# The cleanup: signed files 24 hours after their job finished, inputs of abandoned uploads, jobs stuck queued.
JOBS_CLEANUP_INTERVAL = env_int("JOBS_CLEANUP_INTERVAL", 900)
# A job still queued this long (its message lost with a broker that was down or lost its data) is handed to
# the broker again by the cleanup.
JOBS_STALLED_AFTER = env_int("JOBS_STALLED_AFTER", 600)
# How often, at most, a worker stores how far a running item's file is (GET /v1/jobs/:id's progress): a
# write a second at most per worker, and none for a file done sooner.
JOBS_PROGRESS_INTERVAL = env_float("JOBS_PROGRESS_INTERVAL", 1.0)
# A job whose files cannot be reached (JOB_STORAGE_URL's bucket or JOB_STORAGE_DIR's volume away) runs again
# after this many seconds, as often as it takes.
JOBS_STORAGE_RETRY_SECONDS = env_int("JOBS_STORAGE_RETRY_SECONDS", 30)
CELERY_BEAT_SCHEDULE = {"jobs-cleanup": {"task": "jobs.tasks.jobs_cleanup", "schedule": JOBS_CLEANUP_INTERVAL}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# Development prints emails to the console. Outside development the default is SMTP: the console is the
# log stream there, and emails carry single-use tokens (verification, password reset, invites).
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend" if DEBUG
                        else "django.core.mail.backends.smtp.EmailBackend")
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(BASE_DIR / "sent-emails"))
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Provenance Service <no-reply@localhost>")
# Where the billing page's plan requests go (staff apply them in the admin); the billing page shows it
# to owners as the address to write to.
BILLING_CONTACT_EMAIL = env_str("BILLING_CONTACT_EMAIL", "billing@localhost")

# JSON bodies above this are refused with 413 before parsing (routes may allow more, e.g. batches).
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.authentication.BearerAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_THROTTLE_CLASSES": ["billing.throttles.OrgPlanThrottle"],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.LimitedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # `?format=` is a filter of ours (GET /v1/records), not a choice of renderer: DRF would answer 404 to it.
    "URL_FORMAT_OVERRIDE": None,
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    "DEFAULT_METADATA_CLASS": "core.metadata.AllowedMethodsMetadata",
    "DEFAULT_SCHEMA_CLASS": "core.openapi.AutoSchema",  # states DRF's checks drf-spectacular leaves out
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Content Provenance Signing Service",
    "DESCRIPTION": "Sign AI-generated content with ML-DSA-65 (FIPS 204) and verify it for free.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    # PATCH bodies are validated whole (core/validation.py), so their schema keeps its required fields.
    "COMPONENT_SPLIT_PATCH": False,
    # /v1/docs loads Swagger UI from our own static files (no CDN, no third-party origin, CSP-clean).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {"JobStatusEnum": "jobs.models.Job.Status",
                            "JobItemStatusEnum": "jobs.models.JobItem.Status"},
    # Every operation documents its error statuses with the shared envelope (core/openapi.py).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "core.openapi.document_error_responses"],
}

JWT_LIFETIME = timedelta(hours=24)

OTP_TOTP_ISSUER = "Provenance Service"
# Our own per-account lockout (addendum section 2) replaces django-otp's per-device back-off.
OTP_TOTP_THROTTLE_FACTOR = 0
# Staff never see a user's second factor: no TOTP key or QR code in the admin.
OTP_ADMIN_HIDE_SENSITIVE_DATA = True

# Pages sign in with Django's session cookie (the API never reads it). Outside development the cookies
# travel over HTTPS only; the CSRF cookie is read by no script (forms carry the token).
SESSION_COOKIE_SECURE = not DEBUG or PUBLIC_BASE_URL.startswith("https://")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = 12 * 3600
LOGIN_URL = "dashboard:login"
# Every page's scripts and styles are files the project serves itself: no inline script or style,
# no third-party origin; no page may be framed (with X_FRAME_OPTIONS for older browsers).
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
CSRF_FAILURE_VIEW = "core.errors.csrf_failure"  # JSON under /v1, Django's page elsewhere

# Logs go to stdout, one line per record, each with the request id of the request that wrote it
# (core/logs.py). With DEBUG off, one JSON object per line for a log collector; in development a
# readable line. LOG_FORMAT (json or text) overrides the choice.
LOG_FORMAT = env_str("LOG_FORMAT", "text" if DEBUG else "json")
if LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or text, got {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "core.logs.RequestContextFilter"}},
    "formatters": {"json": {"()": "core.logs.JsonFormatter"}, "text": {"()": "core.logs.TextFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout",
                             "formatter": LOG_FORMAT, "filters": ["request_context"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # Django's own 4xx warnings repeat the access log line; its 5xx errors carry the traceback.
    "loggers": {"django.request": {"level": "ERROR"}},
}
