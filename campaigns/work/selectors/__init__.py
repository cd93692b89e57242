"""Work's reads, one module per idea: who may work on a stage (``access``), the next
HIT for a worker (``next_hit``), loading the worker pages' rows (``loading``), the
API's HIT lists (``hits``), the review queue (``review``) and the assignment counters
(``counts``). Selectors never import
services (``.importlinter``'s ``selectors-read`` contract)."""
