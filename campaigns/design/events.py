"""What the design room announces. The rooms above subscribe in ``AppConfig.ready()``.

Each event is announced inside the transaction that made the change; see
``qaportal.events``.
"""

from __future__ import annotations

from qaportal.events import Event

items_added = Event(
    "items_added",
    """Items were stored in a stage (kwargs: ``stage``, ``campaign``: the campaign row,
    locked by the announcer). Items added to a pilot or live stage are published.""",
)

__all__ = ["items_added"]
