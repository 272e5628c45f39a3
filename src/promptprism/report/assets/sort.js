/* promptprism report: sortable tables, on report.js. A click on a header sorts the rows by that column (numbers
 * as numbers; a number followed by its p-value or interval by the number); a second click reverses. A column of
 * numbers (shares, scores) goes largest first on its first click, text and ranks ("#") smallest first.
 */
(function (PP) {
  "use strict";
  function cellValue(td) {
    var t = (td ? td.textContent : "").trim();
    var n = t.replace(/[,\s%]/g, "").replace(/\u2212/g, "-").replace(/^\+/, "");
    if (n !== "" && !isNaN(Number(n))) return Number(n);
    /* a number with its p-value or interval after it ("0.0239 (p 0.02) *", "9.5e-05 [..]"): by the number */
    var lead = /^[+\-\u2212]?(\d[\d,]*\.?\d*|\.\d+)(e[+\-\u2212]?\d+)?%?(?=\s*[(\[*])/i.exec(t);
    if (lead) return Number(lead[0].replace(/[,%]/g, "").replace(/\u2212/g, "-").replace(/^\+/, ""));
    return t.toLowerCase();
  }
  /* a column of numbers (most of its first 20 filled cells) other than a rank ("#", "rank ..."): its first
   * click sorts it largest first (shares, scores); text and ranks go ascending first */
  function firstDescending(table, th, col) {
    if (/^(#|rank\b)/i.test(th.textContent.trim())) return false;
    var rows = table.tBodies[0] ? table.tBodies[0].rows : [], n = 0, seen = 0;
    for (var i = 0; i < rows.length && seen < 20; i++) {
      var c = rows[i].cells[col], t = c ? c.textContent.trim() : "";
      if (!t || t === "–" || rows[i].classList.contains("pp-grouphead")) continue;
      seen++;
      if (typeof cellValue(c) === "number") n++;
    }
    return seen > 0 && 2 * n > seen;
  }
  PP.firstDescending = firstDescending;
  function sortable(table) {
    var ths = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(ths, function (th, col) {
      if (!th.textContent.trim()) return;
      th.classList.add("pp-sortable");
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var cur = th.getAttribute("aria-sort");
        var asc = cur ? cur !== "ascending" : !firstDescending(table, th, col);
        Array.prototype.forEach.call(ths, function (o) { o.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        body.querySelectorAll("tr.pp-grouphead").forEach(function (r) { r.remove(); });
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
          var c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : typeof x === "number" ? -1 : 1;
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        table._ppSorted = true;
        PP.afterSort.forEach(function (fn) { fn(table); });
      });
    });
  }

  PP.cellValue = cellValue;
  PP.sortable = sortable;
})(window.PP);
