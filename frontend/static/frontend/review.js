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
  // Asked here: the server's own confirmation page (which works without this script)
  // is not shown a second time.
  function confirmed(ok, event) {
    if (!ok) { event.preventDefault(); return; }
    var field = bulk.querySelector('input[name="confirmed"]');
    if (!field) {
      field = document.createElement("input");
      field.type = "hidden";
      field.name = "confirmed";
      bulk.appendChild(field);
    }
    field.value = "yes";
  }
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
      // The local workforce is paid nothing through qaportal: no money to state.
      if (bulk.getAttribute("data-moves-money") === "0") {
        var plain = decision === "approve"
          ? "Approve " + chosen.length + " assignment(s)?"
          : "Reject " + chosen.length + " assignment(s)? Their workers see your feedback.";
        confirmed(window.confirm(plain), event);
        return;
      }
      var text = decision === "approve"
        ? "Approve " + chosen.length + " assignment(s)? This pays " + money(reward) + " " + currency +
          " in rewards" + (fee ? " + " + money(fee) + " " + currency + " in fees" : "") + "."
        : "Reject " + chosen.length + " assignment(s)? Their workers are not paid " + money(reward) +
          " " + currency + " and see your feedback.";
      confirmed(window.confirm(text), event);
    });
  }

  // Select all on this page (the bulk form's checkbox; "*" on the keyboard).
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input[name="ids"][form="bulk-review"]'));
  var all = document.querySelector("[data-select-all]");
  function syncAll() {
    if (!all) { return; }
    var checked = boxes.filter(function (b) { return b.checked; }).length;
    all.checked = checked === boxes.length && checked > 0;
    all.indeterminate = checked > 0 && checked < boxes.length;
  }
  if (all && boxes.length) {
    all.closest("label").hidden = false;
    all.addEventListener("change", function () {
      boxes.forEach(function (b) { b.checked = all.checked; });
      syncAll();
    });
    boxes.forEach(function (b) { b.addEventListener("change", syncAll); });
  }

  // Entity-link decisions without a page reload: the form posts with fetch, the item
  // says what was decided (or why not) in place, and the keyboard moves on.
  function decideLinks(form) {
    var status = form.querySelector(".decide-status");
    var button = form.querySelector('button[type="submit"]');
    if (button.disabled) { return; }
    button.disabled = true;
    if (status) { status.textContent = "Saving…"; }
    fetch(form.action, {
      method: "POST", body: new FormData(form), credentials: "same-origin",
      headers: { Accept: "application/json" }
    }).then(function (r) {
      return r.json().catch(function () { return { ok: false, message: "The server answered " + r.status + "." }; });
    }).then(function (data) {
      if (status) { status.textContent = data.message || (data.ok ? "Decided." : "Not decided."); }
      status.classList.toggle("error", !data.ok);
      var item = form.closest("li.review");
      if (data.ok && item) {
        item.classList.add("decided");
        button.textContent = "Decide again";
      }
      button.disabled = false;
    }).catch(function () {
      if (status) { status.textContent = "Not saved: the server could not be reached. Try again."; }
      button.disabled = false;
    });
  }
  Array.prototype.slice.call(document.querySelectorAll("form.link-decide")).forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      decideLinks(form);
    });
    form.addEventListener("focusin", function () {
      var i = rows.indexOf(form.closest("li.review"));
      if (i >= 0 && i !== current) { focusRow(i); }
    });
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(target.tagName) && target.type !== "checkbox" && target.type !== "radio") { return; }
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
          if (more) {
            event.preventDefault();
            more.open = true;
            var first = more.querySelector('input[name="amount"], input[name="reason"]');
            if (first) { first.focus(); }
          }
        }
        break;
      case "*":
        if (all && boxes.length) { all.checked = !all.checked; all.dispatchEvent(new Event("change")); }
        break;
      case "d":
        if (row) {
          var linkForm = row.querySelector("form.link-decide");
          if (linkForm) { event.preventDefault(); decideLinks(linkForm); }
        }
        break;
      default:
        if (row && /^[1-9]$/.test(event.key)) {
          var picks = row.querySelectorAll('form.link-decide input[name="choice"]');
          var pick = picks[parseInt(event.key, 10) - 1];
          if (pick) { pick.checked = true; pick.focus(); }
          return;
        }
        return;
    }
  });
})();
