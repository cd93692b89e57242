"""Settings for the test suite: the real PostgreSQL and Redis on this machine.

Each default can be overridden from the environment (``DATABASE_URL``,
``REDIS_URL``, ``CELERY_BROKER_URL``).
"""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/1")
os.environ.setdefault("CELERY_BROKER_URL", os.environ["REDIS_URL"])
os.environ.setdefault("SECRET_KEY", "tests-only-secret-key")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
os.environ.setdefault("DEBUG", "0")
# Tasks run in the test process unless a test starts a real worker (tests/test_celery.py).
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")

from qaportal.settings import *  # noqa: F403

# Parallel workers (pytest-xdist: gw0, gw1, ...) each have their own test database
# (pytest-django appends _gwN to its name) and, on the one Redis database they share,
# their own cache keys (a prefix, and a clear() limited to it: tests/cache.py) and
# their own default Celery queue, so that no worker ever sees another's keys or tasks.
TEST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
if REDIS_URL:  # noqa: F405
    CACHES = {
        "default": {
            **CACHES["default"],  # noqa: F405
            "BACKEND": "tests.cache.ScopedRedisCache",
            "KEY_PREFIX": f"qaportal-test-{TEST_WORKER}",
        }
    }
CELERY_TASK_DEFAULT_QUEUE = f"qaportal-test-{TEST_WORKER}"
# Every class of work on that one queue (a test that checks the routes sets them).
QUEUE_PAYMENTS = QUEUE_HEAVY = ""
CELERY_TASK_QUEUES = {CELERY_TASK_DEFAULT_QUEUE: {}}

# The suite's ``flush`` command (tests/flush): after a transactional test, content types
# and permissions are kept when intact instead of deleted and made again.
INSTALLED_APPS = ["tests.flush", *INSTALLED_APPS]  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
# The test client and the live servers speak plain HTTP (tests/security checks the
# production redirect and HSTS in a process of their own).
SECURE_SSL_REDIRECT = False
SECURE_HSTS_SECONDS = 0
# Tests log in many times from one address; tests/security lowers it where it tests it.
LOGIN_FAILURE_LIMIT = 1000
# High enough that no test but the throttling tests (which lower it) is ever throttled.
API_THROTTLE_RATES = {"read": "100000/min", "write": "100000/min"}

# A second database standing in for a replica (tests/qaportal/test_dbrouter.py): created
# only for the tests that ask for it (``databases=["default", "replica"]``), with its own
# name (not a MIRROR: the tests put a copy in it that differs visibly from the primary),
# and read only when a test turns DATABASE_REPLICA_READS on.
if "replica" not in DATABASES:  # noqa: F405
    DATABASES["replica"] = {  # noqa: F405
        **DATABASES["default"],  # noqa: F405
        "TEST": {"NAME": f"test_{DATABASES['default']['NAME']}_copy"},  # noqa: F405
    }
    DATABASE_ROUTERS = ["tests.dbrouter.MigratedCopyRouter"]

# The test database's flush after each transactional test: DELETE instead of TRUNCATE
# (tests/pgbackend/base.py). The replica copy above shares the engine.
for _alias in DATABASES.values():  # noqa: F405
    if _alias["ENGINE"] == "qaportal.pgbackend":
        _alias["ENGINE"] = "tests.pgbackend"
        # The test process's sessions commit without waiting for the write-ahead log to
        # reach the disk, as the dry run's do (campaigns/simulate/run.py): a crash of the
        # server could lose the last commits of a test database, nothing else, and
        # every commit of a transactional test, a live server or a flush waited on an
        # fsync. Processes started on qaportal.settings (Celery workers, nodes) keep the
        # default.
        _alias.setdefault("OPTIONS", {})["options"] = "-c synchronous_commit=off"
