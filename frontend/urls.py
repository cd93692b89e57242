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
]
