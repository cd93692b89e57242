"""The Mechanical Turk provider: ``MTurkClient`` (boto3) and ``MTurkProvider`` (mapping)."""

from campaigns.platforms.mturk.checks import short_worker
from campaigns.platforms.mturk.client import MTurkClient
from campaigns.platforms.mturk.payloads import publish_payload
from campaigns.platforms.mturk.provider import MTurkProvider, assignment_record
from campaigns.platforms.mturk.xml import (
    answers_parse,
    external_question,
    qualification_requirements,
    worker_page_url,
)

__all__ = [
    "MTurkClient",
    "MTurkProvider",
    "answers_parse",
    "assignment_record",
    "external_question",
    "publish_payload",
    "qualification_requirements",
    "short_worker",
    "worker_page_url",
]
