/* Hands a saved assignment back to MTurk: posts the externalSubmit form on load.
 * Without JavaScript the worker presses the form's button instead.
 */
(function () {
  "use strict";
  var form = document.querySelector("form[data-autosubmit]");
  if (form) form.submit();
})();
