// The review queue: decisions in place (fetch, no reload), keyboard shortcuts and a
// confirmation of the money a bulk decision moves. Without this script every form still
// works: a plain post comes back to the same place on the page (no confirmation, no
// shortcuts). A refused or failed request says why in the row and keeps what was typed.
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

  // --- decisions in place ------------------------------------------------------------

  // Posts ``form`` (plus ``extra`` fields) asking for JSON; ``done(data, httpStatus)``
  // gets the server's answer, or {ok: false, message} when it could not be reached.
  function post(form, extra, done) {
    var body = new FormData(form);
    Object.keys(extra || {}).forEach(function (k) { body.set(k, extra[k]); });
    fetch(form.action, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { Accept: "application/json" }
    }).then(function (r) {
      return r.json().catch(function () {
        return { ok: false, message: "The server answered " + r.status + "; nothing changed. Try again." };
      }).then(function (data) { done(data, r.status); });
    }).catch(function () {
      done({ ok: false, message: "Not saved: the server could not be reached. Try again." }, 0);
    });
  }

  function say(status, message, ok) {
    if (!status) { return; }
    status.textContent = message;
    status.classList.toggle("error", !ok);
  }

  function nextAfter(row) {
    var i = rows.indexOf(row);
    if (i >= 0 && i === current) {
      for (var n = i + 1; n < rows.length; n++) {
        if (!rows[n].classList.contains("decided")) { focusRow(n); return; }
      }
    }
  }

  var countEl = document.querySelector(".queue-count");
  function countDown(selector) {
    var el = selector ? document.querySelector(selector) : countEl;
    if (!el) { return; }
    var m = /^\d+/.exec(el.textContent.trim());
    if (m) {
      var left = Math.max(0, parseInt(m[0], 10) - 1);
      el.firstChild.textContent = el.firstChild.textContent.replace(/\d+/, String(left))
        .replace(/\b(item|assignment)s?\b/, "$1" + (left === 1 ? "" : "s"));
    }
  }

  // Approve or reject one assignment: the row says what happened, its buttons rest.
  function decideAssignment(form, decision) {
    var row = form.closest("li.review");
    var status = form.querySelector(".decide-status");
    var buttons = Array.prototype.slice.call(form.querySelectorAll('button[type="submit"]'));
    if (form.getAttribute("aria-busy") === "true") { return; }
    form.setAttribute("aria-busy", "true");
    buttons.forEach(function (b) { b.disabled = true; });
    say(status, decision === "approve" ? "Approving…" : "Rejecting…", true);
    post(form, { decision: decision }, function (data, code) {
      form.removeAttribute("aria-busy");
      say(status, data.message || (data.ok ? "Decided." : "Not decided."), !!data.ok);
      var badge = row && row.querySelector(".review-head .status");
      if (badge && data.status && data.status !== "submitted") {
        badge.textContent = data.status;
        badge.className = "status status-" + data.status;
      }
      if (data.ok || code === 409) {
        // Decided (here, or already elsewhere): nothing more to do in this row.
        row.classList.add("decided");
        var box = row.querySelector('input[name="ids"]');
        if (box) { box.checked = false; box.disabled = true; }
        var feedback = form.querySelector("textarea");
        if (feedback) { feedback.readOnly = true; }
        countDown();
        nextAfter(row);
      } else {
        buttons.forEach(function (b) { b.disabled = false; });
        if (data.outcome === "invalid") {
          var text = form.querySelector("textarea");
          if (text) { text.focus(); }
        }
      }
    });
  }
  Array.prototype.slice.call(document.querySelectorAll("form.assignment-decide")).forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var decision = event.submitter && event.submitter.value === "reject" ? "reject" : "approve";
      decideAssignment(form, decision);
    });
    var feedback = form.querySelector("textarea");
    if (feedback) {
      feedback.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          decideAssignment(form, "reject");
        }
      });
    }
  });

  // Entity-link decisions: the item says what was decided (or why not) in place, and
  // the keyboard moves on.
  function decideLinks(form) {
    var status = form.querySelector(".decide-status");
    var button = form.querySelector('button[type="submit"]');
    if (button.disabled) { return; }
    button.disabled = true;
    say(status, "Saving…", true);
    post(form, null, function (data) {
      say(status, data.message || (data.ok ? "Decided." : "Not decided."), !!data.ok);
      var item = form.closest("li.review");
      if (data.ok && item) {
        if (!item.classList.contains("decided")) { countDown(".jump-links strong"); }
        item.classList.add("decided");
        button.textContent = "Decide again";
        nextAfter(item);
      }
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
    // "Enter links yourself": the spans and candidates picked in the editor are the
    // links the JSON box holds (and posts); touching either chooses "yourself".
    var custom = form.querySelector('input[name="choice"][value="custom"]');
    var json = form.querySelector('textarea[name="links"]');
    var editor = form.querySelector(".link-editor");
    if (editor && json) {
      editor.addEventListener("tt-change", function (event) {
        var item = event.target._item;
        if (!item) { return; }
        json.value = JSON.stringify(item.links());
        if (custom) { custom.checked = true; }
      });
      editor.addEventListener("input", function () { if (custom) { custom.checked = true; } });
    }
    if (json && custom) { json.addEventListener("input", function () { custom.checked = true; }); }
  });

  function typing(target) {
    if (!target || !target.tagName) { return false; }
    if (target.isContentEditable) { return true; }
    if (target.tagName === "TEXTAREA" || target.tagName === "SELECT") { return true; }
    return target.tagName === "INPUT" && !/^(checkbox|radio|button|submit|reset)$/.test(target.type);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (typing(event.target)) { return; }
    var row = rows[current];
    switch (event.key) {
      case "j": focusRow(current + 1); break;
      case "k": focusRow(current - 1); break;
      case "x":
        if (row) { var box = row.querySelector('input[name="ids"]'); if (box && !box.disabled) { box.checked = !box.checked; } }
        break;
      case "a":
        if (row) {
          var form = row.querySelector("form.assignment-decide");
          if (form && !row.classList.contains("decided")) { event.preventDefault(); decideAssignment(form, "approve"); }
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
      case "l": {
        var firstLink = rows.filter(function (r) { return r.classList.contains("link-review-item") && !r.classList.contains("decided"); })[0]
          || rows.filter(function (r) { return r.classList.contains("link-review-item"); })[0];
        if (firstLink) { event.preventDefault(); focusRow(rows.indexOf(firstLink)); firstLink.scrollIntoView({ block: "start" }); }
        break;
      }
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

// "As the worker's page shows it": the task page of a row, fetched from the server the
// first time it is opened (rendering every row's task page made the queue slow).
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("details.as-worker-saw-it[data-src]"), function (box) {
    box.addEventListener("toggle", function () {
      if (!box.open || box.getAttribute("data-loaded")) { return; }
      box.setAttribute("data-loaded", "1");
      var slot = box.querySelector(".worker-view-slot");
      fetch(box.getAttribute("data-src"), { credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok) { throw new Error(String(response.status)); }
          return response.text();
        })
        .then(function (html) { slot.innerHTML = html; })
        .catch(function () { box.removeAttribute("data-loaded"); });
    });
  });
})();
