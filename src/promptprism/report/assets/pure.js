/* promptprism report: the pure functions of the interactive layer (no DOM), unit-tested with node's test
 * runner (tests/js/). In the page they are window.PPpure; under node, module.exports.
 *   - gridIndex / nearest / inPolygon / selectPolygon / selectBox: the map's spatial index (a uniform grid
 *     of buckets), so hover, click, lasso and box stay fast at 20,000+ points;
 *   - parseRange / formatRange / inRange: the range slider's fragment value "#range=<column>:<lo>:<hi>";
 *   - formatShape / parseShape: a lasso or box as the fragment's "#sel=" value, so a reload selects again;
 *   - binOf: the facet bin of a number (as report/facets.py: numpy.searchsorted(edges, v, "right") - 1,
 *     clipped to the bins).
 */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.PPpure = api;
})(this, function () {
  "use strict";

  /* a uniform grid over the points (px[i], py[i]): cells of side `cell`, each the list of its point ids */
  function gridIndex(px, py, cell) {
    var n = px.length, minx = Infinity, miny = Infinity, maxx = -Infinity, maxy = -Infinity, i;
    for (i = 0; i < n; i++) {
      if (px[i] < minx) minx = px[i];
      if (px[i] > maxx) maxx = px[i];
      if (py[i] < miny) miny = py[i];
      if (py[i] > maxy) maxy = py[i];
    }
    if (!n) { minx = miny = 0; maxx = maxy = 0; }
    var cols = Math.floor((maxx - minx) / cell) + 1, rows = Math.floor((maxy - miny) / cell) + 1;
    var cells = new Array(cols * rows);
    for (i = 0; i < n; i++) {
      var c = Math.floor((px[i] - minx) / cell) + cols * Math.floor((py[i] - miny) / cell);
      (cells[c] = cells[c] || []).push(i);
    }
    return { px: px, py: py, cell: cell, cols: cols, rows: rows, minx: minx, miny: miny, cells: cells };
  }

  /* the ids in the cells that overlap the rectangle [x0, x1] x [y0, y1], passed to fn(id) */
  function eachInCells(g, x0, y0, x1, y1, fn) {
    var c0 = Math.max(0, Math.floor((x0 - g.minx) / g.cell)), c1 = Math.min(g.cols - 1, Math.floor((x1 - g.minx) / g.cell));
    var r0 = Math.max(0, Math.floor((y0 - g.miny) / g.cell)), r1 = Math.min(g.rows - 1, Math.floor((y1 - g.miny) / g.cell));
    for (var r = r0; r <= r1; r++) {
      for (var c = c0; c <= c1; c++) {
        var ids = g.cells[c + g.cols * r];
        if (ids) for (var k = 0; k < ids.length; k++) fn(ids[k]);
      }
    }
  }

  /* the id of the point nearest (x, y) within `radius` (ties: the lower id), or -1 */
  function nearest(g, x, y, radius) {
    var best = -1, bd = radius * radius;
    eachInCells(g, x - radius, y - radius, x + radius, y + radius, function (i) {
      var dx = g.px[i] - x, dy = g.py[i] - y, d = dx * dx + dy * dy;
      if (d < bd || (d === bd && best >= 0 && i < best)) { bd = d; best = i; }
    });
    return best;
  }

  /* is (x, y) inside the polygon [[x, y], ...] (even-odd rule, ray casting)? */
  function inPolygon(x, y, poly) {
    var inside = false;
    for (var i = 0, j = poly.length - 1; i < poly.length; j = i++) {
      var xi = poly[i][0], yi = poly[i][1], xj = poly[j][0], yj = poly[j][1];
      if ((yi > y) !== (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi) inside = !inside;
    }
    return inside;
  }

  /* the ids of the points inside the polygon, ascending */
  function selectPolygon(g, poly) {
    if (poly.length < 3) return [];
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity, out = [];
    poly.forEach(function (p) { x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]); y0 = Math.min(y0, p[1]); y1 = Math.max(y1, p[1]); });
    eachInCells(g, x0, y0, x1, y1, function (i) { if (inPolygon(g.px[i], g.py[i], poly)) out.push(i); });
    return out.sort(function (a, b) { return a - b; });
  }

  /* the ids of the points in the box with corners (ax, ay), (bx, by), ascending */
  function selectBox(g, ax, ay, bx, by) {
    var x0 = Math.min(ax, bx), x1 = Math.max(ax, bx), y0 = Math.min(ay, by), y1 = Math.max(ay, by), out = [];
    eachInCells(g, x0, y0, x1, y1, function (i) {
      if (g.px[i] >= x0 && g.px[i] <= x1 && g.py[i] >= y0 && g.py[i] <= y1) out.push(i);
    });
    return out.sort(function (a, b) { return a - b; });
  }

  /* a lasso path (canvas pixels) cut to at most `most` vertices, rounded to whole pixels: what "#sel=" keeps
   * and what the selection is made from, so the page selects the same points after a reload */
  function simplifyPath(path, most) {
    var step = Math.max(1, Math.ceil(path.length / (most || 48))), out = [];
    for (var i = 0; i < path.length; i += step) out.push([Math.round(path[i][0]), Math.round(path[i][1])]);
    return out;
  }
  /* {box: true, pts: [a, b]} -> "b:ax,ay,bx,by"; {box: false, pts: polygon} -> "p:x,y,x,y,..." */
  function formatShape(shape) {
    var flat = [];
    shape.pts.forEach(function (p) { flat.push(Math.round(p[0]), Math.round(p[1])); });
    return (shape.box ? "b:" : "p:") + flat.join(",");
  }
  /* the inverse of formatShape; null when malformed (a box needs 2 corners, a lasso at least 3 vertices) */
  function parseShape(s) {
    var m = /^([bp]):(-?\d+(?:,-?\d+)*)$/.exec(String(s || ""));
    if (!m) return null;
    var v = m[2].split(",").map(Number), pts = [];
    if (v.length % 2) return null;
    for (var i = 0; i < v.length; i += 2) pts.push([v[i], v[i + 1]]);
    var box = m[1] === "b";
    if (box ? pts.length !== 2 : pts.length < 3) return null;
    return { box: box, pts: pts };
  }
  /* the ids of the points in a parsed shape, ascending */
  function selectShape(g, shape) {
    var a = shape.pts[0], b = shape.pts[shape.pts.length - 1];
    return shape.box ? selectBox(g, a[0], a[1], b[0], b[1]) : selectPolygon(g, shape.pts);
  }

  /* "<column>:<lo>:<hi>" (the column may hold ':') -> {col, lo, hi}; null when malformed or lo > hi */
  function parseRange(s) {
    var m = /^(.+):(-?[\d.eE+-]+):(-?[\d.eE+-]+)$/.exec(String(s || ""));
    if (!m) return null;
    var lo = Number(m[2]), hi = Number(m[3]);
    if (!isFinite(lo) || !isFinite(hi) || lo > hi) return null;
    return { col: m[1], lo: lo, hi: hi };
  }
  function formatRange(col, lo, hi) { return col + ":" + Number(lo.toPrecision(6)) + ":" + Number(hi.toPrecision(6)); }
  /* is the value (or the span [min, max]) within / overlapping [lo, hi]? null/undefined: no */
  function inRange(v, lo, hi) {
    if (v === null || v === undefined) return false;
    if (Array.isArray(v)) return v[1] >= lo && v[0] <= hi;
    return v >= lo && v <= hi;
  }

  /* the bin of v among sorted edges (bins [e_k, e_k+1), the last closed), clipped to 0..edges.length-2 */
  function binOf(edges, v) {
    var lo = 0, hi = edges.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (edges[mid] <= v) lo = mid + 1; else hi = mid; }
    return Math.min(Math.max(lo - 1, 0), Math.max(edges.length - 2, 0));
  }

  return { gridIndex: gridIndex, nearest: nearest, inPolygon: inPolygon, selectPolygon: selectPolygon,
    selectBox: selectBox, simplifyPath: simplifyPath, formatShape: formatShape, parseShape: parseShape,
    selectShape: selectShape, parseRange: parseRange, formatRange: formatRange, inRange: inRange, binOf: binOf };
});
