"""Celery tasks of the linking app: thin interfaces to ``linking.services``.

Explicit names, ids as arguments, idempotent (acked late), enqueued after commit
(``delay_on_commit``). Each docstring says what it retries.
"""

from __future__ import annotations

from celery import shared_task

from linking.wikidata import WikidataUnavailable


@shared_task(
    name="linking.prefetch_stage",
    acks_late=True,
    autoretry_for=(WikidataUnavailable,),
    retry_backoff=30,
    retry_backoff_max=600,
    max_retries=5,
)
def prefetch_stage_task(stage_id: int) -> int:
    """Prepare linking stage ``stage_id`` (``linking.services.stage_prefetch``): span
    proposals, seen-entity pre-fills, prefetched suggestions, places for new entities;
    the number of items prepared.

    Idempotent: prepared items are skipped and fetched suggestions are cached.
    Retries ``WikidataUnavailable`` (Wikidata lagged or throttled past the client's own
    retries) with backoff; anything else is a bug to fix.
    """
    from campaigns.models import Stage
    from linking.services import stage_prefetch

    if not Stage.objects.filter(pk=stage_id).exists():
        return 0
    return stage_prefetch(stage_id=stage_id).items_prepared


@shared_task(name="linking.entity_agreement_check", acks_late=True)
def entity_agreement_check_task(hit_id: int) -> str:
    """Judge entity agreement on HIT ``hit_id`` after an answer was stored: escalate or
    decide its items (``linking.services.hit_entity_agreement_check``); the state.

    Idempotent (escalations are keyed ``entity_agreement:<hit>:<n>``, bonuses and
    resolutions per item). Retries nothing: the sweep re-checks what was missed.
    """
    from linking.services import hit_entity_agreement_check

    return hit_entity_agreement_check(hit_id=hit_id).state


@shared_task(name="linking.entity_agreement_sweep", acks_late=True)
def entity_agreement_sweep_task() -> int:
    """Re-check every HIT of entity-agreement stages with answers but unresolved items
    (for beat); the number of HITs checked. Idempotent; retries nothing."""
    from linking.services import entity_agreement_sweep

    return entity_agreement_sweep()
