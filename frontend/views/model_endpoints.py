"""A requester's model endpoints (model in the loop): list, add, edit, delete, test."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from campaigns.assist.endpoints import (
    model_endpoint_create,
    model_endpoint_delete,
    model_endpoint_test,
    model_endpoint_update,
)
from campaigns.assist.selectors import model_endpoint_visible, model_endpoints_for
from campaigns.models import ModelEndpoint
from frontend.forms import ModelEndpointForm
from frontend.views.common import add_domain_errors
from frontend.views.confirm import confirm_first
from qaportal.errors import DomainError


def _list_url() -> str:
    return reverse("frontend:model-endpoints")


def _own(request: HttpRequest, endpoint_id: int) -> ModelEndpoint:
    endpoint = model_endpoint_visible(user=request.user, endpoint_id=endpoint_id)
    if endpoint is None:
        raise Http404
    return endpoint


def _initial(endpoint: ModelEndpoint) -> dict[str, object]:
    return {
        "name": endpoint.name,
        "kind": endpoint.kind,
        "base_url": endpoint.base_url,
        "model": endpoint.model,
        "prompt_template": (endpoint.prompt_templates or {}).get("default", ""),
        "timeout_seconds": endpoint.timeout_seconds,
        "concurrency": endpoint.concurrency,
        "price_in_per_1k": endpoint.price_in_per_1k.normalize(),
        "price_out_per_1k": endpoint.price_out_per_1k.normalize(),
        "currency": endpoint.currency,
    }


@login_required
@require_http_methods(["GET", "POST"])
def model_endpoints_view(request: HttpRequest) -> HttpResponse:
    """Your model endpoints, and the form to add one."""
    form = ModelEndpointForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                endpoint = model_endpoint_create(
                    owner=request.user, values=form.values(editing=False)
                )
            except DomainError as exc:
                add_domain_errors(form, exc)
            else:
                messages.success(request, f"Added the model endpoint {endpoint.name}.")
                return redirect(_list_url())
        status = 400
    return render(
        request,
        "frontend/model_endpoints.html",
        {"endpoints": model_endpoints_for(user=request.user), "form": form},
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def model_endpoint_edit_view(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """Change one of your endpoints; the key stays unless replaced or removed."""
    endpoint = _own(request, endpoint_id)
    form = ModelEndpointForm(request.POST or None, initial=_initial(endpoint))
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                model_endpoint_update(
                    endpoint=endpoint, actor=request.user, values=form.values(editing=True)
                )
            except DomainError as exc:
                add_domain_errors(form, exc)
            else:
                messages.success(request, f"Saved the model endpoint {endpoint.name}.")
                return redirect(_list_url())
        status = 400
    return render(
        request,
        "frontend/model_endpoint_edit.html",
        {"endpoint": endpoint, "form": form},
        status=status,
    )


@login_required
@require_POST
def model_endpoint_delete_view(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _own(request, endpoint_id)
    asked = confirm_first(
        request,
        title=f"Delete the model endpoint {endpoint.name}?",
        consequence="Its settings and stored API key are deleted for good. An endpoint that "
        "has answered questions stays: the records of those answers cite it.",
        button="Delete the endpoint",
        cancel_url=_list_url(),
    )
    if asked is not None:
        return asked
    try:
        model_endpoint_delete(endpoint=endpoint, actor=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Deleted the model endpoint {endpoint.name}.")
    return redirect(_list_url())


@login_required
@require_POST
def model_endpoint_test_view(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """Ask the endpoint one fixed question now (bounded by its timeout) and say the result."""
    endpoint = _own(request, endpoint_id)
    result = model_endpoint_test(endpoint=endpoint, actor=request.user)
    if result["ok"]:
        reported = " ".join(v for v in (result["model_id"], result["model_version"]) if v)
        messages.success(
            request,
            f"{endpoint.name} answered in {result['seconds']} s"
            f"{f' ({reported})' if reported else ''}: {result['answer'][:300]}",
        )
    else:
        messages.error(
            request, f"{endpoint.name} gave no answer ({result['error']}, {result['seconds']} s)."
        )
    return redirect(_list_url() + f"#endpoint-{endpoint.pk}")
