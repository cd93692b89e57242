from django.urls import path

from frontend import views

app_name = "frontend"

urlpatterns = [
    path("", views.campaign_list, name="campaign-list"),
    path("campaigns/new/", views.campaign_new, name="campaign-create"),
    path("campaigns/<slug:slug>/", views.campaign_detail, name="campaign-detail"),
    path(
        "campaigns/<slug:slug>/transition/",
        views.campaign_transition_view,
        name="campaign-transition",
    ),
    path("campaigns/<slug:slug>/stages/", views.stage_add_view, name="stage-add"),
    path(
        "campaigns/<slug:slug>/stages/<int:stage_id>/items/",
        views.stage_upload_view,
        name="stage-upload",
    ),
    path(
        "campaigns/<slug:slug>/workforce/",
        views.campaign_workforce,
        name="campaign-workforce",
    ),
    path(
        "campaigns/<slug:slug>/workforce/invites/",
        views.invite_create_view,
        name="invite-create",
    ),
    path(
        "campaigns/<slug:slug>/workforce/invites/<int:invite_id>/revoke/",
        views.invite_revoke_view,
        name="invite-revoke",
    ),
    path("campaigns/<slug:slug>/workforce/grants/", views.grant_add_view, name="grant-add"),
    path(
        "campaigns/<slug:slug>/workforce/grants/<int:grant_id>/remove/",
        views.grant_remove_view,
        name="grant-remove",
    ),
    path("campaigns/<slug:slug>/review/", views.campaign_review, name="campaign-review"),
    path(
        "campaigns/<slug:slug>/review/<int:assignment_id>/decide/",
        views.review_decide_view,
        name="review-decide",
    ),
    path("campaigns/<slug:slug>/review/bulk/", views.review_bulk_view, name="review-bulk"),
]
