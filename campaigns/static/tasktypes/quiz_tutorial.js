// Immediate feedback on a tutorial's practice questions: opening "Check your answer"
// says whether the choice was right. Without JS the answer and explanation still show.
(function () {
  "use strict";
  document.querySelectorAll(".tt-practice-item").forEach(function (item) {
    var details = item.querySelector(".tt-practice-answer");
    var verdict = item.querySelector(".tt-practice-verdict");
    if (!details || !verdict) return;
    var inputs = Array.prototype.slice.call(item.querySelectorAll("[data-tt-correct]"));
    function judge() {
      var chosen = inputs.filter(function (i) { return i.checked; });
      if (!chosen.length) {
        verdict.textContent = "You have not chosen an answer yet.";
        verdict.className = "tt-practice-verdict";
        return;
      }
      var right = inputs.every(function (i) {
        return i.checked === (i.getAttribute("data-tt-correct") === "1");
      });
      verdict.textContent = right ? "Right!" : "Not quite.";
      verdict.className = "tt-practice-verdict " + (right ? "tt-right" : "tt-wrong");
    }
    details.addEventListener("toggle", function () { if (details.open) judge(); });
    inputs.forEach(function (i) {
      i.addEventListener("change", function () { if (details.open) judge(); });
    });
  });
})();
