// Campaign page: a link to a folded stage card (from the pipeline flow) opens it.
(function () {
  "use strict";
  function openTarget() {
    var id = window.location.hash.slice(1);
    if (!id) { return; }
    var target = document.getElementById(id);
    var card = target && target.querySelector("details.stage-card");
    // A stage folded inside its arm's group: the group opens too.
    for (var up = target && target.parentElement; up; up = up.parentElement) {
      if (up.tagName === "DETAILS") { up.open = true; }
    }
    if (card) { card.open = true; target.scrollIntoView(); }
    // An outcome the page answered with (a rejected upload): brought into view and
    // focused, so a screen reader reads it where the requester is.
    if (target && target.getAttribute("tabindex") === "-1") {
      target.scrollIntoView({ block: "start" });
      target.focus({ preventScroll: true });
    }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
