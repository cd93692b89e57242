import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
application = get_wsgi_application()

from qaportal.db_timeout import statement_timeout_install  # noqa: E402
from qaportal.warmup import process_warm_up  # noqa: E402 - needs the app set up above

statement_timeout_install(role="web")
process_warm_up()
