"""The Mechanical Turk provider: ``MTurkClient`` (boto3) and ``MTurkProvider`` (mapping)."""

from campaigns.providers.mturk.checks import short_worker
from campaigns.providers.mturk.client import MTurkClient
from campaigns.providers.mturk.payloads import publish_payload
from campaigns.providers.mturk.provider import MTurkProvider, assignment_record
from campaigns.providers.mturk.xml import (
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
