"""Items from a plain article: the WhyQA helper that splits an article into numbered
sentences (``campaigns.tasktypes.articles``) and stores what the stage's task type makes
of it: the article for question writing, one answering item per question for sentence
selection (Mrozinski, Whittaker and Furui, ACL-08: HLT, §2.2.1-2.2.2, §3)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from campaigns.models import Stage
from campaigns.services.errors import DomainError
from campaigns.services.items import ItemUploadResult, items_upload
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.articles import article_parse

MAX_QUESTIONS = 500


@dataclass(frozen=True)
class ArticleItems:
    upload: ItemUploadResult
    article_id: str
    title: str
    sentences: int
    external_ids: list[str]


def article_items_upload(
    *,
    stage: Stage,
    text: str,
    title: str = "",
    article_id: str = "",
    questions: list[str] | None = None,
) -> ArticleItems:
    """Split ``text`` into sections, paragraphs and sentences and add the items the
    stage's task type makes of it, through ``items_upload`` (validated, all or nothing).

    ``DomainError`` when the task type takes no articles, the text has no sentence, or
    a sentence-selection stage gets no question. Ids: the article id for the article,
    ``<article id>/q<n>`` per question; a second upload of the same ids is refused.
    """
    kind = task_type_get(stage.task_type)
    wanted = [q.strip() for q in questions or [] if q and q.strip()]
    if len(wanted) > MAX_QUESTIONS:
        raise DomainError(f"At most {MAX_QUESTIONS} questions per article.")
    try:
        article = article_parse(text, title=title.strip(), article_id=article_id.strip())
    except ValueError as exc:
        raise DomainError(str(exc), errors={"text": [str(exc)]}) from None
    rows = kind.items_from_article(article=article, questions=wanted)
    if rows is None:
        raise DomainError(
            f"“{stage.name}” ({kind.label}) does not take articles: upload to a "
            "why-question or a sentence-selection stage.",
            errors={"stage": ["does not take articles"]},
        )
    if not rows:
        raise DomainError(
            "Give the questions to answer about this article, one per line.",
            errors={"questions": ["at least one question"]},
        )
    content = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode()
    upload = items_upload(stage=stage, content=content, filename="article.jsonl")
    count = sum(len(p) for s in article["sections"] for p in s["paragraphs"])
    return ArticleItems(
        upload=upload,
        article_id=str(article["article_id"]),
        title=str(article["title"]),
        sentences=count,
        external_ids=[str(r["external_id"]) for r in rows],
    )
