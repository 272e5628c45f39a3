/* promptprism report: a range slider per number facet (report/facets.py: lo, hi, raw, span).
 * "#range=<column>:<lo>:<hi>" keeps the prompts whose samples' values (their [min, max]) overlap [lo, hi] in
 * every prompt table and draws only the samples with a value in [lo, hi] solid on the map. Two
 * <input type=range> per column, the low and the high end; moving one past the other moves both.
 */
(function (PP) {
  "use strict";
  var h = PP.h, V = PP.V, P = window.PPpure, STEPS = 200;
  var nums = (V.facets || []).filter(function (f) { return f.kind === "num" && f.span && f.hi > f.lo; });
  if (!nums.length || !P) return;

  /* the state's range: {f, lo, hi} or null */
  PP.rangeOf = function (s) {
    var r = P.parseRange(s.range);
    if (!r) return null;
    var f = nums.filter(function (x) { return x.name === r.col; })[0];
    return f ? { f: f, lo: r.lo, hi: r.hi } : null;
  };
  /* does sample row r of V.rows have a value in the range? */
  PP.rangeRow = function (rg, r) {
    var row = V.rows[r], side = row && rg.f.raw[row.s];
    return !!side && P.inRange(side[row.i], rg.lo, rg.hi);
  };
  PP.filters.push(function (e, s) {
    var rg = PP.rangeOf(s);
    if (!rg || !e.hasAttribute("data-pp-prompt")) return true;
    return P.inRange(rg.f.span[+e.getAttribute("data-pp-prompt")], rg.lo, rg.hi);
  });

  var controls = [];
  function valueAt(f, k) { return f.lo + (f.hi - f.lo) * k / STEPS; }
  function stepOf(f, v) { return Math.round(STEPS * (v - f.lo) / (f.hi - f.lo)); }
  function control(f) {
    var lo = h("input", { type: "range", min: 0, max: STEPS, value: 0, "aria-label": f.name + " from", "data-pp-range": f.name + ":lo" });
    var hi = h("input", { type: "range", min: 0, max: STEPS, value: STEPS, "aria-label": f.name + " to", "data-pp-range": f.name + ":hi" });
    var out = h("span", { cls: "pp-range-text" });
    function changed(which) {  // the handle not moved keeps its value (not its slider step)
      var cur = PP.rangeOf(PP.state), mine = cur && cur.f === f;
      var a = which === lo ? valueAt(f, +lo.value) : mine ? cur.lo : f.lo;
      var b = which === hi ? valueAt(f, +hi.value) : mine ? cur.hi : f.hi;
      if (a > b) { if (which === lo) b = a; else a = b; }
      PP.set({ range: a <= f.lo && b >= f.hi ? "" : P.formatRange(f.name, a, b) });
    }
    lo.addEventListener("input", function () { changed(lo); });
    hi.addEventListener("input", function () { changed(hi); });
    var c = { f: f, lo: lo, hi: hi, out: out };
    controls.push(c);
    return h("span", { cls: "pp-range", title: "prompts with a " + f.name + " value in this range" }, [f.name + " ", lo, hi, out]);
  }
  PP.onStart.push(function (toolbar) {
    /* a range keeps prompts and map points: a page with neither (the metrics page's set rows) gets no slider */
    if (!toolbar || !(document.querySelector("main [data-pp-prompt]") || V.map)) return;
    nums.forEach(function (f) { toolbar.insertBefore(control(f), toolbar.querySelector("#pp-count")); });
  });
  PP.widgets.range = {
    update: function (s) {
      var rg = PP.rangeOf(s);
      controls.forEach(function (c) {
        var mine = rg && rg.f === c.f, a = mine ? rg.lo : c.f.lo, b = mine ? rg.hi : c.f.hi;
        c.lo.value = Math.max(0, Math.min(STEPS, stepOf(c.f, a)));
        c.hi.value = Math.max(0, Math.min(STEPS, stepOf(c.f, b)));
        c.out.textContent = PP.fmt(a, 4) + " – " + PP.fmt(b, 4);
      });
    }
  };
})(window.PP);
