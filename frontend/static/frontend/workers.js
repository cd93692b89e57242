// The workers table: ticking rows fills the pseudonym list of the action form.
(function () {
  "use strict";
  document.querySelectorAll("input.pick").forEach(function (box) {
    box.addEventListener("change", function () {
      var picked = Array.from(document.querySelectorAll("input.pick:checked")).map(function (b) { return b.value; });
      document.querySelector("#worker-action textarea[name=workers]").value = picked.join("\n");
    });
  });
})();
