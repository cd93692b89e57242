// Entity linking on the text itself: progressive enhancement of the linking rows (the
// page works without it: the worker types an id or ticks "Not in Wikidata").
// - Every span of the rows is highlighted in the text; a click (or tap) on a highlight
//   opens its row. Where spans nest, clicking again moves to the next one.
// - Each row says its state (to decide, linked, not in Wikidata, not an entity) and has
//   "Not an entity" (the row is left out of the answer) and, for added spans, "Remove".
// - A Submit with rows still "to decide" asks first (once), naming them.
// - Overlapping linked spans are shown as a clash with "Keep ..." buttons; Submit
//   says which spans clash instead of sending an answer the server refuses.
// - Words are added by selecting them in the text (mouse, touch) or typing them.
//   Offsets are counted in code points, as the server (Python) counts them.
// - Each row gets a search box (empty, the span's words as placeholder): as the worker
//   types (debounced), /work/suggest/ answers with ranked Wikidata candidates; picking
//   one fills the id and cancels any search still on its way, so the page never moves
//   under the worker's next click. An empty list says whether Wikidata itself was
//   searched or only the offline list, and that "Not in Wikidata" is for an entity
//   that truly has no item (issue 36).
// The server's validation stays authoritative (offsets, overlaps, ids).
// The requester's review page uses the same blocks for "Enter links yourself"
// (data-tt-mode="review" on the root): no submit checks, no draft; each block tells
// the page its links ("tt-change" on the fieldset, fieldset._item.links()).
(function () {
  "use strict";
  document.documentElement.classList.add("tt-js");
  var DEBOUNCE_MS = 200;
  var rowCount = 0;
  Array.prototype.slice.call(document.querySelectorAll(".tt-entity-linking")).forEach(setupRoot);

  function setupRoot(root) {
    var suggestUrl = root.getAttribute("data-tt-suggest");
    var reviewing = root.getAttribute("data-tt-mode") === "review";
    // Drafts are the worker's own page only (not a preview shown inside another page).
    var drafting = !reviewing && !root.closest("[inert]");
    var answers = new Map(); // query -> candidates, for this block

    function cps(s) { return Array.from(s); }
    function offsetIn(rootEl, node, offset) {
      var range = document.createRange();
      range.selectNodeContents(rootEl);
      range.setEnd(node, offset);
      return cps(range.toString()).length;
    }
    function el(tag, attrs, text) {
      var node = document.createElement(tag);
      Object.keys(attrs || {}).forEach(function (k) {
        if (k === "className") node.className = attrs[k]; else node.setAttribute(k, attrs[k]);
      });
      if (text !== undefined) node.textContent = text;
      return node;
    }
    function hidden(name, value) {
      var input = el("input", { type: "hidden", name: name });
      input.value = value;
      return input;
    }
    function fetchCandidates(query) {
      var key = query.trim().toLowerCase();
      if (answers.has(key)) return Promise.resolve(answers.get(key));
      var url = suggestUrl + (suggestUrl.indexOf("?") >= 0 ? "&" : "?") + "q=" + encodeURIComponent(query);
      return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) {
          if (r.status === 429) return { candidates: [], busy: true };
          if (!r.ok) return { candidates: [], unavailable: true };
          return r.json();
        })
        .then(function (data) {
          // A list given without Wikidata while Wikidata is slow or down ("partial")
          // is not kept: the next search asks again.
          if (!data.busy && !data.unavailable && !data.partial) answers.set(key, data);
          return data;
        });
    }

    // --- one row: state, actions, search ---------------------------------------------------

    function rowParts(row) {
      return {
        qid: row.querySelector('input[name$="/qid"]'),
        none: row.querySelector('input[name$="/none"]'),
        text: row.querySelector('input[name$="/text"]'),
        start: parseInt(row.getAttribute("data-start"), 10),
        end: parseInt(row.getAttribute("data-end"), 10)
      };
    }
    function rowState(row) {
      if (row.getAttribute("data-skip") === "1") return "skip";
      var p = rowParts(row);
      if (p.none && p.none.checked) return "nil";
      if (p.qid && p.qid.value.trim()) return "linked";
      return "open";
    }
    var STATE_WORDS = { open: "to decide", linked: "linked", nil: "not in Wikidata", skip: "not an entity" };

    function enhanceRow(row, item) {
      if (row.getAttribute("data-tt-enhanced")) return;
      row.setAttribute("data-tt-enhanced", "1");
      var p = rowParts(row);
      var caption = row.querySelector(".tt-link-caption");
      var badge = el("span", { className: "tt-row-state" });
      caption.appendChild(badge);
      row._badge = badge;
      var actions = el("div", { className: "tt-row-actions" });
      var skip = el("button", { type: "button", "data-tt-skip": "" }, "Not an entity");
      skip.addEventListener("click", function () {
        var on = row.getAttribute("data-skip") !== "1";
        if (on) {
          row.setAttribute("data-skip", "1");
          if (p.qid) p.qid.value = "";
          if (p.none) p.none.checked = false;
          var picked = row.querySelector(".tt-picked");
          if (picked) picked.textContent = "";
        } else {
          row.removeAttribute("data-skip");
        }
        item.refresh();
        skip.focus();
      });
      actions.appendChild(skip);
      if (row.getAttribute("data-kind") === "added") {
        var remove = el("button", { type: "button", "data-tt-remove": "" }, "Remove this span");
        remove.addEventListener("click", function () {
          row.remove();
          item.refresh();
          item.status("Removed \u201c" + (p.text ? p.text.value : "") + "\u201d.");
        });
        actions.appendChild(remove);
      }
      row.appendChild(actions);
      if (p.qid) p.qid.addEventListener("input", function () { row.removeAttribute("data-skip"); item.refresh(); });
      if (p.none) p.none.addEventListener("change", function () { row.removeAttribute("data-skip"); item.refresh(); });
      row.addEventListener("focusin", function () { item.activate(row, false); });
      enhanceSearch(row, item);
    }

    function enhanceSearch(row, item) {
      var p = rowParts(row);
      if (!suggestUrl || !p.qid || p.qid.disabled) return;
      rowCount += 1;
      var listId = "tt-suggest-list-" + rowCount;
      var words = p.text ? p.text.value : "";
      var box = el("div", { className: "tt-suggest" });
      var searchId = "tt-suggest-search-" + rowCount;
      var label = el("label", { for: searchId }, "Search Wikidata for \u201c" + words + "\u201d");
      // Empty, the span's words as a placeholder: typing never appends to them.
      var search = el("input", {
        type: "search", id: searchId, autocomplete: "off", role: "combobox",
        "aria-autocomplete": "list", "aria-controls": listId, "aria-expanded": "false",
        placeholder: words
      });
      var list = el("ul", { className: "tt-suggest-list", id: listId, role: "listbox", "aria-label": "Wikidata items for \u201c" + words + "\u201d" });
      list.hidden = true;
      var status = el("p", { className: "tt-help tt-suggest-status", "aria-live": "polite" });
      var picked = el("p", { className: "tt-picked" });
      box.appendChild(label); box.appendChild(search); box.appendChild(list);
      box.appendChild(status); box.appendChild(picked);
      p.qid.insertAdjacentElement("beforebegin", box);
      row._search = search;

      var timer = null, seq = 0, active = -1, options = [], shownFor = null;
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
        // Nothing still on its way may reopen the list after the pick.
        clearTimeout(timer); seq += 1;
        p.qid.value = candidate.id;
        if (p.none) p.none.checked = false;
        row.removeAttribute("data-skip");
        picked.textContent = "";
        picked.appendChild(document.createTextNode("Linked to "));
        var a = el("a", { href: "https://www.wikidata.org/wiki/" + candidate.id, target: "_blank", rel: "noopener" },
          (candidate.label || candidate.id) + " (" + candidate.id + ")");
        picked.appendChild(a);
        if (candidate.description) picked.appendChild(document.createTextNode(" \u2014 " + candidate.description));
        status.textContent = "Picked " + candidate.id + " (" + (candidate.label || candidate.id) + ").";
        close();
        item.refresh();
      }
      function option(c, i) {
        var li = el("li", { id: listId + "-" + i, role: "option", "data-qid": c.id });
        if (c.thumbnail) li.appendChild(el("img", { src: c.thumbnail, alt: "", loading: "lazy" }));
        var body = el("span");
        body.appendChild(el("strong", {}, c.label || c.id));
        body.appendChild(el("span", { className: "tt-suggest-id" }, " " + c.id));
        if (c.type) { body.appendChild(document.createTextNode(" ")); body.appendChild(el("span", { className: "tt-suggest-type" }, c.type)); }
        body.appendChild(el("span", { className: "tt-help tt-suggest-desc" }, c.description || "no description"));
        li.appendChild(body);
        li.addEventListener("mousedown", function (e) { e.preventDefault(); pick(c); });
        li.addEventListener("click", function (e) { e.preventDefault(); if (p.qid.value !== c.id) pick(c); });
        return li;
      }
      function show(data) {
        list.textContent = ""; options = [];
        var candidates = data.candidates || [];
        candidates.forEach(function (c, i) { var li = option(c, i); list.appendChild(li); options.push(li); });
        list.hidden = candidates.length === 0;
        search.setAttribute("aria-expanded", candidates.length ? "true" : "false");
        setActive(-1);
        // An empty list must not read as "not in Wikidata": the offline list holds only
        // some items, and even Wikidata's search misses other names and spellings.
        var onlyIf = "tick \u201cNot in Wikidata\u201d only if it truly has no item.";
        status.textContent = data.busy ? "Too many searches; wait a moment."
          : data.unavailable ? "Wikidata cannot be searched from here right now. Search by name on wikidata.org and type the id; " + onlyIf
          : candidates.length ? candidates.length + " suggestions for \u201c" + data.query + "\u201d."
          : data.wikidata ? "No suggestion found for \u201c" + data.query + "\u201d. Search by another name or spelling; " + onlyIf
          : "No suggestion found here: this list holds only some Wikidata items. Search by name on wikidata.org and type the id; " + onlyIf;
      }
      function lookup() {
        var query = (search.value.trim() || words).trim();
        if (!query) { close(); return; }
        var mine = ++seq;
        fetchCandidates(query).then(function (data) {
          if (mine === seq && document.activeElement === search) { shownFor = query; show({ query: query, candidates: data.candidates, busy: data.busy, unavailable: data.unavailable, wikidata: data.wikidata }); }
        }).catch(function () {
          if (mine === seq) show({ candidates: [], unavailable: true });
        });
      }
      search.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(lookup, DEBOUNCE_MS);
      });
      search.addEventListener("focus", function () {
        // A linked row opens its list on typing or the arrow keys only: focus coming
        // back (a window switch, a screenshot) never drops a list over the next click.
        if (p.qid.value.trim()) return;
        var query = (search.value.trim() || words).trim();
        if (shownFor === query && options.length) { list.hidden = false; search.setAttribute("aria-expanded", "true"); }
        else lookup();
      });
      search.addEventListener("blur", function () { clearTimeout(timer); seq += 1; close(); });
      search.addEventListener("keydown", function (e) {
        if (e.key === "ArrowDown" || e.key === "ArrowUp") {
          if (list.hidden && options.length) { list.hidden = false; search.setAttribute("aria-expanded", "true"); }
          var n = options.length;
          if (!n) { e.preventDefault(); lookup(); return; }
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

    // --- one item: the highlighted text, clashes, adding spans -----------------------------

    function setupItem(fieldset) {
      var textEl = fieldset.querySelector("[data-tt-linktext]");
      var rowsEl = fieldset.querySelector("[data-tt-rows]");
      if (!textEl || !rowsEl) return;
      var chars = cps(textEl.textContent);
      var clashEl = fieldset.querySelector("[data-tt-conflicts]");
      var addStatus = fieldset.querySelector("[data-tt-add-status]");
      var addSelected = fieldset.querySelector("[data-tt-add-span]");
      var addWords = fieldset.querySelector("[data-tt-add-words]");
      var addTyped = fieldset.querySelector("[data-tt-add-typed]");
      var current = null;
      var restoring = false;  // a draft being put back (restoreDraft below)
      var item = {};

      function rows() { return Array.prototype.slice.call(rowsEl.querySelectorAll(".tt-link-row")); }
      function spanText(row) { var t = row.querySelector('input[name$="/text"]'); return t ? t.value : ""; }
      function clashes() {
        var chosen = rows().filter(function (r) { var s = rowState(r); return s === "linked" || s === "nil"; });
        var out = [];
        for (var i = 0; i < chosen.length; i++) {
          for (var j = i + 1; j < chosen.length; j++) {
            var a = rowParts(chosen[i]), b = rowParts(chosen[j]);
            if (a.start < b.end && b.start < a.end) out.push([chosen[i], chosen[j]]);
          }
        }
        return out;
      }

      function render() {
        var all = rows();
        var cuts = new Set([0, chars.length]);
        all.forEach(function (r) { var p = rowParts(r); cuts.add(p.start); cuts.add(p.end); });
        var points = Array.from(cuts).filter(function (n) { return n >= 0 && n <= chars.length; })
          .sort(function (a, b) { return a - b; });
        var clashing = new Set();
        clashes().forEach(function (pair) { clashing.add(pair[0]); clashing.add(pair[1]); });
        textEl.textContent = "";
        for (var k = 0; k + 1 < points.length; k++) {
          var s = points[k], e = points[k + 1];
          var piece = chars.slice(s, e).join("");
          var covering = all.filter(function (r) { var p = rowParts(r); return p.start <= s && e <= p.end; });
          if (!covering.length) { textEl.appendChild(document.createTextNode(piece)); continue; }
          // The narrowest span decides the colour; a click starts from it.
          covering.sort(function (a, b) { var pa = rowParts(a), pb = rowParts(b); return (pa.end - pa.start) - (pb.end - pb.start); });
          var mark = el("mark", { className: "tt-hl", "data-state": rowState(covering[0]) }, piece);
          mark._rows = covering;
          if (covering.length > 1) mark.classList.add("tt-nested");
          if (covering.some(function (r) { return clashing.has(r); })) mark.setAttribute("data-conflict", "1");
          if (current && covering.indexOf(current) >= 0) mark.classList.add("tt-active");
          mark.title = covering.map(function (r) { return "\u201c" + spanText(r) + "\u201d: " + STATE_WORDS[rowState(r)]; }).join("; ");
          mark.addEventListener("click", onMarkClick);
          textEl.appendChild(mark);
        }
      }
      function onMarkClick(e) {
        var sel = window.getSelection();
        if (sel && !sel.isCollapsed) return; // selecting words to add, not picking a span
        var covering = e.currentTarget._rows;
        var at = covering.indexOf(current);
        var next = covering[at >= 0 ? (at + 1) % covering.length : 0];
        item.activate(next, true);
      }
      function showClashes() {
        rows().forEach(function (r) { var c = r.querySelector(".tt-conflict"); if (c) c.remove(); });
        var pairs = clashes();
        pairs.forEach(function (pair) {
          pair.forEach(function (row, n) {
            var other = pair[1 - n];
            var box = el("div", { className: "tt-conflict" });
            box.appendChild(el("p", {}, "\u201c" + spanText(row) + "\u201d overlaps \u201c" + spanText(other) + "\u201d: link only one of them."));
            var keepThis = el("button", { type: "button", "data-tt-keep": "" }, "Keep \u201c" + spanText(row) + "\u201d");
            keepThis.addEventListener("click", function () { skipRow(other); item.activate(row, false); });
            var keepOther = el("button", { type: "button", "data-tt-keep": "" }, "Keep \u201c" + spanText(other) + "\u201d");
            keepOther.addEventListener("click", function () { skipRow(row); item.activate(other, false); });
            box.appendChild(keepThis); box.appendChild(keepOther);
            var actions = row.querySelector(".tt-row-actions");
            row.insertBefore(box, actions);
          });
        });
        if (!pairs.length) { clashEl.hidden = true; clashEl.textContent = ""; }
        return pairs;
      }
      function skipRow(row) {
        row.setAttribute("data-skip", "1");
        var p = rowParts(row);
        if (p.qid) p.qid.value = "";
        if (p.none) p.none.checked = false;
        var picked = row.querySelector(".tt-picked");
        if (picked) picked.textContent = "";
        item.refresh();
      }
      item.refresh = function () {
        rows().forEach(function (r) {
          var state = rowState(r);
          r.setAttribute("data-state", state);
          if (r._badge) { r._badge.textContent = STATE_WORDS[state]; r._badge.setAttribute("data-state", state); }
          var skipBtn = r.querySelector("[data-tt-skip]");
          if (skipBtn) skipBtn.textContent = state === "skip" ? "Undo \u201cnot an entity\u201d" : "Not an entity";
          // A row marked "not an entity" posts nothing the server would keep.
          var marker = r.querySelector('input[name$="/skip"]');
          if (state === "skip" && !marker) {
            var name = r.querySelector('input[name$="/text"]').name.replace(/\/text$/, "/skip");
            r.appendChild(hidden(name, "1"));
          } else if (state !== "skip" && marker) marker.remove();
        });
        showClashes();
        render();
      };
      item.activate = function (row, focus) {
        if (!row) return;
        if (current !== row) {
          rows().forEach(function (r) { r.classList.toggle("tt-active", r === row); });
          current = row;
          render();
        }
        if (focus) {
          row.scrollIntoView({ block: "nearest" });
          var target = row._search || row.querySelector('input[name$="/qid"]') || row.querySelector("button");
          if (target && rowState(row) !== "skip") target.focus(); else if (row.querySelector("[data-tt-skip]")) row.querySelector("[data-tt-skip]").focus();
        }
      };
      item.status = function (message) { if (addStatus) addStatus.textContent = message; };
      // Rows still "to decide": a Submit asks first (once), naming them.
      item.askAboutOpen = function () {
        var open = rows().filter(function (r) { return rowState(r) === "open"; });
        if (!open.length) return false;
        clashEl.textContent = open.length + (open.length === 1 ? " span is" : " spans are") +
          " still to decide: " + open.map(function (r) { return "\u201c" + spanText(r) + "\u201d"; }).join(", ") +
          ". Link each, or mark it \u201cNot in Wikidata\u201d or \u201cNot an entity\u201d; or press Submit again to send them undecided. Nothing was sent yet.";
        clashEl.hidden = false;
        // Shown, not focused: a focused search box would open its suggestions over Submit.
        item.activate(open[0], false);
        open[0].scrollIntoView({ block: "nearest" });
        return true;
      };
      item.checkBeforeSubmit = function () {
        var pairs = showClashes();
        if (!pairs.length) return true;
        clashEl.textContent = pairs.map(function (pair) {
          return "\u201c" + spanText(pair[0]) + "\u201d and \u201c" + spanText(pair[1]) + "\u201d overlap";
        }).join("; ") + ". Keep one of each pair (buttons next to the spans), then submit again. Nothing was sent yet.";
        clashEl.hidden = false;
        var first = pairs[0][0].querySelector("[data-tt-keep]");
        if (first) first.focus();
        return false;
      };

      function addSpan(start, end) {
        while (start < end && /\s/.test(chars[start])) start++;
        while (end > start && /\s/.test(chars[end - 1])) end--;
        if (end <= start) { item.status("Select some words of the text first."); return; }
        var same = rows().filter(function (r) { var p = rowParts(r); return p.start === start && p.end === end; })[0];
        if (same) {
          same.removeAttribute("data-skip");
          item.refresh(); item.activate(same, true);
          item.status("\u201c" + spanText(same) + "\u201d is already listed.");
          return;
        }
        var text = chars.slice(start, end).join("");
        var j = parseInt(fieldset.getAttribute("data-tt-next"), 10) || 0;
        fieldset.setAttribute("data-tt-next", String(j + 1));
        var prefix = fieldset.getAttribute("data-tt-prefix") + "/" + j;
        var id = "tt-" + prefix.replace(/[^A-Za-z0-9_-]/g, "-");
        var row = el("div", { className: "tt-field tt-link-row", role: "group", "aria-labelledby": id + "-span",
          "data-start": String(start), "data-end": String(end), "data-kind": "added" });
        var caption = el("p", { className: "tt-link-caption", id: id + "-span" });
        caption.appendChild(el("strong", {}, "\u201c" + text + "\u201d"));
        row.appendChild(caption);
        row.appendChild(hidden(prefix + "/start", String(start)));
        row.appendChild(hidden(prefix + "/end", String(end)));
        row.appendChild(hidden(prefix + "/text", text));
        row.appendChild(el("label", { for: id + "-qid" }, "Wikidata id for \u201c" + text + "\u201d"));
        var qid = el("input", { type: "text", name: prefix + "/qid", id: id + "-qid", placeholder: "Q\u2026", autocomplete: "off", spellcheck: "false" });
        row.appendChild(qid);
        if (root.getAttribute("data-tt-nil") !== "0") {
          var choice = el("span", { className: "tt-choice" });
          var none = el("input", { type: "checkbox", name: prefix + "/none", id: id + "-none", value: "1" });
          choice.appendChild(none);
          choice.appendChild(el("label", { for: id + "-none" }, "Not in Wikidata"));
          row.appendChild(choice);
        }
        rowsEl.appendChild(row);
        enhanceRow(row, item);
        item.refresh();
        if (restoring) return;  // a draft coming back: no focus jump, no message
        item.activate(row, true);
        item.status("Added \u201c" + text + "\u201d: now link it.");
      }
      function selectionOffsets() {
        var sel = window.getSelection();
        if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
        var range = sel.getRangeAt(0);
        if (!textEl.contains(range.startContainer) || !textEl.contains(range.endContainer)) return null;
        return [offsetIn(textEl, range.startContainer, range.startOffset), offsetIn(textEl, range.endContainer, range.endOffset)];
      }
      var lastSelection = null;
      if (addSelected) addSelected.disabled = true; // until words of the text are selected
      document.addEventListener("selectionchange", function () {
        var found = selectionOffsets();
        if (found) lastSelection = found;
        if (addSelected) {
          addSelected.disabled = !found && !lastSelection;
          var shown = found || lastSelection;
          addSelected.textContent = shown
            ? "Add \u201c" + chars.slice(shown[0], shown[1]).join("").trim() + "\u201d" : "Add selected words";
        }
      });
      if (addSelected) {
        addSelected.addEventListener("click", function () {
          var found = selectionOffsets() || lastSelection;
          lastSelection = null;
          if (!found) { item.status("Select some words of the text first."); return; }
          addSpan(found[0], found[1]);
          addSelected.disabled = true; addSelected.textContent = "Add selected words";
        });
      }
      function addTypedWords() {
        var wanted = addWords.value.trim();
        if (!wanted) { item.status("Type words of the text first."); return; }
        var hay = chars.join("").toLowerCase(), needle = wanted.toLowerCase();
        var at = hay.indexOf(needle);
        if (at < 0) { item.status("\u201c" + wanted + "\u201d is not in the text: type words exactly as they appear."); return; }
        var start = cps(hay.slice(0, at)).length;
        addSpan(start, start + cps(needle).length);
        addWords.value = "";
      }
      if (addTyped) addTyped.addEventListener("click", addTypedWords);
      if (addWords) addWords.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); addTypedWords(); } });

      // A draft of the links (spans added, ids picked, rows marked), kept per assignment
      // page in this tab's sessionStorage: a reload loses nothing. What the server sent
      // back (after an error) wins over the draft.
      var draftKey = "tt-draft:" + window.location.pathname + ":" + (fieldset.getAttribute("data-tt-prefix") || "");
      function saveDraft() {
        if (restoring || !drafting) return;
        try {
          window.sessionStorage.setItem(draftKey, JSON.stringify(rows().map(function (r) {
            var p = rowParts(r);
            return { start: p.start, end: p.end, added: r.getAttribute("data-kind") === "added",
                     qid: p.qid ? p.qid.value : "", none: !!(p.none && p.none.checked),
                     skip: r.getAttribute("data-skip") === "1" };
          })));
        } catch (e) { /* storage off or full: no draft */ }
      }
      function restoreDraft() {
        if (!drafting) return;
        var saved = null;
        try { saved = JSON.parse(window.sessionStorage.getItem(draftKey) || "null"); } catch (e) { saved = null; }
        if (!Array.isArray(saved)) return;
        restoring = true;
        saved.forEach(function (d) {
          var find = function () {
            return rows().filter(function (r) { var p = rowParts(r); return p.start === d.start && p.end === d.end; })[0];
          };
          var row = find();
          if (!row && d.added) { addSpan(d.start, d.end); row = find(); }
          if (!row) return;
          var p = rowParts(row);
          if (p.qid && d.qid && !p.qid.value) p.qid.value = d.qid;
          if (p.none && d.none) p.none.checked = true;
          if (d.skip) row.setAttribute("data-skip", "1");
        });
        restoring = false;
      }
      // The links as the answer keeps them: linked and "not in Wikidata" rows.
      item.links = function () {
        return rows().map(function (r) {
          var state = rowState(r), p = rowParts(r);
          if (state === "linked") return { start: p.start, end: p.end, text: spanText(r), qid: p.qid.value.trim() };
          if (state === "nil") return { start: p.start, end: p.end, text: spanText(r), none: true };
          return null;
        }).filter(Boolean).sort(function (a, b) { return a.start - b.start || a.end - b.end; });
      };
      var baseRefresh = item.refresh;
      item.refresh = function () {
        baseRefresh(); saveDraft();
        fieldset.dispatchEvent(new CustomEvent("tt-change", { bubbles: true }));
      };

      rows().forEach(function (r) { enhanceRow(r, item); });
      restoreDraft();
      item.refresh();
      fieldset._item = item;
      return item;
    }

    var items = Array.prototype.slice.call(root.querySelectorAll(".tt-link-item")).map(setupItem).filter(Boolean);
    var form = root.closest("form");
    if (form && items.length && !reviewing) {
      // Registered before the page's other submit handlers: a refused submit is
      // default-prevented and says why; nothing else holds the next click back.
      form.addEventListener("submit", function (e) {
        var submitter = e.submitter;
        if (submitter && submitter.hasAttribute("formnovalidate")) return; // "Return this task"
        var ok = items.map(function (it) { return it.checkBeforeSubmit(); }).every(Boolean);
        if (!ok) { e.preventDefault(); return; }
        if (form.getAttribute("data-tt-open-asked") !== "1") {
          var asked = items.map(function (it) { return it.askAboutOpen(); }).some(Boolean);
          if (asked) { form.setAttribute("data-tt-open-asked", "1"); e.preventDefault(); }
        }
      });
    }
  }
})();
