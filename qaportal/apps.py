from django.apps import AppConfig


class QaportalConfig(AppConfig):
    name = "qaportal"
    verbose_name = "qaportal (shared infrastructure)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from qaportal import csrf_mask

        csrf_mask.install()
