/* promptprism report: keep what you find. Tags and a note on prompts, samples and modes, kept in this
 * browser's localStorage under the result's fingerprint (the same result's pages share them; nothing leaves
 * the machine), exported as JSON or CSV (a download made in the page) and imported from such a JSON file.
 * Keys join back to the inputs: "prompt:<prompt text>", "sample:<set>:<row index>", "mode:<id>",
 * "model:<name>". The toolbar's "kept" button lists them; "#tag=<tag>" keeps only the tagged prompts.
 */
(function (PP) {
  "use strict";
  var h = PP.h, V = PP.V;
  var STORE = "promptprism:" + (PP.data.fingerprint || "page");
  var kept = load();

  function load() {
    try { var x = JSON.parse(localStorage.getItem(STORE) || "{}"); return x && x.items ? x : { items: {} }; }
    catch (e) { return { items: {} }; }
  }
  function save() {
    try { localStorage.setItem(STORE, JSON.stringify(kept)); } catch (e) { /* storage off or full: kept for this visit */ }
    if (countEl) countEl.textContent = "kept (" + Object.keys(kept.items).length + ")";
  }
  function item(key) { return kept.items[key] || { tags: [], note: "" }; }
  function put(key, it) {
    if (!it.tags.length && !it.note) delete kept.items[key]; else kept.items[key] = { tags: it.tags, note: it.note };
    save();
  }
  PP.kept = { get: item, put: put, all: function () { return kept.items; }, store: STORE };

  /* a tag box: the item's tags (× removes one), an input (Enter adds a tag) and a note */
  function tagBox(key, label) {
    var it = item(key);
    var box = h("div", { cls: "pp-keep", "data-pp-keep": key });
    var chips = h("span", { cls: "pp-chips" });
    function drawChips() {
      chips.textContent = "";
      item(key).tags.forEach(function (t) {
        chips.appendChild(h("span", { cls: "pp-chip", text: t }, [h("button", { type: "button", title: "remove this tag", text: "×",
          onclick: function (ev) { ev.stopPropagation(); var x = item(key); x.tags = x.tags.filter(function (y) { return y !== t; }); put(key, x); drawChips(); } })]));
      });
    }
    var input = h("input", { type: "text", cls: "pp-tag-input", placeholder: "add a tag, Enter", "aria-label": "tag " + label,
      onkeydown: function (ev) {
        if (ev.key !== "Enter" || !input.value.trim()) return;
        var x = item(key), t = input.value.trim();
        if (x.tags.indexOf(t) < 0) x.tags.push(t);
        put(key, x); input.value = ""; drawChips();
      } });
    var note = h("textarea", { cls: "pp-note", rows: 2, placeholder: "a note", "aria-label": "note on " + label,
      oninput: function () { var x = item(key); x.note = note.value; put(key, x); } });
    note.value = it.note || "";
    ["click", "keydown"].forEach(function (k) { box.addEventListener(k, function (ev) { ev.stopPropagation(); }); });
    drawChips();
    box.appendChild(h("div", { cls: "pp-meta", text: "keep: " + label }));
    box.appendChild(h("div", null, [chips, input]));
    box.appendChild(note);
    return box;
  }
  PP.tagBox = tagBox;

  /* after a view fills the panel: a tag box for what it shows, and a "tag" button on each sample card */
  function keyOf(kind, id) {
    if (kind === "prompt") { var p = (V.prompts || [])[+id]; return p ? ["prompt:" + p.prompt, "this prompt"] : null; }
    if (kind === "mode") return ["mode:" + PP.modeId(id), "mode " + PP.modeId(id)];
    if (kind === "model") return ["model:" + id, id + " against the rest"];
    if (kind === "region") return ["region:" + id, "region " + id];
    if (kind === "cluster") {
      var c = (V.clusters || [])[+id];
      return c ? ["cluster:" + c.model + ":" + c.kind + ":" + c.rank, c.model + " " + c.kind + " cluster #" + c.rank] : null;
    }
    return null;
  }
  ["prompt", "mode", "model", "cluster", "region"].forEach(function (kind) {
    var view = PP.views[kind];
    if (!view) return;
    PP.views[kind] = function (id) {
      var shown = view(id);
      var panel = document.getElementById("pp-panel"), k = keyOf(kind, id);
      if (shown === false || !panel || !k) return shown;
      var title = panel.querySelector("h2");
      title.parentNode.insertBefore(tagBox(k[0], k[1]), title.nextSibling);
      panel.querySelectorAll("[data-pp-sample]").forEach(function (card) {
        var key = "sample:" + card.getAttribute("data-pp-sample"), n = item(key).tags.length;
        var b = h("button", { type: "button", cls: "pp-more pp-tag-sample", text: n ? "tags (" + n + ")" : "tag" });
        b.addEventListener("click", function (ev) {
          ev.stopPropagation();
          var open = card.querySelector(".pp-keep");
          if (open) open.remove(); else card.appendChild(tagBox(key, "sample " + card.getAttribute("data-pp-sample")));
        });
        card.appendChild(b);
      });
      return shown;
    };
  });

  /* "#tag=<tag>": keep only the prompts (rows, cards) tagged so */
  PP.filters.push(function (e, s) {
    if (!s.tag || !e.hasAttribute("data-pp-prompt")) return true;
    var p = (V.prompts || [])[+e.getAttribute("data-pp-prompt")];
    return !!p && item("prompt:" + p.prompt).tags.indexOf(s.tag) >= 0;
  });

  /* export and import */
  function rows() {
    return Object.keys(kept.items).sort().map(function (k) {
      var i = k.indexOf(":"), it = kept.items[k];
      return { kind: k.slice(0, i), id: k.slice(i + 1), tags: it.tags, note: it.note };
    });
  }
  function csvCell(x) { x = String(x === null || x === undefined ? "" : x); return /[",\n\r]/.test(x) ? '"' + x.replace(/"/g, '""') + '"' : x; }
  function toCsv(header, lines) { return [header].concat(lines).map(function (r) { return r.map(csvCell).join(","); }).join("\r\n") + "\r\n"; }
  PP.keptCsv = function () { return toCsv(["kind", "id", "tags", "note"], rows().map(function (r) { return [r.kind, r.id, r.tags.join(";"), r.note]; })); };
  PP.keptJson = function () { return JSON.stringify({ fingerprint: PP.data.fingerprint, kind: PP.data.kind, items: rows() }, null, 1); };
  var PROMPT_COLUMNS = ["prompt_id", "prompt", "n_test", "n_reference", "disagreement", "share", "tags", "note"];
  PP.shownCsv = function () { return toCsv(PROMPT_COLUMNS, PP.shownRows()); };
  PP.shownRows = function () {
    // the prompts the filters leave visible (each once), with their numbers, tags and note
    var seen = {}, out = [];
    document.querySelectorAll("[data-pp-item][data-pp-prompt]:not(.pp-hidden)").forEach(function (e) {
      var id = +e.getAttribute("data-pp-prompt"), p = (V.prompts || [])[id];
      if (!p || seen[id] || e.closest(".pp-hidden") || e.closest("#pp-panel")) return;
      seen[id] = 1;
      var it = item("prompt:" + p.prompt);
      out.push([id, p.prompt, p.n_test === undefined ? "" : p.n_test, p.n_reference === undefined ? "" : p.n_reference,
        p.disagreement === undefined || p.disagreement === null ? "" : p.disagreement, p.share === undefined || p.share === null ? "" : p.share,
        it.tags.join(";"), it.note]);
    });
    return out;
  };
  PP.shownJsonl = function () {
    // the same rows as shownCsv, one JSON object a line (the tags as a list)
    return PP.shownRows().map(function (r) {
      var o = {};
      PROMPT_COLUMNS.forEach(function (c, k) { o[c] = r[k]; });
      o.tags = item("prompt:" + o.prompt).tags;
      return JSON.stringify(o) + "\n";
    }).join("");
  };
  PP.toCsv = toCsv;
  function download(name, text, type) {
    var a = h("a", { download: name });
    a.href = URL.createObjectURL(new Blob([text], { type: type }));
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(function () { URL.revokeObjectURL(a.href); }, 1000);
  }
  PP.download = download;
  PP.importKept = function (text) {
    var x = JSON.parse(text), n = 0;
    (x.items || []).forEach(function (r) {
      if (!r || !r.kind || r.id === undefined) return;
      var key = r.kind + ":" + r.id, it = item(key);
      (r.tags || []).forEach(function (t) { if (it.tags.indexOf(t) < 0) it.tags.push(String(t)); });
      if (r.note && it.note.indexOf(r.note) < 0) it.note = it.note ? it.note + "\n" + r.note : String(r.note);
      put(key, it); n++;
    });
    return n;
  };
  function listView() {
    var file = h("input", { type: "file", accept: ".json,application/json", id: "pp-import", "aria-label": "import tags (JSON)" });
    var msg = h("p", { cls: "muted small" });
    file.addEventListener("change", function () {
      var f = file.files[0];
      if (!f) return;
      var rd = new FileReader();
      rd.onload = function () { try { msg.textContent = PP.importKept(rd.result) + " items imported"; listView(); } catch (e) { msg.textContent = "not a tags file: " + e.message; } };
      rd.readAsText(f);
    });
    var tags = {};
    rows().forEach(function (r) { r.tags.forEach(function (t) { tags[t] = (tags[t] || 0) + 1; }); });
    PP.panel("Kept: tags and notes", [
      h("p", { cls: "muted small", text: "Kept in this browser for this result (fingerprint " + (PP.data.fingerprint || "–") + "). Keys join back to the inputs: the prompt text, the set and row index of a sample." }),
      h("p", null, [
        h("button", { type: "button", id: "pp-export-json", text: "export tags (JSON)", onclick: function () { download("promptprism-tags.json", PP.keptJson(), "application/json"); } }), " ",
        h("button", { type: "button", id: "pp-export-csv", text: "export tags (CSV)", onclick: function () { download("promptprism-tags.csv", PP.keptCsv(), "text/csv"); } }), " ",
        h("button", { type: "button", id: "pp-export-shown", text: "export the shown prompts (CSV)", onclick: function () { download("promptprism-prompts.csv", PP.shownCsv(), "text/csv"); } }), " ",
        h("button", { type: "button", id: "pp-export-shown-jsonl", text: "(JSONL)", onclick: function () { download("promptprism-prompts.jsonl", PP.shownJsonl(), "application/x-ndjson"); } }), " ",
        h("label", null, ["import: ", file])]),
      msg,
      Object.keys(tags).length ? h("p", null, ["show only the prompts tagged: "].concat(Object.keys(tags).sort().map(function (t) {
        return h("button", { type: "button", cls: "pp-chip", "data-pp-tagfilter": t, text: t + " (" + tags[t] + ")", onclick: function () { PP.set({ tag: PP.state.tag === t ? "" : t }); } });
      }))) : null,
      PP.table(["kind", "id", "tags", "note"], rows().map(function (r) { return [r.kind, r.id, r.tags.join(", "), r.note]; }))
    ]);
  }
  var countEl;
  PP.onStart.push(function (toolbar) {
    if (!toolbar) return;
    countEl = h("button", { type: "button", id: "pp-kept", title: "tags and notes kept in this browser; export, import", onclick: listView });
    toolbar.insertBefore(countEl, toolbar.children[1] || null);  // left, where the panel never covers it
    save();
  });
})(window.PP);
