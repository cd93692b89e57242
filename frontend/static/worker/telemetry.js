/* Page telemetry and the countdown of the worker page.
 *
 * Fills the hidden "telemetry" field of the task form with what the page saw:
 * keystrokes, paste events (field and pasted length, never the text), focus
 * losses, visibility changes, time to first input and time on the page.
 * The server treats all of it as a claim and keeps bounded numbers only.
 * Without JavaScript the form still works; the field is just empty.
 */
(function () {
  "use strict";

  var form = document.querySelector("form[data-telemetry]");
  if (!form) return;
  var field = form.querySelector("[data-telemetry-field]");
  var started = Date.now();
  var MAX_PASTES = 100;
  var data = {
    keystrokes: 0,
    pastes: [],
    focus_losses: 0,
    visibility_changes: 0,
    first_input_ms: null,
    page_ms: 0
  };

  function firstInput() {
    if (data.first_input_ms === null) data.first_input_ms = Date.now() - started;
  }

  function write() {
    data.page_ms = Date.now() - started;
    if (field) field.value = JSON.stringify(data);
  }

  form.addEventListener("keydown", function () {
    data.keystrokes += 1;
    firstInput();
  });
  form.addEventListener("input", firstInput);
  form.addEventListener("paste", function (event) {
    var text = "";
    if (event.clipboardData) text = event.clipboardData.getData("text") || "";
    if (data.pastes.length < MAX_PASTES) {
      data.pastes.push({ field: (event.target && event.target.name) || "", length: text.length });
    }
    firstInput();
  });
  window.addEventListener("blur", function () { data.focus_losses += 1; });
  document.addEventListener("visibilitychange", function () { data.visibility_changes += 1; });

  var submitting = false;
  form.addEventListener("submit", function (event) {
    write();
    // A check of the task's page refused this submit and said why: the next click counts.
    if (event.defaultPrevented) return;
    // One click, one POST; the server stores a submission once anyway.
    if (submitting) { event.preventDefault(); return; }
    submitting = true;
    window.setTimeout(function () { submitting = false; }, 4000);
  });

  // Countdown of the assignment's time left (the server's deadline is the one that counts).
  var timer = document.querySelector("[data-seconds-left]");
  if (timer) {
    var deadline = started + parseInt(timer.getAttribute("data-seconds-left"), 10) * 1000;
    var out = timer.querySelector(".w-timer-value");
    var tick = function () {
      var left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      var m = Math.floor(left / 60), s = left % 60;
      if (out) out.textContent = m + ":" + (s < 10 ? "0" : "") + s;
      if (left <= 60) timer.classList.add("w-timer-low");
      if (left > 0) window.setTimeout(tick, 1000);
    };
    tick();
  }
})();
