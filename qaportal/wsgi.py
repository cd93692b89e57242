import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
application = get_wsgi_application()

from qaportal.warmup import process_warm_up  # noqa: E402 - needs the app set up above

process_warm_up()
