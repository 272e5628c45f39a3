/* promptprism report: export the samples a view holds (a map selection, a mode's, a prompt's, a model's
 * against the rest) as CSV or JSONL, a download made in the page. Each line carries the sample's id
 * "<set>:<row>" (the set's name and the row's index in that set's input file, as the sample tags of keep.js),
 * its prompt, its output text (cut as in the page; the full text is the input row's), its map mode, its
 * tags and note. PP.samplesOf(kind, id) lists a view's samples; PP.samplesCsv / PP.samplesJsonl write them.
 */
(function (PP) {
  "use strict";
  var h = PP.h, V = PP.V;
  var COLUMNS = ["id", "set", "row", "prompt_id", "prompt", "output", "map_mode", "tags", "note"];
  var onMap = null;  // V.rows id -> map point id (built on first use)

  function mapMode(r) {
    var M = V.map;
    if (!M || !M.row) return "";
    if (!onMap) { onMap = {}; M.row.forEach(function (x, i) { onMap[x] = i; }); }
    return onMap[r] === undefined ? "" : M.mode[onMap[r]];
  }
  /* the V.rows ids of the samples a view shows, each once, in the view's order */
  function samplesOf(kind, id) {
    var lists = null, out = [], seen = {};
    if (kind === "sel") return PP.mapPicked ? PP.mapPicked().map(function (i) { return V.map.row[i]; }) : [];
    if (kind === "mode") lists = (PP.modeById(id) || {}).samples;
    else if (kind === "prompt") lists = ((V.prompts || [])[+id] || {}).rows;
    else if (kind === "model") lists = ((V.deviations || []).filter(function (d) { return d.model === id; })[0] || {}).samples;
    Object.keys(lists || {}).forEach(function (k) {
      (lists[k] || []).forEach(function (r) { if (!seen[r]) { seen[r] = 1; out.push(r); } });
    });
    return out;
  }
  PP.samplesOf = samplesOf;
  function records(rows) {
    return rows.map(function (r) {
      var x = V.rows[r] || {}, it = PP.kept.get("sample:" + x.s + ":" + x.i);
      return { id: x.s + ":" + x.i, set: x.s, row: x.i, prompt_id: x.p, prompt: ((V.prompts || [])[x.p] || {}).prompt,
        output: x.t === undefined ? null : x.t, map_mode: mapMode(r), tags: it.tags, note: it.note };
    });
  }
  PP.samplesCsv = function (rows) {
    return PP.toCsv(COLUMNS, records(rows).map(function (o) {
      return COLUMNS.map(function (c) { return c === "tags" ? o.tags.join(";") : o[c]; });
    }));
  };
  PP.samplesJsonl = function (rows) { return records(rows).map(function (o) { return JSON.stringify(o) + "\n"; }).join(""); };
  /* "export these N samples: CSV · JSONL" for a view's panel */
  PP.exportButtons = function (rows, name) {
    if (!rows.length) return null;
    var file = "promptprism-" + name.replace(/[^A-Za-z0-9_+-]+/g, "-");
    return h("p", { cls: "pp-export small" }, [
      "export these " + rows.length + " samples: ",
      h("button", { type: "button", cls: "pp-more pp-export-csv", text: "CSV",
        onclick: function () { PP.download(file + ".csv", PP.samplesCsv(rows), "text/csv"); } }), " ",
      h("button", { type: "button", cls: "pp-more pp-export-jsonl", text: "JSONL",
        onclick: function () { PP.download(file + ".jsonl", PP.samplesJsonl(rows), "application/x-ndjson"); } })]);
  };
  ["mode", "prompt", "model"].forEach(function (kind) {
    var view = PP.views[kind];
    if (!view) return;
    PP.views[kind] = function (id) {
      var shown = view(id), panel = document.getElementById("pp-panel");
      if (shown === false || !panel) return shown;
      var line = PP.exportButtons(samplesOf(kind, id), kind + "-" + id), title = panel.querySelector("h2");
      if (line && title) title.parentNode.insertBefore(line, title.nextSibling);
      return shown;
    };
  });
})(window.PP);
