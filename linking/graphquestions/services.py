"""Generated questions of a campaign: proposing them from a knowledge base, the
requester's edits and decisions, and sending the accepted ones to a paraphrasing
stage as items carrying their characteristics (which exports carry on)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from campaigns.models import Campaign, Item, ItemSource, Stage
from campaigns.tasktypes import task_type_get
from linking.graphquestions.generate import Spec, questions_propose
from linking.graphquestions.kb import (
    KnowledgeBase,
    RDFFileKnowledgeBase,
    SparqlEndpointKnowledgeBase,
)
from linking.models import GeneratedQuestion, GeneratedQuestionStatus
from qaportal.errors import DomainError

# GraphQuestions §7.1: each canonical question verified by at least two people.
CHECKS_REQUIRED = 2


def generated_item_external_id(question: GeneratedQuestion) -> str:
    """The paraphrasing item's id of a generated question: ``gq-`` and the first 16
    hex digits of its SPARQL's SHA-256 (stable, one per query; uploaded or sample ids
    such as ``gq-1`` cannot collide with it by numbering)."""
    return f"gq-{question.query_key[:16]}"


def knowledge_base_open(
    *, rdf: str | Path | None = None, endpoint: str | None = None
) -> KnowledgeBase:
    """A local RDF file, or a SPARQL endpoint (with ``WIKIDATA_USER_AGENT``)."""
    if bool(rdf) == bool(endpoint):
        raise DomainError("Give either an RDF file or a SPARQL endpoint.")
    if rdf:
        return RDFFileKnowledgeBase(rdf)
    return SparqlEndpointKnowledgeBase(
        str(endpoint), user_agent=getattr(settings, "WIKIDATA_USER_AGENT", "")
    )


def generated_questions_propose(
    *,
    campaign: Campaign,
    kb: KnowledgeBase,
    spec: Spec,
    count: int,
    seed: int,
    counts: dict[str, int] | None = None,
    source: str = "",
    progress: Callable[[int], None] | None = None,
) -> list[GeneratedQuestion]:
    """Generate up to ``count`` questions meeting ``spec`` and store the new ones as
    proposals (a query the campaign already has is not stored twice). Returns the
    stored rows of this run, new or not, in generation order."""
    candidates = questions_propose(
        kb=kb, spec=spec, count=count, seed=seed, counts=counts, progress=progress
    )
    rows = []
    for c in candidates:
        sparql = c.query.to_sparql()
        labels = kb.labels([a for a in c.answers if a.startswith("http")])
        rows.append(
            GeneratedQuestion(
                campaign=campaign,
                query=c.query.to_dict(),
                query_key=hashlib.sha256(sparql.encode()).hexdigest(),
                sparql=sparql,
                answers=c.answers,
                answer_labels=[labels.get(a, a) for a in c.answers],
                canonical_question=c.canonical,
                characteristics=c.characteristics,
                entities=c.entities,
                source=source[:500],
                seed=seed,
            )
        )
    GeneratedQuestion.objects.bulk_create(rows, ignore_conflicts=True)
    keys = [r.query_key for r in rows]
    found = {q.query_key: q for q in campaign.generated_questions.filter(query_key__in=keys)}
    return [found[k] for k in keys if k in found]


def generated_question_edit(
    *, question: GeneratedQuestion, canonical_question: str
) -> GeneratedQuestion:
    """Replace the canonical question's text (not once it was sent)."""
    text = " ".join(canonical_question.split())
    if not text:
        raise DomainError(
            "The canonical question cannot be empty.", errors={"canonical_question": ["required"]}
        )
    if len(text) > 2000:
        raise DomainError("At most 2,000 characters.", errors={"canonical_question": ["too long"]})
    if question.status == GeneratedQuestionStatus.SENT:
        raise DomainError("This question was already sent to paraphrasing.")
    question.canonical_question = text
    question.save(update_fields=["canonical_question"])
    return question


