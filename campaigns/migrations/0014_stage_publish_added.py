from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0013_assignment_no_single_column_fk_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="stage",
            name="publish_added",
            field=models.BooleanField(default=True),
        ),
    ]
