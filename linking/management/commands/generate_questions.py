"""``python manage.py generate_questions --campaign SLUG --rdf FILE ...``: propose
questions from a knowledge base (GraphQuestions), stored for the requester's review."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.models import Campaign
from linking.graphquestions.generate import DEFAULT_MIN_COMMONNESS, SPEC_FUNCTIONS, Spec
from linking.graphquestions.kb import KnowledgeBaseError
from linking.graphquestions.services import generated_questions_propose, knowledge_base_open
from qaportal.errors import DomainError
from qaportal.progress import ProgressBar


def _range(text: str, what: str) -> tuple[int, int]:
    try:
        low, _, high = text.partition("-")
        pair = (int(low), int(high or low))
    except ValueError:
        raise CommandError(f"--{what} takes N or N-M, e.g. 1-3.") from None
    if pair[0] < 0 or pair[0] > pair[1]:
        raise CommandError(f"--{what}: {text!r} is not a range.")
    return pair


class Command(BaseCommand):
    help = "Generate candidate questions from an RDF file or a SPARQL endpoint."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--rdf", help="a local RDF file (Turtle, N-Triples, RDF/XML)")
        source.add_argument("--endpoint", help="a SPARQL endpoint URL")
        parser.add_argument("--classes", default="", help="class IRIs, comma-separated")
        parser.add_argument("--edges", default="1-3", help="structure complexity, e.g. 1-3")
        parser.add_argument(
            "--function",
            default="random",
            choices=SPEC_FUNCTIONS,
            help="random (default): per query, as Su et al. §4; or one family or kind",
        )
        parser.add_argument("--cardinality", default="1-1000000", help="answers, e.g. 1-5")
        parser.add_argument(
            "--min-commonness",
            type=float,
            default=DEFAULT_MIN_COMMONNESS,
            help="floor on log10 p(q) (default the paper's -40, Su et al. §7.1)",
        )
        parser.add_argument(
            "--no-commonness-floor", action="store_true", help="keep queries of any commonness"
        )
        parser.add_argument("--counts", help="a JSON file {iri: count} of component frequencies")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--count", type=int, default=10)

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign with slug {options['campaign']!r}.")
        counts = None
        if options["counts"]:
            try:
                counts = {
                    str(k): int(v)
                    for k, v in json.loads(Path(options["counts"]).read_text()).items()
                }
            except (OSError, ValueError, AttributeError) as exc:
                raise CommandError(f"--counts: {exc}") from None
        spec = Spec(
            classes=tuple(c.strip() for c in options["classes"].split(",") if c.strip()),
            edges=_range(options["edges"], "edges"),
            function=options["function"],
            cardinality=_range(options["cardinality"], "cardinality"),
            min_commonness=None if options["no_commonness_floor"] else options["min_commonness"],
        )
        bar = ProgressBar(
            label="generate questions",
            total=options["count"],
            unit="questions",
            stream=options.get("stderr"),
        )
        try:
            kb = knowledge_base_open(rdf=options["rdf"], endpoint=options["endpoint"])
            with bar:
                stored = generated_questions_propose(
                    campaign=campaign,
                    kb=kb,
                    spec=spec,
                    count=options["count"],
                    seed=options["seed"],
                    counts=counts,
                    source=options["rdf"] or options["endpoint"],
                    progress=bar.update,
                )
        except (KnowledgeBaseError, DomainError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            json.dumps(
                {
                    "campaign": campaign.slug,
                    "generated": len(stored),
                    "questions": [
                        {
                            "id": q.pk,
                            "canonical_question": q.canonical_question,
                            "answers": len(q.answers),
                            "characteristics": q.characteristics,
                            "status": q.status,
                        }
                        for q in stored
                    ],
                }
            )
        )
