"""The review rules' decisions write fewer index entries and keep the workers' counters
on their pages (issue 39, item 5).

A decision changes ``Assignment.status``, which indexes read, so PostgreSQL writes the
row's new version to every index whose condition it meets. Two of them held mostly
empty keys: ``decided_by`` (a rule's decision has none) and the provider's assignment id
(a local assignment has none). Both are now partial, on the rows that have the value:
every query by a user or by a provider's id still finds its rows (``decided_by_id = x``
and ``provider_assignment_id = x`` imply the key is set), and NULLs never conflicted in
the unique index.

``campaigns_worker`` is stored at fillfactor 50: each batch of decisions updates the
counters of some hundreds of workers, and with half of each page free the new row
versions stay on their page (a HOT update: no new index entries) and the page is pruned
as soon as it is half full. At fillfactor 100 most updates moved the row to another page
and wrote all five of the table's indexes again. PostgreSQL only; the rows move to the
free space as they are next written.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def worker_fillfactor(fillfactor: int):
    def apply(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            table = apps.get_model("campaigns", "Worker")._meta.db_table
            schema_editor.execute(
                f"ALTER TABLE {schema_editor.quote_name(table)} SET (fillfactor = {fillfactor})"
            )

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0019_worker_summaries"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="assignment",
            name="assignment_provider_id_unique",
        ),
        migrations.AlterField(
            model_name="assignment",
            name="decided_by",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddIndex(
            model_name="assignment",
            index=models.Index(
                condition=models.Q(("decided_by__isnull", False)),
                fields=["decided_by"],
                name="assignment_decided_by",
            ),
        ),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                condition=models.Q(("provider_assignment_id__isnull", False)),
                fields=("provider", "provider_assignment_id"),
                name="assignment_provider_id_unique",
            ),
        ),
        migrations.RunPython(worker_fillfactor(50), worker_fillfactor(100)),
    ]
