"""The production router, except that the tests' replica (a plain second database, not
a streaming standby that gets its schema by replication) is migrated too."""

from typing import Any

from qaportal.dbrouter import REPLICA, PrimaryReplicaRouter


class MigratedCopyRouter(PrimaryReplicaRouter):
    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == REPLICA or super().allow_migrate(db, app_label, **hints)
