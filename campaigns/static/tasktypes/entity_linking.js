// Progressive enhancement of the linking rows (the page works without it: the worker
// types an id or ticks "Not in Wikidata").
// - Select words in the text and add them as a span row. Offsets are counted in code
//   points, as the server (Python) counts them.
// - Each row gets a search box: as the worker types (debounced), /work/suggest/ answers
//   with ranked Wikidata candidates (label, description, id); picking one fills the id.
(function () {
  "use strict";
  document.documentElement.classList.add("tt-js");
  var root = document.querySelector(".tt-entity-linking[data-tt-suggest]");
  var suggestUrl = root ? root.getAttribute("data-tt-suggest") : null;
  var DEBOUNCE_MS = 200;
  var answers = new Map(); // query -> candidates, for this page
  var rowCount = 0;

  function cpLength(s) { return Array.from(s).length; }
  function offsetIn(rootEl, node, offset) {
    var range = document.createRange();
    range.selectNodeContents(rootEl);
    range.setEnd(node, offset);
    return cpLength(range.toString());
  }
  function field(type, name, value) {
    var input = document.createElement("input");
    input.type = type; input.name = name;
    if (value !== undefined) input.value = value;
    return input;
  }
  function fetchCandidates(query) {
    var key = query.trim().toLowerCase();
    if (answers.has(key)) return Promise.resolve(answers.get(key));
    var url = suggestUrl + "&q=" + encodeURIComponent(query);
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (r.status === 429) return { candidates: [], busy: true };
        if (!r.ok) return { candidates: [], unavailable: true };
        return r.json();
      })
      .then(function (data) {
        if (!data.busy && !data.unavailable) answers.set(key, data);
        return data;
      });
  }

  function enhance(row) {
    if (!suggestUrl || row.querySelector(".tt-suggest")) return;
    var qid = row.querySelector('input[name$="/qid"]');
    var none = row.querySelector('input[name$="/none"]');
    var spanText = row.querySelector('input[name$="/text"]');
    if (!qid || qid.disabled) return;
    rowCount += 1;
    var listId = "tt-suggest-list-" + rowCount;
    var box = document.createElement("div");
    box.className = "tt-suggest";
    var label = document.createElement("label");
    label.textContent = "Search Wikidata ";
    var search = document.createElement("input");
    search.type = "search";
    search.autocomplete = "off";
    search.value = spanText ? spanText.value : "";
    search.setAttribute("role", "combobox");
    search.setAttribute("aria-autocomplete", "list");
    search.setAttribute("aria-controls", listId);
    search.setAttribute("aria-expanded", "false");
    label.appendChild(search);
    var list = document.createElement("ul");
    list.className = "tt-suggest-list";
    list.id = listId;
    list.setAttribute("role", "listbox");
    list.hidden = true;
    var status = document.createElement("p");
    status.className = "tt-help tt-suggest-status";
    status.setAttribute("aria-live", "polite");
    box.appendChild(label); box.appendChild(list); box.appendChild(status);
    qid.insertAdjacentElement("beforebegin", box);

    var timer = null, seq = 0, active = -1, options = [];
    function setActive(n) {
      options.forEach(function (o, i) { o.setAttribute("aria-selected", i === n ? "true" : "false"); });
      active = n;
      if (n >= 0 && options[n]) search.setAttribute("aria-activedescendant", options[n].id);
      else search.removeAttribute("aria-activedescendant");
    }
    function close() {
      list.hidden = true; search.setAttribute("aria-expanded", "false"); setActive(-1);
    }
    function pick(candidate) {
      qid.value = candidate.id;
      if (none) none.checked = false;
      status.textContent = "Picked " + candidate.id + " (" + candidate.label + ").";
      close();
    }
    function show(data) {
      list.textContent = ""; options = [];
      var candidates = data.candidates || [];
      candidates.forEach(function (c, i) {
        var li = document.createElement("li");
        li.id = listId + "-" + i;
        li.setAttribute("role", "option");
        li.setAttribute("data-qid", c.id);
        var name = document.createElement("strong");
        name.textContent = c.label || c.id;
        var id = document.createElement("span");
        id.className = "tt-suggest-id";
        id.textContent = " " + c.id;
        li.appendChild(name); li.appendChild(id);
        if (c.description) {
          var desc = document.createElement("span");
          desc.className = "tt-help tt-suggest-desc";
          desc.textContent = " \u2014 " + c.description;
          li.appendChild(desc);
        }
        li.addEventListener("mousedown", function (e) { e.preventDefault(); pick(c); });
        list.appendChild(li); options.push(li);
      });
      list.hidden = candidates.length === 0;
      search.setAttribute("aria-expanded", candidates.length ? "true" : "false");
      setActive(-1);
      status.textContent = data.busy ? "Too many searches; wait a moment."
        : data.unavailable ? "Wikidata cannot be searched right now: type the id, or tick \u201cNot in Wikidata\u201d."
        : candidates.length ? candidates.length + " suggestions."
        : "No suggestions: try other words, or tick \u201cNot in Wikidata\u201d.";
    }
    function lookup() {
      var query = search.value.trim();
      if (!query) { close(); return; }
      var mine = ++seq;
      fetchCandidates(query).then(function (data) {
        if (mine === seq) show(data);
      }).catch(function () {
        if (mine === seq) show({ candidates: [], unavailable: true });
      });
    }
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(lookup, DEBOUNCE_MS);
    });
    search.addEventListener("focus", function () { if (!options.length) lookup(); });
    search.addEventListener("blur", function () { setTimeout(close, 150); });
    search.addEventListener("keydown", function (e) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        if (list.hidden && options.length) { list.hidden = false; search.setAttribute("aria-expanded", "true"); }
        var n = options.length;
        if (!n) return;
        e.preventDefault();
        setActive(e.key === "ArrowDown" ? (active + 1) % n : (active - 1 + n) % n);
      } else if (e.key === "Enter") {
        e.preventDefault(); // never submit the task from the search box
        if (active >= 0 && options[active]) options[active].dispatchEvent(new MouseEvent("mousedown"));
        else lookup();
      } else if (e.key === "Escape") {
        close();
      }
    });
  }

  document.querySelectorAll(".tt-link-row").forEach(enhance);

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
      enhance(row);
      var box = row.querySelector(".tt-suggest input");
      (box || qid).focus();
    });
  });
})();
