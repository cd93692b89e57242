"""Linking's tables: the Wikidata response cache."""

from __future__ import annotations

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
