// Progressive enhancement: select words in the text and add them as a span row.
// Offsets are counted in code points, as the server (Python) counts them.
(function () {
  "use strict";
  document.documentElement.classList.add("tt-js");
  function cpLength(s) { return Array.from(s).length; }
  function offsetIn(root, node, offset) {
    var range = document.createRange();
    range.selectNodeContents(root);
    range.setEnd(node, offset);
    return cpLength(range.toString());
  }
  function field(type, name, value) {
    var input = document.createElement("input");
    input.type = type; input.name = name;
    if (value !== undefined) input.value = value;
    return input;
  }
  document.querySelectorAll(".tt-link-item").forEach(function (item) {
    var button = item.querySelector("[data-tt-add-span]");
    var textEl = item.querySelector("[data-tt-linktext]");
    var rows = item.querySelector("[data-tt-rows]");
    if (!button || !textEl || !rows) return;
    button.addEventListener("click", function () {
      var sel = window.getSelection();
      if (!sel || sel.rangeCount === 0) return;
      var range = sel.getRangeAt(0);
      if (!textEl.contains(range.startContainer) || !textEl.contains(range.endContainer)) return;
      var start = offsetIn(textEl, range.startContainer, range.startOffset);
      var end = offsetIn(textEl, range.endContainer, range.endOffset);
      var chars = Array.from(textEl.textContent);
      while (start < end && /\s/.test(chars[start])) start++;
      while (end > start && /\s/.test(chars[end - 1])) end--;
      if (end <= start) return;
      var text = chars.slice(start, end).join("");
      var j = parseInt(item.getAttribute("data-tt-next"), 10) || 0;
      item.setAttribute("data-tt-next", String(j + 1));
      var prefix = item.getAttribute("data-tt-prefix") + "/" + j;
      var id = "tt-" + prefix.replace(/[^A-Za-z0-9_-]/g, "-");
      var row = document.createElement("div");
      row.className = "tt-field tt-link-row";
      var caption = document.createElement("p");
      var strong = document.createElement("strong");
      strong.textContent = "\u201c" + text + "\u201d";
      caption.appendChild(strong);
      row.appendChild(caption);
      row.appendChild(field("hidden", prefix + "/start", start));
      row.appendChild(field("hidden", prefix + "/end", end));
      row.appendChild(field("hidden", prefix + "/text", text));
      var label = document.createElement("label");
      label.htmlFor = id + "-qid"; label.textContent = "Wikidata id for \u201c" + text + "\u201d";
      row.appendChild(label);
      var qid = field("text", prefix + "/qid"); qid.id = id + "-qid"; qid.placeholder = "Q\u2026";
      row.appendChild(qid);
      var none = field("checkbox", prefix + "/none", "1"); none.id = id + "-none";
      var noneLabel = document.createElement("label");
      noneLabel.htmlFor = none.id; noneLabel.textContent = "Not in Wikidata";
      row.appendChild(none); row.appendChild(noneLabel);
      rows.appendChild(row);
      qid.focus();
    });
  });
})();
