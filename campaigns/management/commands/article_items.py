"""Add a plain article to a WhyQA stage as items (``campaigns.services.articles``).

manage.py article_items 12 black-death.txt                      # why-question writing
manage.py article_items 13 black-death.txt --questions qs.txt   # one item per question
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.models import Stage
from campaigns.services.articles import article_items_upload
from campaigns.services.errors import DomainError


class Command(BaseCommand):
    help = "Split a plain article into numbered sentences and add it to a stage as items."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("stage", type=int, help="Id of the stage.")
        parser.add_argument("article", type=Path, help="The article as UTF-8 plain text.")
        parser.add_argument("--title", default="", help="Instead of the first line.")
        parser.add_argument("--article-id", default="", help="Default: from the title.")
        parser.add_argument(
            "--questions", type=Path, help="A file of questions, one per line (answering)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        stage = Stage.objects.filter(pk=options["stage"]).first()
        if stage is None:
            raise CommandError(f"No stage {options['stage']}.")
        try:
            text = options["article"].read_text(encoding="utf-8")
            questions = (
                options["questions"].read_text(encoding="utf-8").splitlines()
                if options["questions"]
                else []
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read the file: {exc}") from exc
        try:
            made = article_items_upload(
                stage=stage,
                text=text,
                title=options["title"],
                article_id=options["article_id"],
                questions=questions,
            )
        except DomainError as exc:
            raise CommandError(f"{exc} {exc.errors or ''}".strip()) from exc
        summary = {
            "stage": stage.pk,
            "article_id": made.article_id,
            "title": made.title,
            "sentences": made.sentences,
            "created": made.upload.created,
            "items": made.external_ids,
        }
        self.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False))
