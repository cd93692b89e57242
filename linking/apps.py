from django.apps import AppConfig


class LinkingConfig(AppConfig):
    name = "linking"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from linking.subscriptions import subscribe

        subscribe()
