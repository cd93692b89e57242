"""Prolific's rules for a stage: minimum hourly reward, currency, requirements → filters.

Sources (docs/providers.md has the call table):
- Minimum reward: Prolific enforces at least £6.00 / $8.00 an hour (researcher help,
  "Prolific's payment principles"; the API reference does not list the numbers, so
  they are a setting, ``PROLIFIC_MIN_HOURLY``, and a study below them is refused here
  before Prolific is asked).
- Study currency: the workspace's (GBP or USD); rewards are sent in its minor unit and
  bonuses as a decimal in it (``create-bonus-payments``: "The amount will be in the
  study currency"). ``PROLIFIC_CURRENCY`` says which.
- Filters: ``filters`` on the study, ``{"filter_id", "selected_values"}`` for select
  filters and ``{"filter_id", "selected_range": {"lower", "upper"}}`` for range ones
  (api-reference/filters, "Filters Overview"). The published schema types a bound as
  ``oneOf [integer, string, number]``, under which a whole number matches two branches
  and is refused; bounds are sent as strings of digits, which every reading accepts.
- Countries: requirements name ISO 3166 codes (the same on every platform); on
  Prolific they are resolved through the filters catalogue (``filters.py``) into the
  ``current-country-of-residence`` filter's choice ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.conf import settings

from campaigns.design.platform_rules import PlatformRules, RequirementNote, RequirementRefused
from campaigns.platforms.prolific.filters import (
    COUNTRY_NAMES,
    countries_resolve,
    country_choices,
    country_name,
)

DEFAULT_MIN_HOURLY = {"GBP": "6.00", "USD": "8.00"}
# Filter ids qaportal sends (Prolific's catalogue: GET /api/v1/filters/).
FILTER_APPROVAL_RATE = "approval_rate"
FILTER_APPROVAL_NUMBERS = "approval_numbers"
FILTER_COUNTRY = "current-country-of-residence"
FILTER_GROUP_ALLOW = "participant_group_allowlist"
FILTER_GROUP_BLOCK = "participant_group_blocklist"
KNOWN_FILTERS = frozenset(
    {
        FILTER_APPROVAL_RATE,
        FILTER_APPROVAL_NUMBERS,
        FILTER_COUNTRY,
        FILTER_GROUP_ALLOW,
        FILTER_GROUP_BLOCK,
        "custom_allowlist",
        "custom_blocklist",
    }
)
# Requirement kinds that are qaportal's own qualifications: participant groups.
_GROUP_KINDS = frozenset({"quiz", "round", "gold_accuracy", "manual"})
_STAGE_REFERENCES = ("quiz_stage", "round_stage", "graders_stage", "qualification_type_id")

NOTE_APPROVAL_RATE = (
    "Prolific's approval rate is the share of a participant's Prolific submissions that "
    "researchers approved; MTurk's counted approved HITs. Most Prolific participants are "
    "above 95 %, so a high minimum narrows the pool less than on MTurk."
)
NOTE_APPROVED_COUNT = (
    "Prolific counts approved studies (submissions), not HITs. A participant does far "
    "fewer, longer studies than an MTurk worker did HITs: “{n} approved HITs” on MTurk is "
    "not {n} approved studies here. The number is sent unchanged as Prolific's "
    "approval_numbers filter; check the eligible count on Prolific before publishing."
)
NOTE_COUNTRY = (
    "Prolific filters on current country of residence (what the participant declares, "
    "checked by Prolific), not MTurk's locale of the account's address. The ISO codes are "
    "sent as the filter's choice ids from Prolific's filters catalogue: {names}."
)
NOTE_ADULT = "Every Prolific participant is 18 or older: nothing is sent."
NOTE_GROUP = (
    "Granted in qaportal (quiz passed, round qualified, promoted grader), kept on Prolific "
    "as a participant group and sent as an allow-list filter."
)


def _money(value: Any) -> Decimal:
    return Decimal(str(value))


class ProlificRules(PlatformRules):
    """Prolific: minimum hourly reward by currency, requirement → filter mapping."""

    name = "prolific"
    requires_reward = True  # a study's reward is 1 minor unit or more
    rejection_message_min = 100  # Prolific refuses shorter rejection messages
    test_participants = True  # POST /api/v1/researchers/participants/, …/test-study
    checked_kinds = frozenset({"approval_rate", "approved_count", "locale", "country"})

    def __init__(self, *, catalogue: Mapping[str, Any] | None = None) -> None:
        """``catalogue``: Prolific's filters catalogue (``filters.filter_catalogue``); without
        it country codes are checked against the ISO table and resolved at publishing."""
        self.catalogue = catalogue

    @property
    def currency(self) -> str:  # type: ignore[override]
        return str(getattr(settings, "PROLIFIC_CURRENCY", "GBP")).upper()

    def minimum_hourly(self, currency: str) -> Decimal | None:
        table = {**DEFAULT_MIN_HOURLY, **(getattr(settings, "PROLIFIC_MIN_HOURLY", None) or {})}
        value = table.get(currency.upper())
        return _money(value) if value is not None else None

    def requirement_filter(self, req: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """The Prolific filter for one requirement (None: nothing to send) and the note
        that says how it differs. ``RequirementRefused`` when Prolific cannot express it."""
        kind = req.get("kind")
        if any(req.get(k) is not None for k in _STAGE_REFERENCES) or kind in _GROUP_KINDS:
            return None, NOTE_GROUP  # the allow-list group, added by study_filters
        if kind == "approval_rate":
            lower = self._number(req, "min", 0, 100)
            return (
                {
                    "filter_id": FILTER_APPROVAL_RATE,
                    "selected_range": {"lower": str(lower), "upper": "100"},
                },
                NOTE_APPROVAL_RATE,
            )
        if kind == "approved_count":
            lower = self._number(req, "min", 0, None)
            return (
                {"filter_id": FILTER_APPROVAL_NUMBERS, "selected_range": {"lower": str(lower)}},
                NOTE_APPROVED_COUNT.format(n=f"{lower:,}"),
            )
        if kind in ("locale", "country"):
            return self._country_filter(req)
        if kind == "adult":
            return None, NOTE_ADULT
        if kind == "masters":
            raise RequirementRefused(
                "Prolific has no Masters qualification. Use an approval_rate and an "
                "approved_count requirement, or a quiz stage, instead.",
                requirement=req,
            )
        raise RequirementRefused(
            f"Prolific has no filter for the requirement {kind!r}; remove it or express it "
            "as approval_rate, approved_count, country or a qualification.",
            requirement=req,
        )

    def _country_filter(self, req: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        raw = req.get("countries", req.get("values", []))
        if not isinstance(raw, list):
            raise RequirementRefused(
                "countries must be a list of ISO 3166 country codes (US, GB, …).", requirement=req
            )
        codes = [str(v).strip() for v in raw]
        if req.get("exclude"):
            raise RequirementRefused(
                "Prolific's country filter selects countries; it cannot exclude them. "
                "List the countries to include instead.",
                requirement=req,
            )
        if not codes:
            raise RequirementRefused(
                "A country requirement needs at least one country.", requirement=req
            )
        regions = [c for c in codes if "-" in c]
        if regions:
            raise RequirementRefused(
                f"Prolific filters on countries, not regions: {', '.join(regions)} has no "
                "Prolific equivalent (use the country).",
                requirement=req,
            )
        if self.catalogue is not None:
            ids, missing = countries_resolve(codes, self.catalogue)
            if missing:
                raise RequirementRefused(
                    f"Prolific's filters catalogue offers no country for {', '.join(missing)}.",
                    requirement=req,
                )
            choices = country_choices(self.catalogue)
            names = ", ".join(f"{choices.get(i, i)} (choice {i})" for i in ids)
            return {"filter_id": FILTER_COUNTRY, "selected_values": ids}, NOTE_COUNTRY.format(
                names=names
            )
        unknown = [c for c in codes if not c.isdigit() and c.upper() not in COUNTRY_NAMES]
        if unknown:
            raise RequirementRefused(
                f"{', '.join(unknown)}: not an ISO 3166 country code qaportal knows "
                "(US, GB, CA, …).",
                requirement=req,
            )
        names = ", ".join(country_name(c) if not c.isdigit() else f"choice {c}" for c in codes)
        return {"filter_id": FILTER_COUNTRY, "selected_values": codes}, NOTE_COUNTRY.format(
            names=names
        )

    def requirement_choices(self) -> dict[str, list[dict[str, str]]]:
        """What the stage page offers by name: the countries (ISO code, name, and
        Prolific's choice id when the catalogue is at hand)."""
        if self.catalogue is not None:
            rows = []
            for code in sorted(COUNTRY_NAMES):
                ids, missing = countries_resolve([code], self.catalogue)
                if not missing:
                    rows.append({"code": code, "name": country_name(code), "choice": ids[0]})
            return {"countries": rows}
        return {
            "countries": [
                {"code": code, "name": country_name(code), "choice": ""}
                for code in sorted(COUNTRY_NAMES)
            ]
        }

    @staticmethod
    def _number(req: Mapping[str, Any], key: str, low: int, high: int | None) -> int:
        raw = req.get(key, low)
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = int(raw)
        except (TypeError, ValueError):
            raise RequirementRefused(
                f"{key} must be a whole number, not {raw!r}.", requirement=req
            ) from None
        if value < low or (high is not None and value > high):
            upper = f" to {high}" if high is not None else " or more"
            raise RequirementRefused(f"{key} must be {low}{upper}, not {value}.", requirement=req)
        return value

    def requirement_notes(self, requirements: Iterable[Mapping[str, Any]]) -> list[RequirementNote]:
        notes = []
        for req in requirements:
            if not isinstance(req, Mapping):
                notes.append(RequirementNote({}, "", "", "A requirement must be an object."))
                continue
            try:
                found, note = self.requirement_filter(req)
            except RequirementRefused as exc:
                notes.append(RequirementNote(dict(req), "", "", str(exc)))
                continue
            if found is not None:
                name = str(found["filter_id"])
            elif note == NOTE_GROUP:
                name = FILTER_GROUP_ALLOW
            else:
                name = ""
            notes.append(RequirementNote(dict(req), name, note))
        return notes

    def study_filters(
        self,
        requirements: Iterable[Mapping[str, Any]],
        *,
        allow_groups: Iterable[str] = (),
        block_groups: Iterable[str] = (),
    ) -> list[dict[str, Any]]:
        """The study's ``filters``: one per expressible requirement, then the allow- and
        block-list participant groups. ``RequirementRefused`` for any other requirement,
        and for country codes when no filters catalogue resolves them."""
        filters = []
        for req in requirements:
            found, _ = self.requirement_filter(req)
            if (
                found is not None
                and found["filter_id"] == FILTER_COUNTRY
                and self.catalogue is None
                and not all(str(v).isdigit() for v in found["selected_values"])
            ):
                raise RequirementRefused(
                    "Country codes are sent as choice ids from Prolific's filters catalogue, "
                    "which could not be read.",
                    requirement=req,
                )
            if found is not None:
                filters.append(found)
        allow = sorted(set(allow_groups))
        block = sorted(set(block_groups))
        if allow:
            filters.append({"filter_id": FILTER_GROUP_ALLOW, "selected_values": allow})
        if block:
            filters.append({"filter_id": FILTER_GROUP_BLOCK, "selected_values": block})
        return filters
