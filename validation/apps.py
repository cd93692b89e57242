from django.apps import AppConfig


class ValidationConfig(AppConfig):
    name = "validation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from campaigns.design.stage_rules import stage_rule_checks_register
        from validation.stage_checks import CHECKS
        from validation.triggers import subscribe

        stage_rule_checks_register(CHECKS)
        subscribe()
