"""What the work room announces. The rooms above subscribe in ``AppConfig.ready()``.

Each event is announced inside the transaction that made the change; see
``qaportal.events`` for in-transaction handlers and after-commit tasks (outbox).
"""

from __future__ import annotations

from qaportal.events import Event

answer_stored = Event(
    "answer_stored",
    """A worker's answer was stored (kwargs: ``assignment``, ``stage``, ``task_type``).
    Quizzes are scored, review rules and entity agreement are queued.""",
)

answer_submitting = Event(
    "answer_submitting",
    """A worker submits an open assignment (kwargs: ``assignment``, locked, its HIT and
    stage loaded with it; ``stage``): before anything is stored, a handler may refuse
    by raising ``campaigns.work.submission.SubmitRefusedError`` (the page comes back
    with its message). Handlers that query must do so only for the stages they concern:
    every submission on every workforce announces it.""",
)

assignment_decided = Event(
    "assignment_decided",
    """An assignment was approved or rejected, here or on its platform (kwargs:
    ``assignment_id``, ``approved``). Approved work is handed off to the next stage.""",
)

stage_published = Event(
    "stage_published",
    """HITs of a stage were made (kwargs: ``stage``). Linking stages prefetch candidates.""",
)

__all__ = ["answer_stored", "answer_submitting", "assignment_decided", "stage_published"]
