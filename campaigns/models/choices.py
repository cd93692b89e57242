"""Enumerations shared by the models, services and API."""

from django.db import models


class Provider(models.TextChoices):
    """The built-in platforms' names, for the code that means one of them. Which
    providers a row may name is the registry's (``provider_choices``), not this list."""

    LOCAL = "local", "Local workforce"
    MTURK = "mturk", "Amazon Mechanical Turk"
    PROLIFIC = "prolific", "Prolific"


# The registered platforms (``campaigns.design.platform.platform_register`` fills it at
# start-up): the models' ``provider`` fields take their choices from here, through a
# callable, so a new platform needs no migration.
_PROVIDER_CHOICES: dict[str, str] = {}


def provider_choice_register(*, name: str, label: str) -> None:
    """Make ``name`` a provider the models accept (called by ``platform_register``)."""
    _PROVIDER_CHOICES[name] = label


def provider_choice_unregister(*, name: str) -> None:
    """Forget provider ``name`` (``platform_unregister``)."""
    _PROVIDER_CHOICES.pop(name, None)


def provider_choices() -> list[tuple[str, str]]:
    """The ``provider`` fields' choices: the registered platforms, (name, label), by name."""
    return sorted(_PROVIDER_CHOICES.items())


class CampaignState(models.TextChoices):
    DRAFT = "draft", "Draft"
    PILOT = "pilot", "Pilot"
    LIVE = "live", "Live"
    PAUSED = "paused", "Paused"
    COMPLETED = "completed", "Completed"


class ItemSource(models.TextChoices):
    UPLOADED = "uploaded", "Uploaded by the requester"
    PRODUCED = "produced", "Produced by an assignment of an earlier stage"
    GENERATED = "generated", "Generated (recipe, knowledge base)"


class ItemStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    PUBLISHED = "published", "Published"
    COMPLETED = "completed", "Completed"
    DROPPED = "dropped", "Dropped"


class HITStatus(models.TextChoices):
    PENDING = "pending", "Pending publication"
    PUBLISHED = "published", "Published"
    COMPLETED = "completed", "Completed"
    EXPIRED = "expired", "Expired"
    DISPOSED = "disposed", "Disposed"


class AssignmentStatus(models.TextChoices):
    ACCEPTED = "accepted", "Accepted"
    SUBMITTED = "submitted", "Submitted"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    RETURNED = "returned", "Returned"
    ABANDONED = "abandoned", "Abandoned"
    EXPIRED = "expired", "Expired"


# An assignment in one of these states occupies its worker's place on the HIT.
ASSIGNMENT_HOLDING_STATES = (
    AssignmentStatus.ACCEPTED,
    AssignmentStatus.SUBMITTED,
    AssignmentStatus.APPROVED,
    AssignmentStatus.REJECTED,
)
# An assignment in one of these states was handed in: its answers are stored, decided or not.
HANDED_IN = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


class QualificationKind(models.TextChoices):
    APPROVAL_RATE = "approval_rate", "Approval rate (%)"
    APPROVED_COUNT = "approved_count", "Number of approved assignments"
    LOCALE = "locale", "Locale"
    MASTERS = "masters", "Masters"
    ADULT = "adult", "Adult content"
    QUIZ = "quiz", "Quiz with answer key"
    ROUND = "round", "Round requalification"
    GOLD_ACCURACY = "gold_accuracy", "Gold accuracy"
    MANUAL = "manual", "Granted by the requester"


SYSTEM_QUALIFICATION_KINDS = (
    QualificationKind.APPROVAL_RATE,
    QualificationKind.APPROVED_COUNT,
    QualificationKind.LOCALE,
    QualificationKind.MASTERS,
    QualificationKind.ADULT,
)


class LedgerKind(models.TextChoices):
    REWARD = "reward", "Reward"
    PLATFORM_FEE = "platform_fee", "Platform fee"
    BONUS = "bonus", "Bonus"
    BONUS_FEE = "bonus_fee", "Platform fee on a bonus"
    QUIZ_PAYMENT = "quiz_payment", "Quiz payment"
    MODEL_USAGE = "model_usage", "Model usage"


class LedgerStatus(models.TextChoices):
    PLANNED = "planned", "Planned"
    COMMITTED = "committed", "Committed"
    PAID = "paid", "Paid"
    CANCELLED = "cancelled", "Cancelled"


class OperationKind(models.TextChoices):
    CREATE_HIT_TYPE = "create_hit_type", "Create HIT type"
    CREATE_HIT = "create_hit", "Create HIT"
    ADD_ASSIGNMENTS = "add_assignments", "Add assignments"
    APPROVE = "approve", "Approve assignment"
    REJECT = "reject", "Reject assignment"
    BONUS = "bonus", "Pay bonus"
    NOTIFY = "notify", "Notify workers"
    GRANT = "grant", "Grant qualification"
    REVOKE = "revoke", "Revoke qualification"
    BLOCK = "block", "Block worker"
    UNBLOCK = "unblock", "Unblock worker"
    EXPIRE = "expire", "Expire HIT"
    CREATE_QUALIFICATION_TYPE = "create_qualification_type", "Create qualification type"
    CREATE_STUDY = "create_study", "Create study"
    PUBLISH_STUDY = "publish_study", "Publish study"
    PAUSE_STUDY = "pause_study", "Pause study"
    STOP_STUDY = "stop_study", "Stop study"


class OperationState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
