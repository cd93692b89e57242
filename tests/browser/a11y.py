"""What a person sees, measured in the page: axe-core's violations of every impact
(minor, moderate, serious, critical), horizontal scrolling and touch targets smaller than 44 px.

axe-core is vendored (``tests/browser/vendor/axe-core``: the npm package's
``axe.min.js``, its version and licences) and injected from disk as an init script
(the pages' Content-Security-Policy stays as it is), so the checks need neither the
registry nor the internet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
# Acceptance asks for 0 axe violations on every state the browser tests visit.
IMPACTS = ("minor", "moderate", "serious", "critical")
TOUCH_MIN = 44

# Visible controls a finger must hit; a checkbox or radio counts with its label.
# Links inside running text are exempt (WCAG 2.5.5), link-styled buttons are not.
_MEASURE = """
(min) => {
  const seen = (el) => {
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && !el.closest("[inert]")
      && !el.closest("[hidden]") && r.right > 0 && r.left < window.innerWidth;
  };
  const small = [];
  const sel = "button, a.button, input:not([type=hidden]), select, textarea, summary";
  for (const el of document.querySelectorAll(sel)) {
    if (!seen(el)) continue;
    let r = el.getBoundingClientRect();
    let box = { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
    if ((el.type === "checkbox" || el.type === "radio") && el.labels && el.labels.length) {
      const l = el.labels[0].getBoundingClientRect();
      box = { top: Math.min(box.top, l.top), bottom: Math.max(box.bottom, l.bottom),
              left: Math.min(box.left, l.left), right: Math.max(box.right, l.right) };
    }
    const h = box.bottom - box.top, w = box.right - box.left;
    if (h < min - 0.5 || w < min - 0.5) {
      small.push((el.outerHTML || "").slice(0, 120) + " " + Math.round(w) + "x" + Math.round(h));
    }
  }
  const doc = document.documentElement;
  return { scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, small: small };
}
"""


def axe_violations(page: Any, *, impacts: tuple[str, ...] = IMPACTS) -> list[str]:
    """axe-core's violations of ``impacts`` on the page as it is now, one line each."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # An init script (not a <script> tag): the pages' Content-Security-Policy
        # allows no inline script, and the check must not weaken it.
        page.context.add_init_script(path=str(AXE))
        page.reload()
    result = page.evaluate(
        "async () => { const r = await axe.run(document, {resultTypes: ['violations']});"
        " return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)})); }"
    )
    return [
        f"{v['impact']}: {v['id']} ({v['help']}) at {', '.join(v['nodes'])}"
        for v in result
        if v["impact"] in impacts
    ]


def layout_problems(page: Any, *, touch_min: int = TOUCH_MIN) -> list[str]:
    """Horizontal scrolling and touch targets under ``touch_min`` px on the page."""
    found = page.evaluate(_MEASURE, touch_min)
    problems = [f"target under {touch_min} px: {s}" for s in found["small"]]
    if found["scrollWidth"] > found["clientWidth"]:
        problems.append(
            f"scrolls sideways: {found['scrollWidth']} px wide in {found['clientWidth']} px"
        )
    return problems


def assert_person_can_use(page: Any, *, where: str, touch: bool = True) -> None:
    """No axe violation of any impact, no sideways scrolling and (``touch``: the
    worker pages, made for phones) no target under 44 px."""
    problems = axe_violations(page) + layout_problems(page, touch_min=TOUCH_MIN if touch else 0)
    assert not problems, f"{where}:\n" + "\n".join(problems)
