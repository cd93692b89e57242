from django.urls import path

from frontend.views.articles import stage_article_view
from frontend.views.campaigns import (
    campaign_detail,
    campaign_list,
    campaign_new,
    campaign_progress_view,
    campaign_transition_confirm_view,
    campaign_transition_view,
    stage_add_view,
    stage_publish_view,
    stage_upload_view,
)
from frontend.views.charts import (
    campaign_activity_chart_view,
    campaign_spend_chart_view,
    campaign_work_time_chart_view,
)
from frontend.views.credentials import credentials_delete_view, credentials_set_view
from frontend.views.datasheet import campaign_datasheet_view
from frontend.views.exports import campaign_export_view
from frontend.views.generated_questions import (
    generated_question_act_view,
    generated_questions_send_view,
    generated_questions_view,
)
from frontend.views.items import item_history_view
from frontend.views.jobs import (
    campaign_export_job_view,
    job_detail_view,
    job_download_view,
    job_status_view,
)
from frontend.views.link_review import link_review_decide_view, link_review_suggest_view
from frontend.views.model_endpoints import (
    model_endpoint_delete_view,
    model_endpoint_edit_view,
    model_endpoint_test_view,
    model_endpoints_view,
)
from frontend.views.money_workers import (
    campaign_costs_view,
    campaign_workers_act_view,
    campaign_workers_view,
)
from frontend.views.quality import campaign_quality_view, stage_agreement_chart_view
from frontend.views.review import (
    campaign_review,
    review_as_worker_view,
    review_block_view,
    review_bonus_view,
    review_bulk_view,
    review_decide_view,
    review_override_view,
    stage_review_run_view,
)
from frontend.views.stages import (
    stage_clone_view,
    stage_edit_view,
    stage_estimate_from_pilot_view,
    stage_item_template_view,
    stage_preview_view,
)
from frontend.views.workforce import (
    campaign_workforce,
    grant_add_view,
    grant_remove_view,
    invite_create_view,
    invite_revoke_view,
)

app_name = "frontend"

