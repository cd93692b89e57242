from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0008_provider_sync_cursor"),
    ]

    operations = [
        migrations.AddField(
            model_name="stage",
            name="show_reward_to_local_workers",
            field=models.BooleanField(default=False),
        ),
    ]
