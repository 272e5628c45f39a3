/* Unit tests of the report's pure functions (src/promptprism/report/assets/pure.js), brute force beside
 * each: run with `node --test tests/js/`. */
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const path = require("node:path");
const P = require(path.join(__dirname, "..", "..", "src", "promptprism", "report", "assets", "pure.js"));

function rand(seed) { let s = seed >>> 0; return () => { s = (1664525 * s + 1013904223) >>> 0; return s / 4294967296; }; }
function cloud(n, seed) {
  const r = rand(seed), px = [], py = [];
  for (let i = 0; i < n; i++) { px.push(640 * r()); py.push(460 * r()); }
  return { px, py };
}

test("nearest agrees with a scan of every point", () => {
  const { px, py } = cloud(5000, 1), g = P.gridIndex(px, py, 8), r = rand(2);
  for (let q = 0; q < 300; q++) {
    const x = 700 * r() - 30, y = 500 * r() - 20;
    let best = -1, bd = 64;
    for (let i = 0; i < px.length; i++) { const d = (px[i] - x) ** 2 + (py[i] - y) ** 2; if (d < bd) { bd = d; best = i; } }
    assert.strictEqual(P.nearest(g, x, y, 8), best);
  }
});

test("inPolygon: a square, a concave L and points outside", () => {
  const sq = [[0, 0], [10, 0], [10, 10], [0, 10]];
  assert.ok(P.inPolygon(5, 5, sq));
  assert.ok(!P.inPolygon(11, 5, sq));
  assert.ok(!P.inPolygon(-1, -1, sq));
  const L = [[0, 0], [10, 0], [10, 4], [4, 4], [4, 10], [0, 10]];
  assert.ok(P.inPolygon(2, 8, L));
  assert.ok(P.inPolygon(8, 2, L));
  assert.ok(!P.inPolygon(8, 8, L));  // the notch
});

test("selectPolygon and selectBox equal a scan", () => {
  const { px, py } = cloud(20000, 3), g = P.gridIndex(px, py, 10);
  const poly = [[100, 100], [400, 80], [300, 300], [200, 200], [120, 350]];
  const want = [];
  for (let i = 0; i < px.length; i++) if (P.inPolygon(px[i], py[i], poly)) want.push(i);
  assert.deepStrictEqual(P.selectPolygon(g, poly), want);
  assert.ok(want.length > 100);
  const box = [];
  for (let i = 0; i < px.length; i++) if (px[i] >= 50 && px[i] <= 150 && py[i] >= 20 && py[i] <= 90) box.push(i);
  assert.deepStrictEqual(P.selectBox(g, 150, 90, 50, 20), box);
  assert.deepStrictEqual(P.selectPolygon(g, [[0, 0], [1, 1]]), []);
});

test("range fragment: parse(format(x)) round-trips; malformed values are null", () => {
  assert.deepStrictEqual(P.parseRange(P.formatRange("length", 12, 40.5)), { col: "length", lo: 12, hi: 40.5 });
  assert.deepStrictEqual(P.parseRange("a:b:-3:1e2"), { col: "a:b", lo: -3, hi: 100 });
  assert.strictEqual(P.parseRange("length:5:1"), null);
  assert.strictEqual(P.parseRange("length:x:1"), null);
  assert.strictEqual(P.parseRange(""), null);
  assert.ok(P.inRange(3, 1, 3) && !P.inRange(3.1, 1, 3) && !P.inRange(null, 0, 1));
  assert.ok(P.inRange([0, 2], 1, 3) && !P.inRange([4, 5], 1, 3));
});

test("binOf matches numpy.searchsorted(edges, v, 'right') - 1, clipped", () => {
  const edges = [0, 1, 2.5, 4];
  const cases = [[-1, 0], [0, 0], [0.5, 0], [1, 1], [2.49, 1], [2.5, 2], [4, 2], [9, 2]];
  for (const [v, k] of cases) assert.strictEqual(P.binOf(edges, v), k, String(v));
});

test("a lasso or box written to the fragment reads back and selects the same points", () => {
  const { px, py } = cloud(4000, 7), g = P.gridIndex(px, py, 8), r = rand(8);
  const path = [];
  for (let k = 0; k < 300; k++) { const a = 2 * Math.PI * k / 300; path.push([320 + 150 * Math.cos(a) * (1 + 0.3 * r()), 230 + 120 * Math.sin(a)]); }
  const poly = P.simplifyPath(path, 48);
  assert.ok(poly.length <= 48 && poly.length >= 3);
  assert.ok(poly.every((p) => Number.isInteger(p[0]) && Number.isInteger(p[1])));
  const lasso = { box: false, pts: poly }, text = P.formatShape(lasso);
  assert.deepStrictEqual(P.parseShape(text), lasso);
  const want = [];
  for (let i = 0; i < px.length; i++) if (P.inPolygon(px[i], py[i], poly)) want.push(i);
  assert.ok(want.length > 100);
  assert.deepStrictEqual(P.selectShape(g, P.parseShape(text)), want);
  const box = { box: true, pts: [[400, 300], [100, 50]] };
  const inBox = [];
  for (let i = 0; i < px.length; i++) if (px[i] >= 100 && px[i] <= 400 && py[i] >= 50 && py[i] <= 300) inBox.push(i);
  assert.deepStrictEqual(P.selectShape(g, P.parseShape(P.formatShape(box))), inBox);
  for (const bad of ["", "1", "p:1,2,3,4", "b:1,2,3", "b:1,2,3,4,5,6", "x:1,2,3,4", "p:1,2,3,4,5,a"]) {
    assert.strictEqual(P.parseShape(bad), null, bad);
  }
});
