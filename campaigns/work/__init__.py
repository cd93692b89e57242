"""The work room: HITs and assignments. Publish, allocate, submit, return, expire,
decide, hand off.

Locking, in the order it is taken (always this order, so no two requests wait
on each other in a cycle): campaign row (``campaign_start``) → stage row
(``stage_publish``) → worker row (``assignment_accept``) → one HIT row
(``assignment_accept``, which reads the worker's current assignment again after that
lock, on a later statement's snapshot: the locking statement's own read predates its
wait for the row). Submit, return, expiry and decisions lock assignment rows;
return and expiry then update the HIT rows of the places they free. Nothing that
holds a HIT row waits on an assignment row, so the two orders cannot cross.

A HIT's free places are counted in ``HIT.places_left``: taken (-1) by
``assignment_accept``, given back (+1) by ``assignment_return`` and by expiry
(``assignments_expire``, or a submission that arrives too late), always in the
transaction that changes the assignment. Its CHECK constraint (never below 0)
and ``assignment_one_per_worker_per_hit`` back the allocation.

The code lives by idea: ``publishing`` (HITs made from pending items),
``allocation`` (accept), ``submission`` (submit, telemetry), ``lifecycle`` (return,
expiry, more places), ``decisions`` (``assignment_decide``: the one decision entry
point), ``handoff`` (accepted output into the next stage), ``invites`` (the local
workforce's links and grants), ``events`` (what the room announces), and its reads in
``selectors`` (``access``: who may work on a stage; ``next_hit``: the next HIT for a
worker; ``loading``: the worker pages' rows; ``hits``; ``review``). Paid platforms
reuse publishing and submission; their decisions and payments are platform operations
(``campaigns.platforms``).
"""
