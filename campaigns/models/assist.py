"""Model in the loop: a requester's model endpoints and every call made to one."""

from __future__ import annotations

from decimal import Decimal
from typing import ClassVar

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q


class ModelEndpointKind(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible chat completions"
    BASELINE_BM25 = "baseline_bm25", "Built-in baseline (BM25 sentence retrieval)"


class ModelCallPurpose(models.TextChoices):
    ADVERSARIAL = "adversarial", "Adversarial writing"
    LLM_FLAG = "llm_flag", "Answers a model wrote"


class ModelCallStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    UNAVAILABLE = "unavailable", "Model unavailable"


class ModelEndpoint(models.Model):
    """One model a requester can put in the loop: an OpenAI-compatible chat-completions
    endpoint (vLLM, llama.cpp's server, Ollama, TGI, a hosted API) or the built-in
    baseline, which needs no network.

    ``key_ciphertext`` is a Fernet token (``campaigns.assist.endpoints``, the keys of
    platform credentials); the key is never stored, shown or logged in clear.
    ``prompt_templates`` maps a task type's name (or ``"default"``) to a template with
    ``{question}`` and ``{context}``.
    """

    # What its owner tunes once the endpoint is named and addressed, in the order the
    # admin, the API and ``campaigns.assist.endpoints`` show and take them.
    TUNING_FIELDS: ClassVar[tuple[str, ...]] = (
        "prompt_templates",
        "timeout_seconds",
        "concurrency",
        "price_in_per_1k",
        "price_out_per_1k",
        "currency",
    )

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_endpoints"
    )
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=16, choices=ModelEndpointKind.choices)
    base_url = models.URLField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    key_ciphertext = models.TextField(blank=True)
    key_hint = models.CharField(max_length=8, blank=True)
    prompt_templates = models.JSONField(default=dict, blank=True)
    timeout_seconds = models.DecimalField(
        max_digits=6, decimal_places=2, default=Decimal("10"), validators=[MinValueValidator(0)]
    )
    concurrency = models.PositiveIntegerField(default=4)
    price_in_per_1k = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    price_out_per_1k = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    currency = models.CharField(max_length=3, default="USD")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="modelendpoint_name_per_owner"),
            models.CheckConstraint(
                condition=Q(timeout_seconds__gt=0), name="modelendpoint_timeout_positive"
            ),
            models.CheckConstraint(
                condition=Q(concurrency__gte=1), name="modelendpoint_concurrency_positive"
            ),
            models.CheckConstraint(
                condition=Q(price_in_per_1k__gte=0) & Q(price_out_per_1k__gte=0),
                name="modelendpoint_prices_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # never the ciphertext
        return f"<ModelEndpoint {self.pk} {self.kind} {self.name!r}>"


class ModelCall(models.Model):
    """One question put to a model endpoint, written before it is asked.

    A Celery task (``assist.model_call_run``) asks it off the request path, retries
    429, 5xx, timeouts and refused connections with backoff, and ends ``done`` (with the
    answer, the model id and version the endpoint reported, tokens and cost) or
    ``unavailable``. ``idempotency_key`` is unique: the same call is asked for once.
    """

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="calls")
    campaign = models.ForeignKey(
        "campaigns.Campaign", on_delete=models.CASCADE, related_name="model_calls"
    )
    stage = models.ForeignKey(
        "campaigns.Stage", on_delete=models.CASCADE, related_name="model_calls"
    )
    item = models.ForeignKey("campaigns.Item", on_delete=models.CASCADE, related_name="model_calls")
    assignment = models.ForeignKey(
        "campaigns.Assignment",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="model_calls",
    )
    purpose = models.CharField(max_length=16, choices=ModelCallPurpose.choices)
    try_number = models.PositiveIntegerField(default=1)
    idempotency_key = models.CharField(max_length=200, unique=True)
    status = models.CharField(
        max_length=16, choices=ModelCallStatus.choices, default=ModelCallStatus.PENDING
    )
    prompt = models.JSONField(default=dict)
    answer = models.TextField(blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    model_version = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["endpoint", "status"]),
            models.Index(fields=["status", "next_attempt_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(cost__isnull=True) | Q(cost__gte=0), name="modelcall_cost_non_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"model call {self.pk} ({self.purpose}, {self.status})"


class AdversarialJudge(models.TextChoices):
    """Who said whether the model's answer was right: the app (the task type compares the
    answers), the worker, or nobody (the model was unavailable)."""

    AUTO = "auto", "the app"
    WORKER = "worker", "the worker"
    NONE = "none", "nobody: the model was unavailable"


class AdversarialTry(models.Model):
    """One try of adversarial writing (issue 38): the worker's question and answer on an
    item, written in the same transaction as the model call asking the model about it.

    ``fooled`` is None until judged (the model's answer arrives and the app or the
    worker judges it), True when the model got it wrong, False when right; a try the
    model could not answer stays None with ``model_unavailable``. A fool is claimed by
    the writer; ``verified`` records what the validation stage found (None: not yet)."""

    assignment = models.ForeignKey(
        "campaigns.Assignment", on_delete=models.CASCADE, related_name="adversarial_tries"
    )
    item = models.ForeignKey(
        "campaigns.Item", on_delete=models.CASCADE, related_name="adversarial_tries"
    )
    stage = models.ForeignKey(
        "campaigns.Stage", on_delete=models.CASCADE, related_name="adversarial_tries"
    )
    worker = models.ForeignKey(
        "campaigns.Worker", on_delete=models.CASCADE, related_name="adversarial_tries"
    )
    try_number = models.PositiveIntegerField()
    question = models.TextField()
    entry = models.JSONField(default=dict)
    model_call = models.OneToOneField(
        ModelCall,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="adversarial_try",
    )
    model_answer = models.TextField(blank=True)
    model_unavailable = models.BooleanField(default=False)
    judged_by = models.CharField(max_length=8, choices=AdversarialJudge.choices, blank=True)
    fooled = models.BooleanField(null=True, blank=True)
    verified = models.BooleanField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    judged_at = models.DateTimeField(null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["assignment_id", "item_id", "try_number"]
        indexes = [
            models.Index(fields=["stage", "created_at"]),
            models.Index(fields=["stage", "worker"]),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "item", "try_number"], name="adversarialtry_once_per_try"
            ),
            models.CheckConstraint(
                condition=Q(try_number__gte=1), name="adversarialtry_numbered_from_1"
            ),
        ]

    def __str__(self) -> str:
        return f"adversarial try {self.try_number} of assignment {self.assignment_id}"
