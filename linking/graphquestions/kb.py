"""Knowledge bases the generator asks, behind one interface: a local RDF file (rdflib;
offline and in tests) or a SPARQL endpoint (the Wikidata Query Service or any SPARQL
1.1 endpoint), both answering SELECT queries as rows of strings.

The endpoint client follows the Wikidata Query Service's etiquette: a descriptive
User-Agent, one query at a time per process, a 60 s limit, and a 429 answered by
waiting what Retry-After says before trying again.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import requests

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDFS_DOMAIN = "http://www.w3.org/2000/01/rdf-schema#domain"
RDFS_RANGE = "http://www.w3.org/2000/01/rdf-schema#range"


class KnowledgeBaseError(Exception):
    """The knowledge base could not answer (unreachable, refused, malformed)."""


class KnowledgeBase(ABC):
    @abstractmethod
    def select(self, sparql: str) -> list[dict[str, str]]:
        """Rows of a SELECT query: variable name -> value (IRIs and literals as text)."""

    def labels(self, iris: list[str]) -> dict[str, str]:
        """rdfs:label of each IRI that has one."""
        if not iris:
            return {}
        values = " ".join(f"<{i}>" for i in sorted(set(iris)))
        rows = self.select(
            f"SELECT ?s ?label WHERE {{ VALUES ?s {{ {values} }} ?s <{RDFS_LABEL}> ?label }}"
        )
        return {r["s"]: r["label"] for r in rows}


class RememberedAnswers(KnowledgeBase):
    """One run's view of a knowledge base: each distinct query is asked of ``kb`` once,
    and asked again it answers the rows it answered the first time.

    Generation asks the same queries over and over (the same template walked and
    grounded again, minimization's queries): on the tests' small graph, a run of 240
    attempts asks 393 queries, 192 of them distinct. A run reads the knowledge base as
    one snapshot; an endpoint is spared the repeated queries too. The rows are shared
    between the askers: read them, never change them."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._rows: dict[str, list[dict[str, str]]] = {}

    def select(self, sparql: str) -> list[dict[str, str]]:
        rows = self._rows.get(sparql)
        if rows is None:
            rows = self._rows[sparql] = self.kb.select(sparql)
        return rows


class RDFFileKnowledgeBase(KnowledgeBase):
    """A local RDF file (Turtle, N-Triples, RDF/XML...) loaded with rdflib."""

    def __init__(self, path: str | Path, *, format: str | None = None) -> None:
        import rdflib

        self.graph = rdflib.Graph()
        try:
            self.graph.parse(str(path), format=format)
        except Exception as exc:  # rdflib raises many kinds; the message says which
            raise KnowledgeBaseError(f"Cannot read the RDF file {path}: {exc}") from exc

    def select(self, sparql: str) -> list[dict[str, str]]:
        try:
            result = self.graph.query(sparql)
        except Exception as exc:  # a malformed query: say so, with the query's reason
            raise KnowledgeBaseError(f"The query failed: {exc}") from exc
        names = [str(v) for v in result.vars or []]
        return [
            {n: str(row[i]) for i, n in enumerate(names) if row[i] is not None}  # type: ignore[index]
            for row in result
        ]


class SparqlEndpointKnowledgeBase(KnowledgeBase):
    """A SPARQL 1.1 endpoint over HTTP, JSON results, one query at a time."""

    _lock = threading.Lock()

    def __init__(
        self,
        url: str,
        *,
        user_agent: str,
        timeout: float = 60.0,
        max_retries: int = 3,
        session: requests.Session | None = None,
    ) -> None:
        if not user_agent.strip():
            raise KnowledgeBaseError(
                "A SPARQL endpoint needs a User-Agent naming the tool and a contact "
                "(Wikidata's policy); set WIKIDATA_USER_AGENT."
            )
        self.url, self.user_agent, self.timeout = url, user_agent, timeout
        self.max_retries = max_retries
        self.session = session or requests.Session()

    def select(self, sparql: str) -> list[dict[str, str]]:
        with self._lock:  # the Query Service asks for one query at a time
            for attempt in range(self.max_retries + 1):
                try:
                    response = self.session.post(
                        self.url,
                        data={"query": sparql},
                        headers={
                            "Accept": "application/sparql-results+json",
                            "User-Agent": self.user_agent,
                        },
                        timeout=self.timeout,
                    )
                except requests.RequestException as exc:
                    raise KnowledgeBaseError(f"The SPARQL endpoint is unreachable: {exc}") from exc
                if response.status_code == 429 and attempt < self.max_retries:
                    time.sleep(_retry_after(response.headers.get("Retry-After")))
                    continue
                if response.status_code != 200:
                    raise KnowledgeBaseError(
                        f"The SPARQL endpoint answered {response.status_code}: "
                        f"{response.text[:300]}"
                    )
                return _rows(response.json())
        raise KnowledgeBaseError("The SPARQL endpoint kept answering 429 (too many requests).")


def _retry_after(value: str | None) -> float:
    try:
        return min(max(float(value or 1), 0.0), 120.0)
    except ValueError:
        return 5.0


def _rows(body: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {name: str(cell.get("value", "")) for name, cell in binding.items()}
        for binding in body.get("results", {}).get("bindings", [])
    ]
