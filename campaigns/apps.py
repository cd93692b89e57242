from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The wiring of the rooms: platforms answer platform_for, rooms subscribe to
        # the events of the rooms below them (campaigns/subscriptions.py).
        from campaigns.platforms.registry import platforms_register
        from campaigns.subscriptions import subscribe

        platforms_register()
        subscribe()
