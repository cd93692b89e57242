"""Events: a lower room announces what happened, higher rooms listen.

A room that must not call up (work must not import linking, validation or the
platforms) declares an :class:`Event` and announces it; the rooms above subscribe
in their ``AppConfig.ready()``. Two kinds of subscriber:

- ``subscribe(handler)``: called at once, inside the announcer's transaction, with
  the announcement's keyword arguments (model instances allowed). It takes part in
  that transaction: if it raises, the announcer's work is rolled back too.
- ``subscribe_task(task_name)``: the Celery task ``task_name`` runs *after commit*,
  through the transactional outbox (:mod:`qaportal.outbox`): a row is written in
  the announcer's transaction and dispatched when it commits, then re-dispatched by
  beat until the task has run. Its arguments are the announcement's ``ids`` (plain
  JSON); the task must be idempotent.

Subscribers run in the order they subscribed. Announcing an event nobody listens
to does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from qaportal import outbox

Handler = Callable[..., Any]


@dataclass
class Event:
    """One thing that happens in a room, e.g. ``answer_stored``."""

    name: str
    doc: str = ""
    handlers: list[Handler] = field(default_factory=list)
    tasks: list[tuple[str, Callable[..., list[Any] | None]]] = field(default_factory=list)

    def subscribe(self, handler: Handler) -> Handler:
        """Call ``handler(**kwargs)`` inside the announcer's transaction (idempotent)."""
        if handler not in self.handlers:
            self.handlers.append(handler)
        return handler

    def subscribe_task(
        self, task_name: str, *, args: Callable[..., list[Any] | None] | None = None
    ) -> None:
        """Run Celery task ``task_name`` after commit, through the outbox.

        ``args(**kwargs)`` turns the announcement into the task's JSON arguments, or
        None to skip this announcement; by default the task gets ``kwargs["ids"]``.
        """
        if all(name != task_name for name, _ in self.tasks):
            self.tasks.append((task_name, args or _ids))

    def announce(self, **kwargs: Any) -> None:
        """Tell every subscriber; call it inside the transaction that made the change."""
        for handler in list(self.handlers):
            handler(**kwargs)
        for task_name, make_args in list(self.tasks):
            task_args = make_args(**kwargs)
            if task_args is not None:
                outbox.task_after_commit(task_name, *task_args)

    def announce_many(self, announcements: list[dict[str, Any]]) -> None:
        """``announce(**kwargs)`` for each of ``announcements``, in order, with the
        outbox messages of each task subscriber written in one statement."""
        for kwargs in announcements:
            for handler in list(self.handlers):
                handler(**kwargs)
        for task_name, make_args in list(self.tasks):
            runs = [make_args(**kwargs) for kwargs in announcements]
            outbox.tasks_after_commit(task_name, [args for args in runs if args is not None])


def _ids(**kwargs: Any) -> list[Any]:
    return list(kwargs.get("ids") or [])


__all__ = ["Event"]
