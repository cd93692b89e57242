// Live parts of the requester pages. An element with data-live-url is filled from that
// URL (an HTML fragment the server renders and escapes): at once when data-live-load is
// "now", then every data-live-seconds seconds while the tab is visible (0: never again).
(function () {
  "use strict";
  function follow(element) {
    var url = element.getAttribute("data-live-url");
    var seconds = parseInt(element.getAttribute("data-live-seconds") || "0", 10);
    function refresh() {
      if (document.hidden) { return; }
      fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (response) {
          if (response.ok) { return response.text(); }
          throw new Error("The server answered " + response.status + ".");
        })
        .then(function (html) {
          element.innerHTML = html;
          element.setAttribute("data-live-updated", new Date().toISOString());
        })
        .catch(function (error) {
          // Never leave a placeholder ("Measuring…") standing: say what happened. Content
          // already shown stays; the next tick tries again.
          if (!element.hasAttribute("data-live-updated")) {
            var note = document.createElement("p");
            note.className = "warn live-error";
            note.setAttribute("role", "alert");
            note.textContent = "Could not load this section (" + (error && error.message ? error.message : "network error") + "). Reload the page to try again.";
            element.replaceChildren(note);
          }
        });
    }
    if (element.getAttribute("data-live-load") === "now") { refresh(); }
    if (seconds > 0) { window.setInterval(refresh, seconds * 1000); }
  }
  document.querySelectorAll("[data-live-url]").forEach(follow);
})();
