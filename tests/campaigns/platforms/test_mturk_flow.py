"""MTurk end to end against the fake: publish → sync → approve → bonus, with the real
boto3 client (botocore validates every request against MTurk's service model)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from campaigns.models import (
    HIT,
    AssignmentStatus,
    HITStatus,
    LedgerEntry,
    LedgerStatus,
    OperationState,
    ProviderSyncCursor,
)
from campaigns.platforms.mturk.checks import deployment_tag
from campaigns.platforms.mturk.sync import mturk_hits_sync
from campaigns.platforms.mturk.xml import APPROVAL_RATE, LOCALE, answers_parse
from campaigns.platforms.publishing import stage_provider_publish
from campaigns.platforms.review import (
    IdentityUnconfirmedError,
    paid_assignment_approve,
)
from campaigns.platforms.worker_actions import assignment_bonus_pay
from tests.campaigns.platforms.conftest import execute, make_campaign, run_operations
from tests.campaigns.platforms.mturk_helpers import page_submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(requester, mturk):
    campaign, stage = make_campaign(requester, provider="mturk", slug="mturk-flow", items=3)
    op = stage_provider_publish(stage=stage)
    assert op is not None
    done = execute(op.pk)
    assert done.state == OperationState.DONE, done.last_error
    return campaign, stage, op


def test_publish_makes_one_hit_type_and_a_hit_per_qaportal_hit(published, mturk):
    _, stage, op = published
    hits = list(HIT.objects.filter(stage=stage))
    assert {h.status for h in hits} == {HITStatus.PUBLISHED}
    assert {h.provider_hit_id for h in hits} == set(mturk.state.hits)
    assert mturk.state.calls["CreateHITType"] == 1
    (hit_type,) = mturk.state.hit_types.values()
    assert hit_type["Reward"] == "1.00"
    quals = {q["QualificationTypeId"]: q for q in hit_type["QualificationRequirements"]}
    assert quals[APPROVAL_RATE]["IntegerValues"] == [95]
    assert quals[LOCALE]["LocaleValues"] == [{"Country": "US"}, {"Country": "CA"}]
    for hit in mturk.state.hits.values():
        assert "https://qaportal.example.org/w/mturk/" in hit["Question"]
        assert hit["RequesterAnnotation"].startswith(
            f"qaportal:{deployment_tag()}:{op.idempotency_key}:"
        )
    assert mturk.state.calls["GetAccountBalance"] == 1


def test_sync_confirms_flags_and_records_times(published, mturk):
    _, stage, _ = published
    first, second, third = HIT.objects.filter(stage=stage).order_by("pk")
    good = page_submit(mturk, first, "AGOODWORKER1")
    forged = page_submit(mturk, second, "AREALWORKER2", claimed_worker="AFORGEDCLAIM3")
    lost = page_submit(mturk, third, "ALOSTWORKER4", on_mturk=False)
    mturk.submit_assignment(third.provider_hit_id, "ANOPAGE5", {"q": "only on MTurk"})

    stats = mturk_hits_sync()

    good.refresh_from_db()
    forged.refresh_from_db()
    lost.refresh_from_db()
    assert good.review_details["identity"] == {"status": "confirmed"}
    assert good.review_details["mturk"]["status"] == "Submitted"
    assert good.review_details["mturk"]["work_seconds"] == 60
    assert good.review_details["mturk"]["worker"] == "AGOO…"  # never the full WorkerId
    assert forged.review_details["identity"]["status"] == "mismatch"
    assert lost.review_details["identity"]["status"] == "unconfirmed"
    assert stats.unmatched == 1
    assert stats.changed == 3
    assert ProviderSyncCursor.objects.filter(provider="mturk").count() == 3

    again = mturk_hits_sync()
    assert again.changed == 0  # idempotent: nothing new, nothing written

    with pytest.raises(IdentityUnconfirmedError):
        paid_assignment_approve(assignment=forged, source="test")
    with pytest.raises(IdentityUnconfirmedError):
        paid_assignment_approve(assignment=lost, source="test")


def test_publish_sync_approve_bonus(published, mturk):
    _, stage, _ = published
    hit = HIT.objects.filter(stage=stage).earliest("pk")
    assignment = page_submit(mturk, hit, "AGOODWORKER1")
    mturk_hits_sync()
    assignment.refresh_from_db()

    approve = paid_assignment_approve(assignment=assignment, source="test", reason="good")
    assert execute(approve.pk).state == OperationState.DONE
    bonus = assignment_bonus_pay(
        assignment=assignment, amount=Decimal("0.50"), reason="Great questions", key="b1"
    )
    done = execute(bonus.pk)
    assert done.state == OperationState.DONE, done.last_error

    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.APPROVED
    assert mturk.state.approvals[assignment.provider_assignment_id] == 1
    assert [(b["WorkerId"], b["BonusAmount"], b["Reason"]) for b in mturk.state.bonuses] == [
        ("AGOODWORKER1", "0.50", "Great questions")
    ]
    statuses = set(
        LedgerEntry.objects.filter(assignment=assignment).values_list("status", flat=True)
    )
    assert statuses == {LedgerStatus.PAID}
    mturk_hits_sync()
    assignment.refresh_from_db()
    assert assignment.review_details["mturk"]["status"] == "Approved"


def test_sync_pages_through_assignments_and_resumes_from_its_cursor(requester, mturk):
    _, stage = make_campaign(requester, provider="mturk", slug="mturk-pages", items=1)
    stage.assignments_per_hit = 250
    stage.save(update_fields=["assignments_per_hit"])
    op = stage_provider_publish(stage=stage)
    assert op is not None
    execute(op.pk)
    hit = HIT.objects.get(stage=stage)
    for n in range(250):
        page_submit(mturk, hit, f"AWORKER{n:04d}")
    mturk.state.calls.clear()
    # The second page fails past every retry: the first page is written, the cursor
    # keeps the second page's token.
    mturk.fail_next("ListAssignmentsForHIT", "pass")
    mturk.fail_next("ListAssignmentsForHIT", "500", times=9)
    stats = mturk_hits_sync()
    assert stats.errors == 1
    assert stats.confirmed == 100
    token = ProviderSyncCursor.objects.get(scope=f"hit:{hit.provider_hit_id}").state["token"]
    assert token

    mturk.state.calls.clear()
    stats = mturk_hits_sync()
    assert stats.errors == 0
    assert stats.confirmed == 150  # pages 2 and 3 only
    assert mturk.state.calls["ListAssignmentsForHIT"] == 2
    assert ProviderSyncCursor.objects.get(scope=f"hit:{hit.provider_hit_id}").state["token"] is None
    assert hit.assignments.filter(review_details__identity__status="confirmed").count() == 250


def test_question_form_answers_are_parsed():
    xml = (
        '<?xml version="1.0"?><QuestionFormAnswers xmlns="http://mechanicalturk.amazonaws.com/'
        'AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd">'
        "<Answer><QuestionIdentifier>why</QuestionIdentifier><FreeText>Because &amp; so"
        "</FreeText></Answer>"
        "<Answer><QuestionIdentifier>pick</QuestionIdentifier>"
        "<SelectionIdentifier>s1</SelectionIdentifier><SelectionIdentifier>s3"
        "</SelectionIdentifier></Answer>"
        "<Answer><QuestionIdentifier>other</QuestionIdentifier>"
        "<SelectionIdentifier>a</SelectionIdentifier>"
        "<OtherSelectionText>mine</OtherSelectionText></Answer>"
        "<Answer><QuestionIdentifier>file</QuestionIdentifier>"
        "<UploadedFileSizeInBytes>1234</UploadedFileSizeInBytes>"
        "<UploadedFileKey>abc/def</UploadedFileKey></Answer>"
        "<Answer><QuestionIdentifier>empty</QuestionIdentifier><FreeText/></Answer>"
        "</QuestionFormAnswers>"
    )
    assert answers_parse(xml) == {
        "why": "Because & so",
        "pick": ["s1", "s3"],
        "other": {"selections": ["a"], "other": "mine"},
        "file": {"file_key": "abc/def", "size": 1234},
        "empty": "",
    }
    assert answers_parse("") == {}


@pytest.mark.parametrize(
    "xml",
    [
        '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
        "<QuestionFormAnswers><Answer><QuestionIdentifier>q</QuestionIdentifier>"
        "<FreeText>&b;</FreeText></Answer></QuestionFormAnswers>",
        '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<QuestionFormAnswers><Answer><FreeText>&x;</FreeText></Answer></QuestionFormAnswers>",
        "<QuestionFormAnswers><Answer>",
        "<Other/>",
    ],
    ids=["entity-expansion", "external-entity", "truncated", "wrong-root"],
)
def test_hostile_or_broken_answers_are_refused(xml):
    with pytest.raises(ValueError, match="QuestionFormAnswers"):
        answers_parse(xml)


def test_mturk_auto_approval_and_the_stage_rule_are_recorded_with_their_money(published, mturk):
    _, stage, _ = published
    first, second, third = HIT.objects.filter(stage=stage).order_by("pk")
    by_mturk = page_submit(mturk, first, "AGOODWORKER1")
    mturk_hits_sync()
    mturk.state.assignments[by_mturk.provider_assignment_id]["AssignmentStatus"] = "Approved"
    stats = mturk_hits_sync()  # MTurk's auto-approval delay passed
    assert stats.approvals_requested == 1
    run_operations()
    by_mturk.refresh_from_db()
    assert by_mturk.status == AssignmentStatus.APPROVED
    assert by_mturk.decision_source == "mturk:sync"
    entries = LedgerEntry.objects.filter(assignment=by_mturk)
    assert set(entries.values_list("status", flat=True)) == {LedgerStatus.PAID}
    assert not mturk.state.approvals  # MTurk approved it; qaportal only recorded it

    stage.review_rules = [{"rule": "auto_approve"}]
    stage.save(update_fields=["review_rules"])
    by_rule = page_submit(mturk, second, "AOTHERWORKER2")
    forged = page_submit(mturk, third, "AREALWORKER3", claimed_worker="AFORGED4")
    mturk_hits_sync()
    run_operations()
    by_rule.refresh_from_db()
    forged.refresh_from_db()
    assert by_rule.status == AssignmentStatus.APPROVED
    assert mturk.state.approvals[by_rule.provider_assignment_id] == 1
    assert forged.status == AssignmentStatus.SUBMITTED  # never paid on a forged identity
    assert mturk_hits_sync().approvals_requested == 0  # idempotent


def test_settled_hits_are_not_read_again_until_they_take_work_again(published, mturk):
    _, stage, _ = published
    hits = list(HIT.objects.filter(stage=stage).order_by("pk"))
    for n, hit in enumerate(hits):
        page_submit(mturk, hit, f"AWORKER{n}")
    mturk_hits_sync()
    for a in mturk.state.assignments.values():
        a["AssignmentStatus"] = "Approved"  # decided (by MTurk's auto-approval)
    mturk_hits_sync()  # reads the decisions, marks the HITs settled
    mturk.state.calls.clear()
    stats = mturk_hits_sync()
    assert stats.skipped == 3
    assert mturk.state.calls["ListAssignmentsForHIT"] == 0
    assert mturk.state.calls["ListReviewableHITs"] == 1

    from campaigns.work.lifecycle import hit_add_assignments

    hit_add_assignments(hit=hits[0], count=1, reason="escalate", key="esc:1")
    run_operations()
    assert mturk.state.hits[hits[0].provider_hit_id]["HITStatus"] == "Assignable"
    mturk.submit_assignment(hits[0].provider_hit_id, "ANEWWORKER9", {"q": "a"})
    mturk.state.calls.clear()
    stats = mturk_hits_sync()
    assert stats.skipped == 2
    assert stats.unmatched == 1  # the new one is read (no page row for it here)
