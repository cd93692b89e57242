import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")
application = get_wsgi_application()

from qaportal.db_timeout import statement_timeout_install  # noqa: E402
from qaportal.warmup import process_warm_up  # noqa: E402 - needs the app set up above

statement_timeout_install(role="web")
process_warm_up()

# What start-up built (modules, URLconf, settings, templates' engine) lives as long as the
# process: out of the collector's sight, a full collection no longer walks it again
# (some 40 ms each on a web process, every few hundred requests).
gc.collect()
gc.freeze()
