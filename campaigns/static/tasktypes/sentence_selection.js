// Progressive enhancement: at most N sentences per question, and "no answer"
// clears the selection. Without JS the server checks the same rules.
(function () {
  "use strict";
  document.querySelectorAll(".tt-sentence-selection").forEach(function (root) {
    var max = parseInt(root.getAttribute("data-tt-max-sentences"), 10) || 3;
    root.querySelectorAll(".tt-sentence-item").forEach(function (item) {
      var boxes = Array.prototype.slice.call(item.querySelectorAll("[data-tt-sentence]"));
      var none = item.querySelector("[data-tt-no-answer]");
      if (boxes.length && boxes[0].disabled) return; // preview
      function update() {
        var checked = boxes.filter(function (b) { return b.checked; }).length;
        boxes.forEach(function (b) {
          b.disabled = (none && none.checked) || (!b.checked && checked >= max);
        });
      }
      boxes.forEach(function (b) { b.addEventListener("change", function () {
        if (b.checked && none) none.checked = false;
        update();
      }); });
      if (none) none.addEventListener("change", function () {
        if (none.checked) boxes.forEach(function (b) { b.checked = false; });
        update();
      });
      update();
    });
  });
})();
