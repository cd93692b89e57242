// Stage edit page: the preview beside the form follows what is typed, before saving.
// The form (unsaved) is posted to the preview URL, which renders the worker's page with
// those instructions and settings; nothing is stored.
(function () {
  "use strict";
  var form = document.getElementById("stage-form");
  var frame = document.getElementById("stage-preview");
  if (!form || !frame) { return; }
  var url = form.getAttribute("data-preview-url");
  var timer = null;
  function refresh() {
    fetch(url, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html !== null) {
          frame.srcdoc = html;
          frame.setAttribute("data-preview-updated", new Date().toISOString());
        }
      })
      .catch(function () { /* the next edit tries again */ });
  }
  function later() {
    if (timer) { window.clearTimeout(timer); }
    timer = window.setTimeout(refresh, 400);
  }
  form.addEventListener("input", later);
  form.addEventListener("change", later);
})();
