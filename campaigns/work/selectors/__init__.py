"""Work's reads, one module per idea: who may work on a stage (``access``), the next
HIT for a worker (``next_hit``), loading the worker pages' rows (``loading``), the
API's HIT lists (``hits``) and the review queue (``review``). Selectors never import
services (``.importlinter``'s ``selectors-read`` contract)."""
