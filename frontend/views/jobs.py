"""Background jobs on the requester pages: an export started from the campaign page,
the job's page with a progress bar (frontend/static/frontend/job.js polls its status),
and the finished file, its row count and checksum named."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from campaigns.exports import FORMATS, export_filename
from campaigns.exports.mintaka import SPLITS
from campaigns.jobs import job_as_dict, job_download_response, job_export_start, job_or_404
from frontend.views.common import campaign_or_404
from qaportal.errors import StorageUnavailable


def job_status_dict(request: HttpRequest, job_id: str) -> dict[str, object]:
    job = job_or_404(user=request.user, job_id=job_id)
    data = job_as_dict(job, None)
    data["id"] = str(job.id)
    data["url"] = reverse("frontend:job-status", args=[job.id])
    data["download_url"] = (
        reverse("frontend:job-download", args=[job.id]) if data["download_url"] else None
    )
    for key in ("created_at", "finished_at"):
        value = data[key]
        data[key] = value.isoformat() if value is not None else None
    return data


@login_required
@require_POST
def campaign_export_job_view(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Start an export job (pseudonyms only from the page) and show its progress."""
    campaign = campaign_or_404(request, slug)
    split = request.POST.get("split", "all")
    if name not in FORMATS or split not in ("all", *SPLITS):
        raise Http404("No such export.")
    try:
        job = job_export_start(
            campaign=campaign,
            export_format=name,
            actor=request.user,
            download_name=export_filename(campaign=campaign, name=name, split=split),
            via="page",
            split=split,
        )
    except PermissionDenied as exc:
        messages.error(request, str(exc))
        return redirect(reverse("frontend:campaign-detail", args=[campaign.slug]) + "#export")
    return redirect("frontend:job-detail", job_id=job.id)


@login_required
@require_GET
def job_detail_view(request: HttpRequest, job_id: str) -> HttpResponse:
    job = job_or_404(user=request.user, job_id=job_id)
    return render(
        request,
        "frontend/job_detail.html",
        {"job": job, "status": job_status_dict(request, job_id), "campaign": job.campaign},
    )


@login_required
@require_GET
def job_status_view(request: HttpRequest, job_id: str) -> JsonResponse:
    return JsonResponse(job_status_dict(request, job_id))


@login_required
@require_GET
def job_download_view(request: HttpRequest, job_id: str) -> HttpResponseBase:
    job = job_or_404(user=request.user, job_id=job_id)
    try:
        return job_download_response(job)
    except StorageUnavailable as exc:
        response = HttpResponse(str(exc), status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(exc.retry_after)
        return response
