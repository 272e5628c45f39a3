/* promptprism report: the sample map (PP.widgets.map), drawn on a canvas from V.map (x, y, mode, row,
 * colors: computed when the result was written). A uniform grid (PPpure.gridIndex) answers hover and click
 * in the points near the cursor, so 20,000+ points stay interactive. Drag to lasso a region, shift+drag
 * for a box: the selected samples open in the side panel, as a click opens a prompt; "#sel=" keeps the
 * shape (PPpure.formatShape, canvas pixels), so a reload or a shared link selects the same points. The selected mode's, prompt's, facet value's or range's samples are drawn solid, the rest faint.
 */
(function (PP) {
  "use strict";
  var h = PP.h, V = PP.V, P = window.PPpure;
  var W = 640, H = 460, PAD = 12, RADIUS = 8, PANEL_CARDS = 60;
  var picked = null, pickedFor = "";  // the ids of the map points the shape "#sel=<pickedFor>" holds
  var selectFrom = null;  // shape -> ids, set when the map is drawn (its grid)

  /* the ids of the points of the fragment's shape (made again when the fragment changed), or null */
  function pickedOf(sel) {
    if (sel && sel === pickedFor) return picked;
    var shape = P && P.parseShape(sel);
    if (!shape || !selectFrom) return null;
    picked = selectFrom(shape);
    pickedFor = sel;
    return picked;
  }
  PP.mapPicked = function () { return pickedOf(PP.state.sel) || []; };

  function selectionView(sel) {
    var M = V.map;
    if (!pickedOf(sel) || !M) return false;
    var bySide = {}, byMode = {}, rows = picked.map(function (i) { return M.row[i]; });
    rows.forEach(function (r, k) {
      var s = (V.rows[r] || {}).s || "?", m = M.mode[picked[k]];
      bySide[s] = (bySide[s] || 0) + 1;
      byMode[m] = (byMode[m] || 0) + 1;
    });
    var counts = Object.keys(bySide).map(function (s) { return bySide[s] + " " + ((V.names || {})[s] || s); }).join(", ");
    var modes = Object.keys(byMode).sort(function (a, b) { return byMode[b] - byMode[a]; })
      .map(function (m) { return m + ": " + byMode[m]; }).join(" · ");
    PP.panel(picked.length + " samples selected", [
      h("p", { id: "pp-sel-count", "data-count": picked.length, text: counts }),
      h("p", { cls: "muted small", text: "by mode: " + modes }),
      PP.exportButtons ? PP.exportButtons(rows, "selection") : null,
      rows.length > PANEL_CARDS ? h("p", { cls: "muted small", text: "the first " + PANEL_CARDS + " of them:" }) : null,
      h("div", { cls: "pp-cards" }, rows.slice(0, PANEL_CARDS).map(function (r) { return PP.sampleCard(r); }))
    ]);
    return true;
  }
  PP.views.sel = selectionView;
  PP.mapSelect = function (shape) {
    var sel = P.formatShape(shape), ids = selectFrom(shape);
    picked = ids; pickedFor = sel;
    PP.set(Object.assign({}, PP.PANEL, { sel: ids.length ? sel : "" }));
  };

  function shade(s) {
    var M = V.map, sel = null, list = null;
    if (s.sel && pickedOf(s.sel)) { sel = {}; picked.forEach(function (i) { sel[M.row[i]] = 1; }); return sel; }
    if (s.mode && PP.modeById(s.mode)) list = PP.modeById(s.mode).samples;
    else if (s.prompt && V.prompts[+s.prompt]) list = V.prompts[+s.prompt].rows;
    var fv = PP.facetOf(s), rg = PP.rangeOf ? PP.rangeOf(s) : null;
    if (list) {
      sel = {};
      ["test", "reference"].forEach(function (k) { (list[k] || []).forEach(function (r) { sel[r] = 1; }); });
      if (s.mode) M.mode.forEach(function (mm, i) { if (mm === s.mode) sel[M.row[i]] = 1; });
      if (s.prompt) M.row.forEach(function (r) { if (V.rows[r].p === +s.prompt) sel[r] = 1; });
    } else if (fv || rg) {
      sel = {};
      M.row.forEach(function (r) { sel[r] = 1; });
    }
    if (sel && fv) M.row.forEach(function (r) { if (!PP.facetRow(fv, r)) delete sel[r]; });
    if (sel && rg) M.row.forEach(function (r) { if (!PP.rangeRow(rg, r)) delete sel[r]; });
    return sel;
  }

  PP.widgets.map = {
    draw: function (el) {
      var M = V.map;
      if (!M || !M.x || !M.x.length || !P) return;
      var cv = h("canvas", { width: W, height: H, id: "pp-map", "aria-label": "map of the samples" });
      var tip = h("div", { cls: "pp-tip", hidden: true });
      el.appendChild(h("p", { cls: "muted small", text: "Hover a point to see the sample, click it to open its prompt; drag to lasso a region (shift+drag: a box) and see its samples. The selected samples are drawn solid." }));
      el.appendChild(h("div", { cls: "pp-map" }, [cv, tip]));
      var minx = Infinity, maxx = -Infinity, miny = Infinity, maxy = -Infinity, n = M.x.length, i;
      for (i = 0; i < n; i++) {
        minx = Math.min(minx, M.x[i]); maxx = Math.max(maxx, M.x[i]); miny = Math.min(miny, M.y[i]); maxy = Math.max(maxy, M.y[i]);
      }
      var px = new Float64Array(n), py = new Float64Array(n), test = new Uint8Array(n);
      for (i = 0; i < n; i++) {
        px[i] = PAD + (W - 2 * PAD) * (M.x[i] - minx) / ((maxx - minx) || 1);
        py[i] = H - PAD - (H - 2 * PAD) * (M.y[i] - miny) / ((maxy - miny) || 1);
        test[i] = (V.rows[M.row[i]] || {}).s === "test" ? 1 : 0;
      }
      var grid = P.gridIndex(px, py, RADIUS), ctx = cv.getContext("2d"), size = n > 5000 ? 0.6 : 1;
      selectFrom = function (shape) { return P.selectShape(grid, shape); };
      var self = this, drag = null;
      this.paint = function (sel) {
        ctx.clearRect(0, 0, W, H);
        for (var pass = 0; pass < 2; pass++) {  // the faint points first, the selected on top
          for (var j = 0; j < n; j++) {
            var on = !sel || !!sel[M.row[j]];
            if (on !== (pass === 1)) continue;
            ctx.globalAlpha = on ? 0.9 : 0.12;
            ctx.fillStyle = M.colors[M.mode[j]] || "#888";
            ctx.beginPath();
            if (test[j]) ctx.arc(px[j], py[j], 3.2 * size, 0, 6.3);
            else { ctx.moveTo(px[j], py[j] - 4 * size); ctx.lineTo(px[j] + 3.6 * size, py[j] + 2.6 * size); ctx.lineTo(px[j] - 3.6 * size, py[j] + 2.6 * size); }
            ctx.fill();
          }
        }
        ctx.globalAlpha = 1;
        if (drag && drag.path.length > 1) {
          ctx.strokeStyle = "#111"; ctx.lineWidth = 1.2; ctx.setLineDash([4, 3]); ctx.beginPath();
          if (drag.box) { var a = drag.path[0], b = drag.path[drag.path.length - 1]; ctx.rect(a[0], a[1], b[0] - a[0], b[1] - a[1]); }
          else drag.path.forEach(function (p, k) { if (k) ctx.lineTo(p[0], p[1]); else ctx.moveTo(p[0], p[1]); });
          ctx.stroke(); ctx.setLineDash([]);
        }
      };
      function at(ev) { var r = cv.getBoundingClientRect(); return [(ev.clientX - r.left) * W / r.width, (ev.clientY - r.top) * H / r.height]; }
      function showTip(ev, k) {
        if (k < 0) { tip.hidden = true; return; }
        var row = V.rows[M.row[k]];
        tip.textContent = "";
        tip.appendChild(h("div", { cls: "pp-meta", text: (row.s === "test" ? "test" : "reference") + " #" + row.i + " · " + M.mode[k] }));
        tip.appendChild(h("div", { dir: "auto", text: ((V.prompts[row.p] || {}).prompt || "").slice(0, 240) }));
        if (row.im !== undefined && row.im !== null && V.thumbs[row.im]) tip.appendChild(h("img", { src: V.thumbs[row.im], alt: "sample" }));
        else if (row.t) tip.appendChild(h("div", { cls: "pp-meta", dir: "auto", text: row.t.slice(0, 240) }));
        var r = cv.getBoundingClientRect();
        tip.style.left = Math.min(ev.clientX - r.left + 12, r.width - 200) + "px";
        tip.style.top = (ev.clientY - r.top + 12) + "px";
        tip.hidden = false;
      }
      cv.addEventListener("pointerdown", function (ev) { drag = { path: [at(ev)], box: ev.shiftKey }; tip.hidden = true; });
      cv.addEventListener("pointermove", function (ev) {
        var p = at(ev);
        if (!drag) { showTip(ev, P.nearest(grid, p[0], p[1], RADIUS)); return; }
        drag.path.push(p);
        self.paint(shade(PP.state));
      });
      cv.addEventListener("pointerup", function (ev) {
        if (!drag) return;
        var d = drag, a = d.path[0], b = at(ev);
        drag = null;
        if (Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) < 4 && d.path.length < 4) {  // a click
          var k = P.nearest(grid, b[0], b[1], RADIUS);
          if (k >= 0) PP.set(Object.assign({}, PP.PANEL, { sel: "", prompt: String(V.rows[M.row[k]].p) }));
          else self.paint(shade(PP.state));
          return;
        }
        PP.mapSelect(d.box ? { box: true, pts: P.simplifyPath([a, b]) } : { box: false, pts: P.simplifyPath(d.path.concat([b])) });
      });
      cv.addEventListener("mouseleave", function () { tip.hidden = true; });
      this.paint(shade(PP.state));
    },
    update: function (s) { if (this.paint) this.paint(shade(s)); }
  };
})(window.PP);
