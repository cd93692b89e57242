"""Linking's tables: the Wikidata response cache, entity-agreement state per item and
the agreed links a campaign has seen."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WikidataCacheEntry(models.Model):
    """One cached Wikidata answer, keyed by request kind and normalised parameters.

    ``kind`` is ``search`` (one wbsearchentities page; ``key`` a digest of the
    normalised query, language, limit and offset) or ``entity`` (one item from
    wbgetentities; ``key`` is ``<language>:<requested id>``, so a redirected id
    caches its target's data). Entries past ``expires_at`` are ignored and
    overwritten on the next fetch.
    """

    class Kind(models.TextChoices):
        SEARCH = "search", "search"
        ENTITY = "entity", "entity"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    key = models.CharField(max_length=200)
    params = models.JSONField(default=dict)
    response = models.JSONField(null=True)
    fetched_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "key"], name="linking_wdcache_kind_key"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"


class ResolutionStatus(models.TextChoices):
    PENDING = "pending", "Waiting for more annotators"
    RESOLVED = "resolved", "Resolved by agreement"
    REVIEW = "review", "Unresolved: in the requester's review queue"
    DECIDED = "decided", "Decided by the requester"


class EntityLinkResolution(models.Model):
    """Where entity agreement stands for one item of a linking stage.

    Written by ``linking.services.hit_entity_agreement_check`` after each stored
    answer (never by the page); ``links`` is the agreed set of links (``start``,
    ``end``, ``text``, ``qid``, ``none``) once resolved or decided. The item's own
    ``status`` is left to the campaign services: an unresolved item stays
    ``published`` and is found through ``status = review`` here.
    """

    item = models.OneToOneField(
        "campaigns.Item", on_delete=models.CASCADE, related_name="link_resolution"
    )
    stage = models.ForeignKey(
        "campaigns.Stage", on_delete=models.CASCADE, related_name="link_resolutions"
    )
    hit = models.ForeignKey("campaigns.HIT", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(
        max_length=16, choices=ResolutionStatus.choices, default=ResolutionStatus.PENDING
    )
    seen = models.BooleanField(
        default=False, help_text="Every span was pre-filled from an agreed link elsewhere."
    )
    annotators = models.PositiveIntegerField(default=0)
    links = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=40, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["stage", "status"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=ResolutionStatus.values),
                name="linking_resolution_status_known",
            ),
            models.CheckConstraint(
                condition=~models.Q(status__in=["resolved", "decided"])
                | models.Q(links__isnull=False),
                name="linking_resolution_resolved_has_links",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id}: {self.status}"


class AgreedLink(models.Model):
    """One link of a resolved item, kept per campaign for the seen-entity shortcut:
    a span with the same exact text elsewhere in the campaign is pre-filled with it.
    ``qid`` is None for "not in Wikidata" (NIL)."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="agreed_links"
    )
    item = models.ForeignKey("campaigns.Item", on_delete=models.CASCADE, related_name="+")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.CharField(max_length=500)
    qid = models.CharField(max_length=20, null=True, blank=True)  # noqa: DJ001 - NULL is NIL
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "start", "end"], name="linking_agreedlink_item_span"
            ),
        ]
        indexes = [models.Index(fields=["campaign", "text"])]

    def __str__(self) -> str:
        return f"{self.text!r} -> {self.qid or 'NIL'}"


class GeneratedQuestionStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    SENT = "sent", "Sent to paraphrasing"


class GeneratedQuestion(models.Model):
    """A candidate question generated from a knowledge base (``linking.graphquestions``):
    its graph query, the SPARQL and answers it gave, its characteristics and the
    canonical question, which the requester may edit, accept or reject before it is
    sent to a paraphrasing stage as an item."""

    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="generated_questions"
    )
    query = models.JSONField(help_text="The graph query (GraphQuery.to_dict()).")
    query_key = models.CharField(max_length=64, help_text="SHA-256 of the SPARQL.")
    sparql = models.TextField()
    answers = models.JSONField(default=list)
    answer_labels = models.JSONField(default=list)
    canonical_question = models.TextField()
    characteristics = models.JSONField(default=dict)
    entities = models.JSONField(default=list)
    status = models.CharField(
        max_length=16,
        choices=GeneratedQuestionStatus.choices,
        default=GeneratedQuestionStatus.PROPOSED,
    )
    source = models.CharField(max_length=500, blank=True, help_text="The knowledge base.")
    seed = models.IntegerField(default=0)
    item = models.OneToOneField(
        "campaigns.Item", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # GraphQuestions §7.1: each canonical question verified by at least two people
    # before paraphrasing: [{"user": id, "at": iso time}, ...], one per person.
    checks = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "query_key"], name="linking_generatedquestion_unique_query"
            ),
        ]
        indexes = [models.Index(fields=["campaign", "status"])]

    def __str__(self) -> str:
        return self.canonical_question[:80]
