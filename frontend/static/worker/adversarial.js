/* Model in the loop: while the model answers a try, poll its state and show the page
 * again once the answer is in (or the page stops waiting for it). Without JavaScript
 * the page offers a link to look again. */
(function () {
  "use strict";

  var node = document.querySelector("[data-adv-poll]");
  if (!node || !window.fetch) return;
  var url = node.getAttribute("data-adv-poll");
  var polls = 0;
  var MAX_POLLS = 300;

  function poll() {
    polls += 1;
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (state) {
        if (state && (state.final || state.go_on_without_model)) {
          window.location.reload();
        } else if (polls < MAX_POLLS) {
          window.setTimeout(poll, 700);
        }
      })
      .catch(function () { if (polls < MAX_POLLS) window.setTimeout(poll, 1500); });
  }
  window.setTimeout(poll, 400);
})();
