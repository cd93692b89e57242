"""MTurk's XML and structures: ExternalQuestion, QuestionFormAnswers, qualification
requirements.

Answers come from the network, so they are parsed with ``defusedxml`` (no entity
expansion, no external DTD): a hostile answer cannot blow up memory or reach a file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any
from xml.sax.saxutils import escape

from defusedxml import ElementTree as SafeET

from campaigns.platforms.base import PermanentProviderError

logger = logging.getLogger(__name__)

WORKER_PAGE_PATH = "/w/mturk/"
EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/"
    "ExternalQuestion.xsd"
)
# MTurk's system qualification types.
APPROVAL_RATE = "000000000000000000L0"
NUMBER_APPROVED = "00000000000000000040"
LOCALE = "00000000000000000071"
ADULT = "00000000000000000060"
MASTERS = {True: "2ARFPLSP75KLA8M8DH1HTEQFJHSNUR", False: "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH"}
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_SUBDIVISION = re.compile(r"^[A-Z]{2}$")


def worker_page_url(site_url: str) -> str:
    """The HTTPS address of qaportal's MTurk worker page (MTurk appends ``assignmentId``,
    ``hitId``, ``workerId`` and ``turkSubmitTo``)."""
    base = site_url.rstrip("/")
    if not base.startswith("https://"):
        raise PermanentProviderError(
            f"SITE_URL must be an https:// address for MTurk's ExternalQuestion (is {base!r})."
        )
    return base + WORKER_PAGE_PATH


def external_question(url: str, *, frame_height: int = 0) -> str:
    """The ExternalQuestion XML showing ``url`` in MTurk's frame (height 0: the whole window)."""
    if len(url) > 2000:
        raise PermanentProviderError("The worker page URL is longer than MTurk's 2000 characters.")
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL>"
        f"<FrameHeight>{int(frame_height)}</FrameHeight>"
        "</ExternalQuestion>"
    )


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def answers_parse(xml: str | None) -> dict[str, Any]:
    """A QuestionFormAnswers document as ``{question id: value}``.

    ``FreeText`` gives a string; ``SelectionIdentifier`` a list of the selected ids
    (with ``OtherSelectionText`` as ``{"selections": [...], "other": text}``);
    an uploaded file ``{"file_key": ..., "size": n}``. A question answered twice keeps
    the last answer. Malformed or hostile XML raises ``ValueError``.
    """
    if not xml or not xml.strip():
        return {}
    try:
        root = SafeET.fromstring(xml)
    except Exception as exc:  # ParseError, or defusedxml's refusals (entities, DTDs)
        raise ValueError(f"Unreadable QuestionFormAnswers: {type(exc).__name__}") from None
    if _local(root.tag) != "QuestionFormAnswers":
        raise ValueError(f"Expected QuestionFormAnswers, got {_local(root.tag)!r}.")
    answers: dict[str, Any] = {}
    for answer in root:
        if _local(answer.tag) != "Answer":
            continue
        fields: dict[str, list[str]] = {}
        for child in answer:
            fields.setdefault(_local(child.tag), []).append(child.text or "")
        qid = (fields.get("QuestionIdentifier") or [""])[0].strip()
        if not qid:
            continue
        if "FreeText" in fields:
            answers[qid] = fields["FreeText"][0]
        elif "UploadedFileKey" in fields:
            size = (fields.get("UploadedFileSizeInBytes") or ["0"])[0]
            answers[qid] = {
                "file_key": fields["UploadedFileKey"][0],
                "size": int(size) if size.isdigit() else None,
            }
        elif "OtherSelectionText" in fields:
            answers[qid] = {
                "selections": fields.get("SelectionIdentifier", []),
                "other": fields["OtherSelectionText"][0],
            }
        else:
            answers[qid] = fields.get("SelectionIdentifier", [])
    return answers


def _locale_values(values: Iterable[str]) -> list[dict[str, str]]:
    out = []
    for raw in values:
        country, _, subdivision = str(raw).upper().partition("-")
        if not _COUNTRY.match(country) or (subdivision and not _SUBDIVISION.match(subdivision)):
            raise PermanentProviderError(
                f"Locale {raw!r} is not an ISO country code (US) or country-subdivision (US-CA)."
            )
        out.append({"Country": country, **({"Subdivision": subdivision} if subdivision else {})})
    return out


def qualification_requirements(
    requirements: Iterable[Mapping[str, Any]],
    *,
    sandbox: bool,
    custom: Mapping[int, str] | None = None,
) -> list[dict[str, Any]]:
    """MTurk ``QualificationRequirements`` from a stage's ``qualification_requirements``.

    Shapes: ``{"kind": "approval_rate", "min": 95}``; ``{"kind": "approved_count",
    "min": 100}``; ``{"kind": "locale", "countries": ["US", "CA", "US-NY"]}``
    (``"exclude": true`` for NotIn); ``{"kind": "adult"}``; ``{"kind": "masters"}``
    (sandbox or production id); a custom one ``{"qualification_type_id": <qaportal
    id>, "min": 1}`` or ``{"mturk_qualification_id": "3X..."}``, ``custom`` mapping
    qaportal ids to MTurk's. Unknown kinds are refused (a requirement silently
    dropped would open the HITs to everyone).
    """
    custom = custom or {}
    out: list[dict[str, Any]] = []
    for req in requirements:
        kind = req.get("kind")
        if kind == "approval_rate":
            out.append(_compare(APPROVAL_RATE, int(req.get("min", 0))))
        elif kind == "approved_count":
            out.append(_compare(NUMBER_APPROVED, int(req.get("min", 0))))
        elif kind in ("locale", "country"):
            values = _locale_values(req.get("countries", req.get("values", [])))
            if not values:
                continue
            comparator = "NotIn" if req.get("exclude") else "In"
            out.append(
                {
                    "QualificationTypeId": LOCALE,
                    "Comparator": comparator,
                    "LocaleValues": values,
                    "ActionsGuarded": "DiscoverPreviewAndAccept",
                }
            )
        elif kind == "adult":
            out.append(_compare(ADULT, 1, comparator="EqualTo"))
        elif kind == "masters":
            out.append(
                {
                    "QualificationTypeId": MASTERS[sandbox],
                    "Comparator": "Exists",
                    "ActionsGuarded": "DiscoverPreviewAndAccept",
                }
            )
        elif req.get("mturk_qualification_id") or req.get("qualification_type_id") is not None:
            mturk_id = req.get("mturk_qualification_id") or custom.get(
                int(req["qualification_type_id"])
            )
            if not mturk_id:
                raise PermanentProviderError(
                    f"Qualification {req.get('qualification_type_id')} has no MTurk "
                    "qualification type yet (create it first)."
                )
            if "min" in req:
                out.append(_compare(str(mturk_id), int(req["min"])))
            else:
                out.append(
                    {
                        "QualificationTypeId": str(mturk_id),
                        "Comparator": "Exists",
                        "ActionsGuarded": "DiscoverPreviewAndAccept",
                    }
                )
        else:
            raise PermanentProviderError(f"Requirement kind {kind!r} has no MTurk equivalent.")
    return out


def _compare(type_id: str, value: int, *, comparator: str = "GreaterThanOrEqualTo") -> dict:
    return {
        "QualificationTypeId": type_id,
        "Comparator": comparator,
        "IntegerValues": [value],
        "ActionsGuarded": "DiscoverPreviewAndAccept",
    }
