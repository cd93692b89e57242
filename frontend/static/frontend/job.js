// The job page: polls the job's status (JSON) every second until it is done or failed,
// moving the progress bar and showing the download (or the errors) at the end.
(function () {
  "use strict";
  var box = document.getElementById("job");
  if (!box) { return; }
  var url = box.getAttribute("data-job-url");
  function text(id, value) {
    var element = document.getElementById(id);
    if (element) { element.textContent = value === null || value === undefined ? "" : String(value); }
  }
  function show(job) {
    document.getElementById("job-progress").value = job.progress;
    text("job-percent", Math.round(job.progress * 100) + " %");
    text("job-status", job.status);
    document.getElementById("job-status").className = "state state-" + job.status;
    text("job-phase", job.phase);
    text("job-rows", job.rows_done.toLocaleString());
    text("job-row-count", job.row_count);
    text("job-checksum", job.checksum_sha256);
    text("job-bytes", job.byte_count);
    if (job.status === "done") {
      var link = document.getElementById("job-download");
      if (link && job.download_url) { link.setAttribute("href", job.download_url); }
      if (job.result && job.result.created !== undefined) {
        text("job-created", "Stored " + job.result.created.toLocaleString() + " items.");
      }
      document.getElementById("job-done").hidden = false;
    }
    if (job.status === "failed") {
      text("job-error", job.error);
      var list = document.getElementById("job-errors");
      list.textContent = "";
      (job.errors || []).slice(0, 20).forEach(function (e) {
        var item = document.createElement("li");
        item.textContent = "row " + e.row + (e.field ? ", " + e.field : "") + ": " + e.message;
        list.appendChild(item);
      });
      document.getElementById("job-failed").hidden = false;
    }
    return job.status === "done" || job.status === "failed";
  }
  function poll() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (job) {
        if (job === null || !show(job)) { window.setTimeout(poll, 1000); }
      })
      .catch(function () { window.setTimeout(poll, 2000); });
  }
  poll();
})();
