from django.apps import AppConfig


class FrontendConfig(AppConfig):
    name = "frontend"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Connects the login rate limiter's signal receivers.
        from qaportal import login_limit  # noqa: F401
