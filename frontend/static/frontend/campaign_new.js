// The new-campaign form: "sandbox" is ticked for a provider that has one and unticked
// (and disabled) for one without, such as the local workforce. Without this script the
// server stores no sandbox for a provider without one.
(function () {
  "use strict";
  var form = document.getElementById("campaign-create");
  if (!form) { return; }
  var provider = form.querySelector('select[name="provider"]');
  var sandbox = form.querySelector('input[name="sandbox"]');
  if (!provider || !sandbox) { return; }
  var withSandbox = (form.getAttribute("data-sandbox-providers") || "").split(" ");
  function follow(changed) {
    var has = withSandbox.indexOf(provider.value) >= 0;
    // On load the form keeps what was chosen (a form sent back with an error).
    if (changed || !has) { sandbox.checked = has; }
    sandbox.disabled = !has;
  }
  provider.addEventListener("change", function () { follow(true); });
  follow(false);
})();