def generated_questions_decide(
    *, questions: Iterable[GeneratedQuestion], accept: bool, user: AbstractBaseUser
) -> int:
    """Check (accept) or reject proposals (sent ones stay as they are); how many changed.

    GraphQuestions §7.1: every canonical question was verified by at least two
    people before paraphrasing. An acceptance is one person's check; a question
    becomes ``accepted`` (sendable) at ``CHECKS_REQUIRED`` checks by different
    people and stays ``proposed`` until then. A rejection by anyone rejects it and
    clears its checks. Locking: the questions' rows.
    """
    ids = [q.pk for q in questions]
    now = timezone.now()
    changed = 0
    with transaction.atomic():
        for q in GeneratedQuestion.objects.select_for_update().filter(pk__in=ids).order_by("pk"):
            if q.status == GeneratedQuestionStatus.SENT:
                continue
            if not accept:
                q.status, q.checks = GeneratedQuestionStatus.REJECTED, []
            else:
                checks = [c for c in q.checks or [] if c.get("user") != user.pk]
                checks.append({"user": user.pk, "at": now.isoformat()})
                q.checks = checks
                enough = len({c["user"] for c in checks}) >= CHECKS_REQUIRED
                q.status = (
                    GeneratedQuestionStatus.ACCEPTED if enough else GeneratedQuestionStatus.PROPOSED
                )
            q.decided_by, q.decided_at = user, now  # type: ignore[assignment]
            q.save(update_fields=["status", "checks", "decided_by", "decided_at"])
            changed += 1
    return changed


def _item_data(q: GeneratedQuestion) -> dict[str, Any]:
    ch = q.characteristics
    data = {
        "canonical_question": q.canonical_question,
        "characteristics": {
            "edges": int(ch.get("edges", 0)),
            "function": ch.get("function", "none"),
            "commonness": float(ch.get("commonness", 0.0)),
            "answer_cardinality": int(ch.get("answer_cardinality", 0)),
        },
        "entities": [
            {"label": e["label"], "forms": list(e.get("forms") or [e["label"]])} for e in q.entities
        ],
        "answer": [str(a) for a in q.answer_labels],
        "sparql": q.sparql,
        "graph_query": q.query,
    }
    if ch.get("function_kind"):  # which of the nine functions (§4)
        data["characteristics"]["function_kind"] = str(ch["function_kind"])
    return data


def generated_questions_send(*, campaign: Campaign, stage: Stage) -> int:
    """The campaign's accepted questions become items of ``stage`` (a paraphrasing
    stage of the same campaign), once each, all or none. Returns how many were sent."""
    if stage.campaign_id != campaign.pk:
        raise DomainError(
            "The stage is not one of this campaign's.", errors={"stage": ["other campaign"]}
        )
    if not task_type_get(stage.task_type).takes_generated_questions:
        raise DomainError(
            f"Generated questions go to a paraphrasing stage, not {stage.task_type!r}.",
            errors={"stage": ["wrong task type"]},
        )
    task_type = task_type_get(stage.task_type)
    with transaction.atomic():
        accepted = list(
            campaign.generated_questions.select_for_update()
            .filter(status=GeneratedQuestionStatus.ACCEPTED)
            .order_by("pk")
        )
        ids = {generated_item_external_id(q): q for q in accepted}
        taken = sorted(
            Item.objects.filter(stage=stage, external_id__in=list(ids)).values_list(
                "external_id", flat=True
            )
        )
        if taken:
            raise DomainError(
                f"The stage already has items with the ids {', '.join(taken[:5])}; rename or "
                "remove them before sending.",
                errors={"stage": [f"item id taken: {t}" for t in taken[:5]]},
            )
        for external_id, q in ids.items():
            if len({c.get("user") for c in q.checks or []}) < CHECKS_REQUIRED:
                raise DomainError(
                    f"Question {q.pk} was checked by fewer than {CHECKS_REQUIRED} people "
                    "(GraphQuestions §7.1); have a second person accept it first.",
                    errors={"questions": [f"{q.pk}: unchecked"]},
                )
            data = _item_data(q)
            errors = task_type.validate_item(data)
            if errors:
                raise DomainError(f"Question {q.pk} does not make a valid item: {errors[0]}")
            item = Item.objects.create(
                stage=stage, external_id=external_id, data=data, source=ItemSource.GENERATED
            )
            q.item = item
            q.status = GeneratedQuestionStatus.SENT
            q.save(update_fields=["item", "status"])
    return len(accepted)
