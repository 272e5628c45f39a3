/* promptprism report: group the prompt tables by a facet (report/facets.py). "#by=<column>" puts each
 * table whose rows are prompts (data-pp-item + data-pp-prompt) into groups by the prompts' value of that
 * metadata column, in the order of the values, each under a row that names the value, its number of prompts
 * and (split) their share of the disagreement; a prompt with several values goes under its first one.
 * Rows keep their order (sorted or not) within a group; "#by=" empty restores the table.
 */
(function (PP) {
  "use strict";
  var h = PP.h, V = PP.V, fs = V.facets || [];
  if (!fs.length) return;

  function promptTables() {
    return Array.prototype.filter.call(document.querySelectorAll("main table"), function (t) {
      var body = t.tBodies[0];
      return body && body.rows.length && body.querySelector("tr[data-pp-item][data-pp-prompt]") &&
        !body.querySelector("tr:not(.pp-grouphead):not([data-pp-prompt])");
    });
  }
  function regroup(table) {
    var body = table.tBodies[0], f = fs.filter(function (x) { return x.name === PP.state.by; })[0];
    body.querySelectorAll("tr.pp-grouphead").forEach(function (r) { r.remove(); });
    var rows = Array.prototype.slice.call(body.rows);
    if (!table._ppOrder) table._ppOrder = rows.slice();
    if (!f) {
      if (!table._ppSorted) table._ppOrder.forEach(function (r) { body.appendChild(r); });
      return;
    }
    var groups = {}, cols = table.tHead ? table.tHead.rows[0].cells.length : 1;
    rows.forEach(function (r) {
      var v = f.prompts[+r.getAttribute("data-pp-prompt")] || [], k = v.length ? v[0] : f.values.length - 1;
      (groups[k] = groups[k] || []).push(r);
    });
    Object.keys(groups).map(Number).sort(function (a, b) { return a - b; }).forEach(function (k) {
      var share = f.share && f.share[k] ? " · " + PP.fmt(100 * f.share[k], 3) + "% of the disagreement" : "";
      body.appendChild(h("tr", { cls: "pp-grouphead" }, [h("td", { colspan: cols, text: f.name + ": " + f.values[k] +
        " · " + groups[k].length + " prompt" + (groups[k].length > 1 ? "s" : "") + share })]));
      groups[k].forEach(function (r) { body.appendChild(r); });
    });
  }
  var sel;
  PP.onStart.push(function (toolbar) {
    if (!toolbar || !promptTables().length) return;  /* (no table of prompts: nothing to group) */
    sel = h("select", { id: "pp-by", "aria-label": "group prompts by", onchange: function () { PP.set({ by: sel.value }); } },
      [h("option", { value: "", text: "no grouping" })].concat(fs.map(function (f) {
        return h("option", { value: f.name, text: "group prompts by " + f.name });
      })));
    toolbar.insertBefore(sel, toolbar.querySelector("#pp-count"));
  });
  PP.afterSort.push(function (table) { if (PP.state.by) regroup(table); });
  var last = null;
  PP.widgets.facetgroups = {
    update: function (s) {
      if (sel) sel.value = s.by || "";
      if ((s.by || "") === last) return;
      last = s.by || "";
      promptTables().forEach(regroup);
    }
  };
})(window.PP);
