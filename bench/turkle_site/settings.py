"""Turkle site settings for the benchmark (mirrors upstream turkle_site/settings.py)."""

import os

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
X_FRAME_OPTIONS = "SAMEORIGIN"
SECRET_KEY = os.environ.get("SECRET_KEY", "bench-turkle-not-secret-0123456789abcdefghijklmnop")

TURKLE_SITE_NAME = "Turkle"
TURKLE_TEMPLATE_LIMIT = 64
TURKLE_AUTO_ACCEPT_DEFAULT = False
TURKLE_EMAIL_ENABLED = False
META_TAGS: list = []

STATIC_ROOT = ""
STATIC_URL = "/static/"

# Persistent connections, as qaportal uses (conn_max_age=60): same footing for both.
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("TURKLE_DB_NAME", "bench_turkle"),
        "USER": os.environ.get("TURKLE_DB_USER", "postgres"),
        "HOST": os.environ.get("TURKLE_DB_HOST", "127.0.0.1"),
        "PORT": os.environ.get("TURKLE_DB_PORT", "5432"),
        "CONN_MAX_AGE": int(os.environ.get("TURKLE_CONN_MAX_AGE", "60")),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = True
USE_TZ = True

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.contrib.auth.context_processors.auth",
                "django.template.context_processors.debug",
                "django.template.context_processors.i18n",
                "django.template.context_processors.media",
                "django.template.context_processors.request",
                "django.template.context_processors.static",
                "django.template.context_processors.tz",
                "django.contrib.messages.context_processors.messages",
                "turkle.utils.turkle_vars",
            ],
        },
    },
]

MIDDLEWARE = (
    "django.middleware.common.CommonMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)

ROOT_URLCONF = "turkle_site.urls"
WSGI_APPLICATION = "turkle_site.wsgi.application"

INSTALLED_APPS = (
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # turkle before admin so its registration templates win (as upstream)
    "turkle",
    "django.contrib.admin",
    "rest_framework",
    "rest_framework.authtoken",
    "turkle.api",
    "guardian",
    "djaa_list_filter2",
)

AUTHENTICATION_BACKENDS = (
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
)

REST_FRAMEWORK = {
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
}

DATA_UPLOAD_MAX_MEMORY_SIZE = 104857600
FILE_UPLOAD_MAX_MEMORY_SIZE = 104857600

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "index"
LOGOUT_REDIRECT_URL = "index"

# Upstream logs turkle INFO lines only in its Docker image; WARNING here, like qaportal's bench run.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
