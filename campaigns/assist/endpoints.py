"""The model endpoints registry: a requester's endpoints, validated, their keys encrypted.

Keys are encrypted as platform credentials are (``campaigns.platforms.credentials``:
Fernet under ``CREDENTIALS_KEYS``, or a key derived from ``SECRET_KEY``); the clear key
exists only in memory on its way into ``client.chat_complete``. Pages and the API show
``key_hint`` (its last characters) at most.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction

from campaigns.assist.baseline import MODEL_ID, MODEL_VERSION, baseline_answer
from campaigns.assist.client import ModelUnavailable, chat_complete
from campaigns.models import ModelEndpoint, ModelEndpointKind
from campaigns.platforms.credentials import credentials_decrypt, credentials_encrypt
from qaportal.errors import DomainError
from qaportal.money import MoneyFormatError, money_parse

DEFAULT_TEMPLATE = (
    "Answer the question from the passage. Reply with the answer only.\n\n"
    "Passage:\n{context}\n\nQuestion: {question}"
)
# Questions asked without a passage (closed book: Mintaka's question writing, ...).
CLOSED_BOOK_TEMPLATE = (
    "Answer the question. Reply with the answer only; for a person, place or thing, "
    "give its name and its Wikidata id (Q...).\n\nQuestion: {question}"
)
FIELDS = (
    "name",
    "kind",
    "base_url",
    "model",
    "api_key",
    *ModelEndpoint.TUNING_FIELDS,
)
MAX_TIMEOUT = Decimal("120")


def _hint(key: str) -> str:
    return "…" + key[-4:] if len(key) >= 12 else "…"


def _decimal(value: Any, *, name: str, errors: dict[str, list[str]]) -> Decimal | None:
    if isinstance(value, float | bool):
        errors[name] = ["Send a decimal number as a string or an integer."]
        return None
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        errors[name] = ["Not a decimal number."]
        return None
    if not number.is_finite() or number < 0:
        errors[name] = ["Must be zero or more."]
        return None
    return number


def endpoint_values_clean(*, values: dict[str, Any], partial: bool) -> dict[str, Any]:
    """The cleaned fields of ``values`` (``FIELDS``; all required ones unless ``partial``);
    ``DomainError`` naming each bad field. Messages never repeat the key."""
    errors: dict[str, list[str]] = {
        name: ["Unknown field."] for name in sorted(set(values) - set(FIELDS))
    }
    clean: dict[str, Any] = {}
    for name in ("name", "kind", "base_url", "model", "api_key", "currency"):
        if name not in values:
            continue
        value = values[name]
        if not isinstance(value, str):
            errors[name] = ["Must be a string."]
            continue
        clean[name] = value.strip()
    if not partial:
        for name in ("name", "kind"):
            if not clean.get(name) and name not in errors:
                errors[name] = ["This field is required."]
    if "kind" in clean and clean["kind"] not in ModelEndpointKind.values:
        errors["kind"] = [f"One of {', '.join(ModelEndpointKind.values)}."]
    if "name" in clean and len(clean["name"]) > 120:
        errors["name"] = ["At most 120 characters."]
    if clean.get("base_url"):
        try:
            URLValidator(schemes=["http", "https"])(clean["base_url"])
        except ValidationError:
            errors["base_url"] = ["An http(s) URL, e.g. http://127.0.0.1:8000/v1."]
    if "currency" in clean and (len(clean["currency"]) != 3 or not clean["currency"].isalpha()):
        errors["currency"] = ["A three-letter currency code."]
    elif "currency" in clean:
        clean["currency"] = clean["currency"].upper()
    if "timeout_seconds" in values:
        number = _decimal(values["timeout_seconds"], name="timeout_seconds", errors=errors)
        if number is not None:
            clean["timeout_seconds"] = number
    for name in ("price_in_per_1k", "price_out_per_1k"):
        if name in values:
            try:  # the one strict parser of amounts: no floats, no exponents
                clean[name] = money_parse(values[name], places=6)
            except MoneyFormatError as exc:
                errors[name] = [str(exc)]
    timeout = clean.get("timeout_seconds")
    if timeout is not None and not Decimal("0.1") <= timeout <= MAX_TIMEOUT:
        errors["timeout_seconds"] = [f"Between 0.1 and {MAX_TIMEOUT} seconds."]
    if "concurrency" in values:
        concurrency = values["concurrency"]
        if isinstance(concurrency, str) and concurrency.strip().isdigit():
            concurrency = int(concurrency)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int):
            errors["concurrency"] = ["A whole number."]
        elif not 1 <= concurrency <= 256:
            errors["concurrency"] = ["Between 1 and 256."]
        else:
            clean["concurrency"] = concurrency
    if "prompt_templates" in values:
        templates = values["prompt_templates"]
        if not isinstance(templates, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in templates.items()
        ):
            errors["prompt_templates"] = [
                'An object of task type name (or "default") to a template text.'
            ]
        elif any("{question}" not in v for v in templates.values()):
            errors["prompt_templates"] = ["Each template must contain {question}."]
        else:
            clean["prompt_templates"] = templates
    if errors:
        raise DomainError("Invalid model endpoint.", errors=errors)
    return clean


def _check_complete(endpoint: ModelEndpoint) -> None:
    if endpoint.kind == ModelEndpointKind.OPENAI:
        errors = {
            name: ["Required for an OpenAI-compatible endpoint."]
            for name in ("base_url", "model")
            if not getattr(endpoint, name)
        }
        if errors:
            raise DomainError("Invalid model endpoint.", errors=errors)


def _apply(endpoint: ModelEndpoint, clean: dict[str, Any]) -> None:
    for name, value in clean.items():
        if name == "api_key":
            endpoint.key_ciphertext = credentials_encrypt({"api_key": value}) if value else ""
            endpoint.key_hint = _hint(value) if value else ""
        else:
            setattr(endpoint, name, value)
    _check_complete(endpoint)


def _save(endpoint: ModelEndpoint) -> ModelEndpoint:
    try:
        with transaction.atomic():
            endpoint.save()
    except IntegrityError as exc:
        raise DomainError(
            "You already have an endpoint of that name.", errors={"name": ["Already used."]}
        ) from exc
    return endpoint


def model_endpoint_create(
    *, owner: AbstractBaseUser | AnonymousUser, values: dict[str, Any]
) -> ModelEndpoint:
    """Register a model endpoint for ``owner`` (a signed-in requester)."""
    if not owner.is_authenticated:
        raise PermissionDenied("Sign in to register a model endpoint.")
    clean = endpoint_values_clean(values=values, partial=False)
    endpoint = ModelEndpoint(owner_id=owner.pk)
    _apply(endpoint, clean)
    return _save(endpoint)


BASELINE_NAME = "Built-in baseline (BM25)"


def model_endpoint_baseline(*, owner: AbstractBaseUser) -> ModelEndpoint:
    """``owner``'s built-in BM25 baseline endpoint, registered on first use (a recipe's
    adversarial stage asks for it). Idempotent on the owner and the name."""
    existing = ModelEndpoint.objects.filter(
        owner_id=owner.pk, name=BASELINE_NAME, kind=ModelEndpointKind.BASELINE_BM25
    ).first()
    if existing is not None:
        return existing
    return model_endpoint_create(
        owner=owner, values={"name": BASELINE_NAME, "kind": ModelEndpointKind.BASELINE_BM25}
    )


def _own(endpoint: ModelEndpoint, actor: AbstractBaseUser | AnonymousUser) -> None:
    if not actor.is_authenticated or (
        endpoint.owner_id != actor.pk and not getattr(actor, "is_staff", False)
    ):
        raise PermissionDenied("Only the endpoint's owner can change it.")


def model_endpoint_update(
    *, endpoint: ModelEndpoint, actor: AbstractBaseUser | AnonymousUser, values: dict[str, Any]
) -> ModelEndpoint:
    """Change the given fields of ``endpoint`` (an ``api_key`` of ``""`` removes the key;
    no ``api_key`` keeps it). Owner or staff only."""
    _own(endpoint, actor)
    _apply(endpoint, endpoint_values_clean(values=values, partial=True))
    return _save(endpoint)


def model_endpoint_delete(
    *, endpoint: ModelEndpoint, actor: AbstractBaseUser | AnonymousUser
) -> None:
    """Delete ``endpoint``; refused (``DomainError``) once calls were made with it, which
    datasets cite."""
    _own(endpoint, actor)
    if endpoint.calls.exists():
        raise DomainError(
            "This endpoint has answered questions; their records cite it, so it stays.",
            errors={"endpoint": ["in use"]},
        )
    endpoint.delete()


def endpoint_key(*, endpoint: ModelEndpoint) -> str:
    """The clear API key of ``endpoint`` (``""``: none). Only for ``chat_complete``."""
    if not endpoint.key_ciphertext:
        return ""
    return credentials_decrypt(endpoint.key_ciphertext).get("api_key", "")


def prompt_render(*, endpoint: ModelEndpoint, task_type: str, question: str, context: Any) -> str:
    """The user message for ``question`` on ``context``: the endpoint's template for
    ``task_type``, else its ``"default"`` one, else ``DEFAULT_TEMPLATE``, or without a
    passage (an empty ``context``) ``CLOSED_BOOK_TEMPLATE``."""
    templates = endpoint.prompt_templates or {}
    passage = context if isinstance(context, str) else "\n".join(str(s) for s in context or [])
    built_in = DEFAULT_TEMPLATE if passage.strip() else CLOSED_BOOK_TEMPLATE
    template = templates.get(task_type) or templates.get("default") or built_in
    # Plain replacement: templates and passages may hold braces of their own.
    return template.replace("{context}", passage).replace("{question}", question)


@dataclass(frozen=True)
class EndpointAnswer:
    text: str
    model_id: str
    model_version: str
    prompt_tokens: int | None
    completion_tokens: int | None


def endpoint_ask(
    *, endpoint: ModelEndpoint, task_type: str, question: str, context: Any
) -> EndpointAnswer:
    """One answer from ``endpoint`` within its timeout; ``ModelUnavailable`` otherwise."""
    if endpoint.kind == ModelEndpointKind.BASELINE_BM25:
        return EndpointAnswer(
            text=baseline_answer(question=question, context=context or ""),
            model_id=MODEL_ID,
            model_version=MODEL_VERSION,
            prompt_tokens=0,
            completion_tokens=0,
        )
    try:
        key = endpoint_key(endpoint=endpoint)
    except Exception as exc:  # CredentialsUnreadable: the key was rotated away
        raise ModelUnavailable("stored API key unreadable", retryable=False) from exc
    content = prompt_render(
        endpoint=endpoint, task_type=task_type, question=question, context=context
    )
    answer = chat_complete(
        base_url=endpoint.base_url,
        api_key=key,
        model=endpoint.model,
        messages=[{"role": "user", "content": content}],
        timeout=float(endpoint.timeout_seconds),
    )
    return EndpointAnswer(
        text=answer.text,
        model_id=answer.model_id,
        model_version=answer.model_version,
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
    )


TEST_QUESTION = "What is the capital of France?"
TEST_CONTEXT = "Berlin is the capital of Germany. Paris is the capital of France."


def model_endpoint_test(
    *, endpoint: ModelEndpoint, actor: AbstractBaseUser | AnonymousUser
) -> dict[str, Any]:
    """Ask ``endpoint`` one fixed question now (bounded by its timeout) and say what came
    back: ``ok``, ``answer``, ``model_id``, ``model_version``, ``error``, ``seconds``.
    Records nothing and costs the campaign nothing (no campaign is involved)."""
    _own(endpoint, actor)
    started = time.monotonic()
    try:
        answer = endpoint_ask(
            endpoint=endpoint, task_type="", question=TEST_QUESTION, context=TEST_CONTEXT
        )
    except ModelUnavailable as exc:
        return {
            "ok": False,
            "answer": "",
            "model_id": "",
            "model_version": "",
            "error": exc.reason,
            "seconds": round(time.monotonic() - started, 3),
        }
    return {
        "ok": True,
        "answer": answer.text[:2000],
        "model_id": answer.model_id,
        "model_version": answer.model_version,
        "error": "",
        "seconds": round(time.monotonic() - started, 3),
    }
