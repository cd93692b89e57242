from campaigns.models.api import ExportAudit, IdempotencyRecord
from campaigns.models.assist import (
    AdversarialJudge,
    AdversarialTry,
    ModelCall,
    ModelCallPurpose,
    ModelCallStatus,
    ModelEndpoint,
    ModelEndpointKind,
)
from campaigns.models.campaign import Campaign, Item, Stage
from campaigns.models.choices import (
    HANDED_IN,
    AssignmentStatus,
    CampaignState,
    HITStatus,
    ItemSource,
    ItemStatus,
    LedgerKind,
    LedgerStatus,
    OperationKind,
    OperationState,
    Provider,
    QualificationKind,
)
from campaigns.models.counts import StageAssignmentCount, StageAssignmentCountDelta
from campaigns.models.credentials import ProviderCredential
from campaigns.models.datasheet import Datasheet
from campaigns.models.jobs import Job, JobKind, JobStatus
from campaigns.models.local import InviteLink, InviteRedemption, LocalGrant
from campaigns.models.money import LedgerEntry
from campaigns.models.operations import ProviderOperation, ProviderSyncCursor
from campaigns.models.work import HIT, Assignment, DetachedAnswer, HITItem
from campaigns.models.workers import (
    CampaignWorker,
    QualificationGrant,
    QualificationType,
    Worker,
    WorkerBlock,
    worker_pseudonym,
)

__all__ = [
    "HANDED_IN",
    "HIT",
    "AdversarialJudge",
    "AdversarialTry",
    "Assignment",
    "AssignmentStatus",
    "Campaign",
    "CampaignState",
    "CampaignWorker",
    "Datasheet",
    "DetachedAnswer",
    "ExportAudit",
    "HITItem",
    "HITStatus",
    "IdempotencyRecord",
    "InviteLink",
    "InviteRedemption",
    "Item",
    "ItemSource",
    "ItemStatus",
    "Job",
    "JobKind",
    "JobStatus",
    "LedgerEntry",
    "LedgerKind",
    "LedgerStatus",
    "LocalGrant",
    "ModelCall",
    "ModelCallPurpose",
    "ModelCallStatus",
    "ModelEndpoint",
    "ModelEndpointKind",
    "OperationKind",
    "OperationState",
    "Provider",
    "ProviderCredential",
    "ProviderOperation",
    "ProviderSyncCursor",
    "QualificationGrant",
    "QualificationKind",
    "QualificationType",
    "Stage",
    "StageAssignmentCount",
    "StageAssignmentCountDelta",
    "Worker",
    "WorkerBlock",
    "worker_pseudonym",
]
