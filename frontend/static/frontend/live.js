// Live parts of the requester pages: an element with data-live-url is refreshed from
// that URL (an HTML fragment rendered by the server) every data-live-seconds seconds
// while the tab is visible. The server escapes everything it renders; the fragment
// replaces the element's content as a whole.
(function () {
  "use strict";
  function follow(element) {
    var url = element.getAttribute("data-live-url");
    var seconds = parseInt(element.getAttribute("data-live-seconds") || "5", 10);
    function refresh() {
      if (document.hidden) { return; }
      fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (html !== null) {
            element.innerHTML = html;
            element.setAttribute("data-live-updated", new Date().toISOString());
          }
        })
        .catch(function () { /* offline for a moment: the next tick tries again */ });
    }
    window.setInterval(refresh, Math.max(seconds, 1) * 1000);
  }
  document.querySelectorAll("[data-live-url]").forEach(follow);
})();
