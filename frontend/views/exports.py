"""Dataset downloads from the campaign page: each export format streamed as a file,
worker ids as pseudonyms (real ids only through the API or the command, audited).
Every download is recorded in the export audit with what it contained."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from campaigns.exports import FORMATS, export_filename
from campaigns.exports.mintaka import SPLITS
from campaigns.exports.services import export_stream_audited
from campaigns.jobs import export_rows_estimate
from frontend.views.common import campaign_or_404


@login_required
@require_GET
def campaign_export_view(
    request: HttpRequest, slug: str, name: str
) -> HttpResponse | StreamingHttpResponse:
    campaign = campaign_or_404(request, slug)
    fmt = FORMATS.get(name)
    split = request.GET.get("split", "all")
    if fmt is None or split not in ("all", *SPLITS):
        raise Http404("No such export.")
    rows = export_rows_estimate(campaign=campaign, fmt=fmt, at_most=settings.EXPORT_STREAM_MAX_ROWS)
    if rows > settings.EXPORT_STREAM_MAX_ROWS:
        messages.error(
            request,
            f"{fmt.title} has more than {settings.EXPORT_STREAM_MAX_ROWS} rows, too many for a "
            "direct download: "
            "use its Export button (a background job).",
        )
        return redirect(reverse("frontend:campaign-detail", args=[campaign.slug]) + "#export")
    response = StreamingHttpResponse(
        export_stream_audited(
            campaign=campaign, export_format=name, actor=request.user, via="page", split=split
        ),
        content_type=fmt.content_type if fmt.binary else f"{fmt.content_type}; charset=utf-8",
    )
    filename = export_filename(campaign=campaign, name=name, split=split)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
