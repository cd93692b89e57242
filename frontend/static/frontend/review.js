// The review queue: keyboard shortcuts and a confirmation of the money a bulk decision
// moves. Without this script every form still works (no confirmation, no shortcuts).
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("li.review"));
  var current = -1;

  function focusRow(index) {
    if (!rows.length) { return; }
    current = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach(function (row, i) { row.classList.toggle("focused", i === current); });
    rows[current].scrollIntoView({ block: "nearest" });
  }

  function cents(text) { return Math.round(parseFloat(text || "0") * 100); }
  function money(c) { return (c / 100).toFixed(2); }

  var bulk = document.getElementById("bulk-review");
  if (bulk) {
    bulk.addEventListener("submit", function (event) {
      var decision = event.submitter ? event.submitter.value : "approve";
      var chosen = rows.filter(function (row) {
        var box = row.querySelector('input[name="ids"]');
        return box && box.checked;
      });
      if (!chosen.length) { return; }  // the server says "Select at least one assignment."
      var reward = 0, fee = 0;
      chosen.forEach(function (row) {
        reward += cents(row.getAttribute("data-reward"));
        fee += cents(row.getAttribute("data-fee"));
      });
      var currency = bulk.getAttribute("data-currency") || "";
      var text = decision === "approve"
        ? "Approve " + chosen.length + " assignment(s)? This pays " + money(reward) + " " + currency +
          " in rewards" + (fee ? " + " + money(fee) + " " + currency + " in fees" : "") + "."
        : "Reject " + chosen.length + " assignment(s)? Their workers are not paid " + money(reward) +
          " " + currency + " and see your feedback.";
      if (!window.confirm(text)) { event.preventDefault(); }
    });
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(target.tagName) && target.type !== "checkbox") { return; }
    var row = rows[current];
    switch (event.key) {
      case "j": focusRow(current + 1); break;
      case "k": focusRow(current - 1); break;
      case "x":
        if (row) { var box = row.querySelector('input[name="ids"]'); if (box) { box.checked = !box.checked; } }
        break;
      case "a":
        if (row) {
          var approve = row.querySelector('form.decide button[value="approve"]');
          if (approve) { approve.click(); }
        }
        break;
      case "r":
        if (row) {
          var feedback = row.querySelector("form.decide textarea");
          if (feedback) { event.preventDefault(); feedback.focus(); }
        }
        break;
      case "b":
        if (row) {
          var more = row.querySelector("details.more-actions");
          if (more) { event.preventDefault(); more.open = true; more.querySelector('input[name="amount"]').focus(); }
        }
        break;
      default: return;
    }
  });
})();
