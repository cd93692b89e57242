from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0014_provider_choices_from_registry"),
    ]

    operations = [
        migrations.AddField(
            model_name="stage",
            name="publish_added",
            field=models.BooleanField(default=True),
        ),
    ]
