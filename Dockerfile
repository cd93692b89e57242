# qaportal image: one image for web (gunicorn), worker and beat (celery).
# Build: docker build -t qaportal .   Run: see docker-compose.yml and docs/deployment.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    QAPORTAL_VAR_DIR=/app/var \
    STATIC_ROOT=/app/staticfiles \
    PORT=8000

WORKDIR /app

# pg_dump and pg_restore (PostgreSQL 15's, as the compose stack's server) for
# `manage.py backup` and `manage.py restore`.
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client \
    && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 qaportal \
    && useradd --system --uid 10001 --gid qaportal --home-dir /app --shell /usr/sbin/nologin qaportal

# Dependencies first, from the pins in pyproject.toml, so that a code change
# does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

COPY . .
RUN pip install --no-deps -e . \
    && SECRET_KEY=build-only-not-a-secret ALLOWED_HOSTS=build.invalid DEBUG=0 \
       python manage.py collectstatic --noinput \
    && mkdir -p /app/var \
    && chown -R qaportal:qaportal /app/var

USER qaportal
EXPOSE 8000

# /healthz must be asked under an allowed host name: take the first of ALLOWED_HOSTS.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request as u; h = os.environ.get('ALLOWED_HOSTS', '').split(',')[0].strip().lstrip('.'); h = 'localhost' if h in ('', '*') else h; r = u.urlopen(u.Request('http://127.0.0.1:' + os.environ.get('PORT', '8000') + '/healthz', headers={'Host': h}), timeout=4); sys.exit(0 if r.status == 200 else 1)"]

CMD ["sh", "-c", "exec gunicorn qaportal.wsgi --bind 0.0.0.0:${PORT} --workers ${WEB_CONCURRENCY:-3} --timeout 60 --access-logfile - --logger-class qaportal.gunicorn_logging.RedactingLogger"]
