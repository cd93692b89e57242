from django.apps import AppConfig


class FrontendConfig(AppConfig):
    name = "frontend"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from campaigns.platforms.task_page import page_part_register
        from frontend.worker.adversarial import adversarial_page_part

        # Connects the login rate limiter's signal receivers.
        from qaportal import login_limit  # noqa: F401

        # The work page's adversarial panel (model in the loop), under the task.
        page_part_register(adversarial_page_part)
