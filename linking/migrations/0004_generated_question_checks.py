from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("linking", "0003_generated_questions")]

    operations = [
        migrations.AddField(
            model_name="generatedquestion",
            name="checks",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
