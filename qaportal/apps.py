from django.apps import AppConfig


class QaportalConfig(AppConfig):
    name = "qaportal"
    verbose_name = "qaportal (shared infrastructure)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Read-your-writes with a replica: each request and worker task starts unmarked.
        from qaportal.dbrouter import replica_signals_install

        replica_signals_install()
