from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from campaigns.api.answer_agreement import StageAnswerAgreementApi
from campaigns.api.articles import StageArticleApi
from campaigns.api.campaigns import (
    CampaignCostEstimateApi,
    CampaignDetailApi,
    CampaignListCreateApi,
    CampaignTransitionApi,
)
from campaigns.api.credentials import CampaignCredentialsApi
from campaigns.api.exports import CampaignExportApi, CampaignExportListApi
from campaigns.api.generated_questions import (
    CampaignGeneratedQuestionListApi,
    CampaignGeneratedQuestionSendApi,
    GeneratedQuestionDetailApi,
)
from campaigns.api.hits import (
    AssignmentBonusApi,
    AssignmentDetailApi,
    CampaignHITListApi,
    HITDetailApi,
)
from campaigns.api.items import StageItemListApi, StageItemUploadApi
from campaigns.api.jobs import CampaignExportJobApi, JobApi, JobDownloadApi
from campaigns.api.lineage import ItemHistoryApi
from campaigns.api.link_review import CampaignLinkReviewApi, LinkReviewDecideApi
from campaigns.api.model_endpoints import (
    ModelEndpointDetailApi,
    ModelEndpointListCreateApi,
    ModelEndpointTestApi,
)
from campaigns.api.money import CampaignCostsApi, CampaignLedgerApi
from campaigns.api.mturk_results import CampaignMTurkResultsApi, CampaignMTurkResultsReviewApi
from campaigns.api.progress import CampaignArmsApi, CampaignProgressApi
from campaigns.api.qualifications import (
    CampaignQualificationGrantListApi,
    CampaignQualificationListCreateApi,
)
from campaigns.api.quality import (
    StageAgreementSeriesApi,
    StageLabelsApi,
    StageQualityApi,
    StageReviewRunApi,
)
from campaigns.api.recipes import RecipeDetailApi, RecipeListApi
from campaigns.api.review import (
    AssignmentApproveApi,
    AssignmentOverrideApi,
    AssignmentRejectApi,
    CampaignAssignmentListApi,
    CampaignBulkReviewApi,
)
from campaigns.api.rounds import StageRoundApi, StageWageTopUpApi
from campaigns.api.stages import (
    CampaignStageListCreateApi,
    StageCloneApi,
    StageDetailApi,
    StageEstimateFromPilotApi,
    StageLinkApi,
)
from campaigns.api.ten_way import StageTenWayApi
from campaigns.api.testing import CampaignTestParticipantApi
from campaigns.api.workers import (
    CampaignMessageApi,
    CampaignWorkerListApi,
    WorkerBlockApi,
    WorkerMessageApi,
    WorkerQualifyApi,
    WorkerUnblockApi,
)
from campaigns.api.workforce import (
    CampaignGrantDetailApi,
    CampaignGrantListCreateApi,
    CampaignInviteListCreateApi,
    InviteRevokeApi,
    StagePublishApi,
)

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("recipes/", RecipeListApi.as_view(), name="api-recipe-list"),
    path("model-endpoints/", ModelEndpointListCreateApi.as_view(), name="api-model-endpoint-list"),
    path(
        "model-endpoints/<int:endpoint_id>/",
        ModelEndpointDetailApi.as_view(),
        name="api-model-endpoint-detail",
    ),
    path(
        "model-endpoints/<int:endpoint_id>/test/",
        ModelEndpointTestApi.as_view(),
        name="api-model-endpoint-test",
    ),
    path("recipes/<slug:name>/", RecipeDetailApi.as_view(), name="api-recipe-detail"),
    path("campaigns/", CampaignListCreateApi.as_view(), name="api-campaign-list"),
    path("campaigns/<slug:slug>/", CampaignDetailApi.as_view(), name="api-campaign-detail"),
    path(
        "campaigns/<slug:slug>/transition/",
        CampaignTransitionApi.as_view(),
        name="api-campaign-transition",
    ),
    path(
        "campaigns/<slug:slug>/cost-estimate/",
        CampaignCostEstimateApi.as_view(),
        name="api-campaign-cost-estimate",
    ),
    path(
        "campaigns/<slug:slug>/stages/",
        CampaignStageListCreateApi.as_view(),
        name="api-campaign-stages",
    ),
    path(
        "campaigns/<slug:slug>/credentials/",
        CampaignCredentialsApi.as_view(),
        name="api-campaign-credentials",
    ),
    path("stages/<int:stage_id>/", StageDetailApi.as_view(), name="api-stage-detail"),
    path("stages/<int:stage_id>/link/", StageLinkApi.as_view(), name="api-stage-link"),
    path("stages/<int:stage_id>/clone/", StageCloneApi.as_view(), name="api-stage-clone"),
    path(
        "stages/<int:stage_id>/estimate-from-pilot/",
        StageEstimateFromPilotApi.as_view(),
        name="api-stage-estimate-from-pilot",
    ),
    path("stages/<int:stage_id>/items/", StageItemListApi.as_view(), name="api-stage-items"),
    path("stages/<int:stage_id>/articles/", StageArticleApi.as_view(), name="api-stage-articles"),
    path(
        "stages/<int:stage_id>/items/upload/",
        StageItemUploadApi.as_view(),
        name="api-stage-items-upload",
    ),
    path(
        "campaigns/<slug:slug>/invites/",
        CampaignInviteListCreateApi.as_view(),
        name="api-campaign-invites",
    ),
    path("invites/<int:invite_id>/revoke/", InviteRevokeApi.as_view(), name="api-invite-revoke"),
    path(
        "campaigns/<slug:slug>/grants/",
        CampaignGrantListCreateApi.as_view(),
        name="api-campaign-grants",
    ),
    path(
        "campaigns/<slug:slug>/grants/<str:username>/",
        CampaignGrantDetailApi.as_view(),
        name="api-campaign-grant-detail",
    ),
    path("stages/<int:stage_id>/publish/", StagePublishApi.as_view(), name="api-stage-publish"),
    path(
        "campaigns/<slug:slug>/assignments/",
        CampaignAssignmentListApi.as_view(),
        name="api-campaign-assignments",
    ),
    path(
        "campaigns/<slug:slug>/assignments/bulk-review/",
        CampaignBulkReviewApi.as_view(),
        name="api-campaign-assignments-bulk-review",
    ),
    path(
        "assignments/<int:assignment_id>/approve/",
        AssignmentApproveApi.as_view(),
        name="api-assignment-approve",
    ),
    path(
        "assignments/<int:assignment_id>/reject/",
        AssignmentRejectApi.as_view(),
        name="api-assignment-reject",
    ),
    path(
        "assignments/<int:assignment_id>/override/",
        AssignmentOverrideApi.as_view(),
        name="api-assignment-override",
    ),
    path("stages/<int:stage_id>/review/", StageReviewRunApi.as_view(), name="api-stage-review"),
    path("stages/<int:stage_id>/quality/", StageQualityApi.as_view(), name="api-stage-quality"),
    path(
        "stages/<int:stage_id>/answer-agreement/",
        StageAnswerAgreementApi.as_view(),
        name="api-stage-answer-agreement",
    ),
    path("stages/<int:stage_id>/labels/", StageLabelsApi.as_view(), name="api-stage-labels"),
    path("stages/<int:stage_id>/ten-way/", StageTenWayApi.as_view(), name="api-stage-ten-way"),
    path("stages/<int:stage_id>/rounds/", StageRoundApi.as_view(), name="api-stage-rounds"),
    path(
        "stages/<int:stage_id>/wage-topup/",
        StageWageTopUpApi.as_view(),
        name="api-stage-wage-topup",
    ),
    path(
        "stages/<int:stage_id>/agreement-series/",
        StageAgreementSeriesApi.as_view(),
        name="api-stage-agreement-series",
    ),
    path(
        "campaigns/<slug:slug>/link-review/",
        CampaignLinkReviewApi.as_view(),
        name="api-campaign-link-review",
    ),
    path(
        "link-review/<int:item_id>/decide/",
        LinkReviewDecideApi.as_view(),
        name="api-link-review-decide",
    ),
    # Money, workers, HITs, qualifications (docs/api.md).
    path("campaigns/<slug:slug>/costs/", CampaignCostsApi.as_view(), name="api-campaign-costs"),
    path(
        "campaigns/<slug:slug>/test-participants/",
        CampaignTestParticipantApi.as_view(),
        name="api-campaign-test-participants",
    ),
    path(
        "campaigns/<slug:slug>/items/<int:item_id>/history/",
        ItemHistoryApi.as_view(),
        name="api-item-history",
    ),
    path(
        "campaigns/<slug:slug>/exports/",
        CampaignExportListApi.as_view(),
        name="api-campaign-exports",
    ),
    path(
        "campaigns/<slug:slug>/exports/<str:export_format>/",
        CampaignExportApi.as_view(),
        name="api-campaign-export",
    ),
    path(
        "campaigns/<slug:slug>/exports/<str:export_format>/jobs/",
        CampaignExportJobApi.as_view(),
        name="api-campaign-export-job",
    ),
    path("jobs/<uuid:job_id>/", JobApi.as_view(), name="api-job"),
    path("jobs/<uuid:job_id>/download/", JobDownloadApi.as_view(), name="api-job-download"),
    path(
        "campaigns/<slug:slug>/generated-questions/",
        CampaignGeneratedQuestionListApi.as_view(),
        name="api-campaign-generated-questions",
    ),
    path(
        "campaigns/<slug:slug>/generated-questions/send/",
        CampaignGeneratedQuestionSendApi.as_view(),
        name="api-campaign-generated-questions-send",
    ),
    path(
        "generated-questions/<int:question_id>/",
        GeneratedQuestionDetailApi.as_view(),
        name="api-generated-question-detail",
    ),
    path("campaigns/<slug:slug>/arms/", CampaignArmsApi.as_view(), name="api-campaign-arms"),
    path(
        "campaigns/<slug:slug>/progress/",
        CampaignProgressApi.as_view(),
        name="api-campaign-progress",
    ),
    path("campaigns/<slug:slug>/ledger/", CampaignLedgerApi.as_view(), name="api-campaign-ledger"),
    path(
        "campaigns/<slug:slug>/workers/",
        CampaignWorkerListApi.as_view(),
        name="api-campaign-workers",
    ),
    path(
        "campaigns/<slug:slug>/workers/<str:pseudonym>/block/",
        WorkerBlockApi.as_view(),
        name="api-worker-block",
    ),
    path(
        "campaigns/<slug:slug>/workers/<str:pseudonym>/unblock/",
        WorkerUnblockApi.as_view(),
        name="api-worker-unblock",
    ),
    path(
        "campaigns/<slug:slug>/workers/<str:pseudonym>/qualify/",
        WorkerQualifyApi.as_view(),
        name="api-worker-qualify",
    ),
    path(
        "campaigns/<slug:slug>/workers/<str:pseudonym>/message/",
        WorkerMessageApi.as_view(),
        name="api-worker-message",
    ),
    path(
        "campaigns/<slug:slug>/messages/",
        CampaignMessageApi.as_view(),
        name="api-campaign-messages",
    ),
    path(
        "campaigns/<slug:slug>/mturk-results/",
        CampaignMTurkResultsApi.as_view(),
        name="api-campaign-mturk-results",
    ),
    path(
        "campaigns/<slug:slug>/mturk-results/review/",
        CampaignMTurkResultsReviewApi.as_view(),
        name="api-campaign-mturk-results-review",
    ),
    path("campaigns/<slug:slug>/hits/", CampaignHITListApi.as_view(), name="api-campaign-hits"),
    path("hits/<int:hit_id>/", HITDetailApi.as_view(), name="api-hit-detail"),
    path(
        "assignments/<int:assignment_id>/",
        AssignmentDetailApi.as_view(),
        name="api-assignment-detail",
    ),
    path(
        "assignments/<int:assignment_id>/bonus/",
        AssignmentBonusApi.as_view(),
        name="api-assignment-bonus",
    ),
    path(
        "campaigns/<slug:slug>/qualifications/",
        CampaignQualificationListCreateApi.as_view(),
        name="api-campaign-qualifications",
    ),
    path(
        "campaigns/<slug:slug>/qualifications/grants/",
        CampaignQualificationGrantListApi.as_view(),
        name="api-campaign-qualification-grants",
    ),
]