urlpatterns = [
    path("", campaign_list, name="campaign-list"),
    path("campaigns/new/", campaign_new, name="campaign-create"),
    path("model-endpoints/", model_endpoints_view, name="model-endpoints"),
    path(
        "model-endpoints/<int:endpoint_id>/",
        model_endpoint_edit_view,
        name="model-endpoint-edit",
    ),
    path(
        "model-endpoints/<int:endpoint_id>/delete/",
        model_endpoint_delete_view,
        name="model-endpoint-delete",
    ),
    path(
        "model-endpoints/<int:endpoint_id>/test/",
        model_endpoint_test_view,
        name="model-endpoint-test",
    ),
    path("campaigns/<slug:slug>/", campaign_detail, name="campaign-detail"),
    path("campaigns/<slug:slug>/progress/", campaign_progress_view, name="campaign-progress"),
    path("campaigns/<slug:slug>/quality/", campaign_quality_view, name="campaign-quality"),
    path(
        "campaigns/<slug:slug>/charts/activity.svg",
        campaign_activity_chart_view,
        name="chart-activity",
    ),
    path("campaigns/<slug:slug>/charts/spend.svg", campaign_spend_chart_view, name="chart-spend"),
    path(
        "campaigns/<slug:slug>/charts/work-time.svg",
        campaign_work_time_chart_view,
        name="chart-work-time",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/agreement.svg",
        stage_agreement_chart_view,
        name="stage-agreement-chart",
    ),
    path(
        "campaigns/<slug:slug>/transition/",
        campaign_transition_view,
        name="campaign-transition",
    ),
    path(
        "campaigns/<slug:slug>/transition/confirm/",
        campaign_transition_confirm_view,
        name="campaign-transition-confirm",
    ),
    path("campaigns/<slug:slug>/stages/", stage_add_view, name="stage-add"),
    path("campaigns/<slug:slug>/stages/<int:stage_id>/edit/", stage_edit_view, name="stage-edit"),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/clone/",
        stage_clone_view,
        name="stage-clone",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/estimate-from-pilot/",
        stage_estimate_from_pilot_view,
        name="stage-estimate-from-pilot",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/preview/",
        stage_preview_view,
        name="stage-preview",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/items-template.<str:fmt>",
        stage_item_template_view,
        name="stage-item-template",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/items/",
        stage_upload_view,
        name="stage-upload",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/publish/",
        stage_publish_view,
        name="stage-publish",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/article/",
        stage_article_view,
        name="stage-article",
    ),
    path(
        "campaigns/<slug:slug>/workforce/",
        campaign_workforce,
        name="campaign-workforce",
    ),
    path(
        "campaigns/<slug:slug>/workforce/invites/",
        invite_create_view,
        name="invite-create",
    ),
    path(
        "campaigns/<slug:slug>/workforce/invites/<int:invite_id>/revoke/",
        invite_revoke_view,
        name="invite-revoke",
    ),
    path(
        "campaigns/<slug:slug>/workforce/credentials/",
        credentials_set_view,
        name="credentials-set",
    ),
    path(
        "campaigns/<slug:slug>/workforce/credentials/remove/",
        credentials_delete_view,
        name="credentials-delete",
    ),
    path("campaigns/<slug:slug>/workforce/grants/", grant_add_view, name="grant-add"),
    path(
        "campaigns/<slug:slug>/workforce/grants/<int:grant_id>/remove/",
        grant_remove_view,
        name="grant-remove",
    ),
    path("campaigns/<slug:slug>/review/", campaign_review, name="campaign-review"),
    path(
        "campaigns/<slug:slug>/review/<int:assignment_id>/decide/",
        review_decide_view,
        name="review-decide",
    ),
    path("campaigns/<slug:slug>/review/bulk/", review_bulk_view, name="review-bulk"),
    path(
        "campaigns/<slug:slug>/review/<int:assignment_id>/as-worker/",
        review_as_worker_view,
        name="review-as-worker",
    ),
    path(
        "campaigns/<slug:slug>/review/<int:assignment_id>/bonus/",
        review_bonus_view,
        name="review-bonus",
    ),
    path(
        "campaigns/<slug:slug>/review/<int:assignment_id>/block/",
        review_block_view,
        name="review-block",
    ),
    path(
        "campaigns/<slug:slug>/review/<int:assignment_id>/override/",
        review_override_view,
        name="review-override",
    ),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/review/",
        stage_review_run_view,
        name="stage-review-run",
    ),
    path(
        "campaigns/<slug:slug>/link-review/<int:item_id>/decide/",
        link_review_decide_view,
        name="link-review-decide",
    ),
    path(
        "campaigns/<slug:slug>/link-review/suggest/",
        link_review_suggest_view,
        name="link-review-suggest",
    ),
    path("campaigns/<slug:slug>/items/<int:item_id>/", item_history_view, name="item-history"),
    path("campaigns/<slug:slug>/export/<slug:name>/", campaign_export_view, name="campaign-export"),
    path("campaigns/<slug:slug>/datasheet/", campaign_datasheet_view, name="campaign-datasheet"),
    path(
        "campaigns/<slug:slug>/export/<slug:name>/job/",
        campaign_export_job_view,
        name="campaign-export-job",
    ),
    path("jobs/<uuid:job_id>/", job_detail_view, name="job-detail"),
    path("jobs/<uuid:job_id>/status/", job_status_view, name="job-status"),
    path("jobs/<uuid:job_id>/download/", job_download_view, name="job-download"),
    path(
        "campaigns/<slug:slug>/generated-questions/",
        generated_questions_view,
        name="generated-questions",
    ),
    path(
        "campaigns/<slug:slug>/generated-questions/send/",
        generated_questions_send_view,
        name="generated-questions-send",
    ),
    path(
        "campaigns/<slug:slug>/generated-questions/<int:question_id>/",
        generated_question_act_view,
        name="generated-question-act",
    ),
    path("campaigns/<slug:slug>/costs/", campaign_costs_view, name="campaign-costs"),
    path("campaigns/<slug:slug>/workers/", campaign_workers_view, name="campaign-workers"),
    path(
        "campaigns/<slug:slug>/workers/act/", campaign_workers_act_view, name="campaign-workers-act"
    ),
]
