/* promptprism report: the table of every prompt (<div class="pp-widget" data-pp-widget="prompts">, the
 * PromptSplit page). The page's markup ranks the top prompts only; this table holds every prompt of the data
 * (V.prompts), drawn PAGE rows at a time ("show more", "show all"), sorted by a click on a header (numbers
 * largest first, a second click reverses; unknown values last) and filtered like the rest of the page: the
 * search (the prompt and its outputs in the data), the facet, the range and the tag filters. Its rows open
 * the prompt's view as any prompt row does. The toolbar's count says how many prompts match.
 */
(function (PP) {
  "use strict";
  var h = PP.h, fmt = PP.fmt, V = PP.V, PAGE = 25;
  var prompts = V.prompts || [];
  if (!prompts.length) return;
  var names = V.names || {};
  var COLS = [
    { name: "#", key: "rank", asc: true },
    { name: "prompt", key: "prompt", asc: true },
    { name: "share of the disagreement", key: "share" },
    { name: "disagreement", key: "disagreement" },
    { name: "n " + (names.test || "test"), key: "n_test" },
    { name: "n " + (names.reference || "reference"), key: "n_reference" }
  ];
  /* the ranked prompts come first in the data, in the ranking's order: their rank is their place */
  function value(i, key) {
    var p = prompts[i];
    if (key === "rank") return p.disagreement === null || p.disagreement === undefined ? null : i + 1;
    if (key === "prompt") return p.prompt.toLowerCase();
    var v = p[key];
    return typeof v === "number" && v === v ? v : null;
  }
  /* an element-like stand-in for prompt i, for the page's filters (tags, range: fn(element, state)) */
  function stand(i) {
    return { hasAttribute: function (a) { return a === "data-pp-prompt"; },
      getAttribute: function (a) { return a === "data-pp-prompt" ? String(i) : null; } };
  }
  function matching(s) {
    var q = (s.q || "").toLowerCase(), fv = PP.facetOf(s), out = [];
    for (var i = 0; i < prompts.length; i++) {
      if (fv && !PP.facetPrompt(fv, i)) continue;
      if (q && PP.promptText(i).indexOf(q) < 0) continue;
      var e = stand(i), ok = true;
      for (var k = 0; ok && k < PP.filters.length; k++) if (PP.filters[k](e, s) === false) ok = false;
      if (ok) out.push(i);
    }
    return out;
  }
  PP.allPrompts = function () { return matching(PP.state); };
  var sort = { col: 0, asc: true };
  function sorted(ids) {
    var key = COLS[sort.col].key, dir = sort.asc ? 1 : -1;
    return ids.slice().sort(function (a, b) {
      var x = value(a, key), y = value(b, key);
      if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
      return x < y ? -dir : x > y ? dir : a - b;
    });
  }
  function filtered(s) { return !!(s.q || PP.facetOf(s) || s.tag || s.range); }
  PP.counts.push(function (s) {
    if (!PP.widgets.prompts.body) return "";  // (a page without the table)
    var n = matching(s).length;
    return " · " + n.toLocaleString("en") + " of " + prompts.length.toLocaleString("en") + " prompts in “All prompts”";
  });

  function cell(i, key) {
    var p = prompts[i], v = value(i, key);
    if (key === "prompt") return h("td", { dir: "auto" }, [PP.longText(p.prompt, 300)]);
    var text = v === null ? "–" : key === "share" ? fmt(100 * v, 3) + "%" : key === "rank" ? String(v) : fmt(v, 4);
    return h("td", { cls: "num", text: text });
  }
  function row(i) {
    return h("tr", { "data-pp-prompt": i, cls: String(i) === PP.state.prompt ? "pp-selected" : null },
      COLS.map(function (c) { return cell(i, c.key); }));
  }
  function header(th, k) {
    if (k === sort.col) th.setAttribute("aria-sort", sort.asc ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
  PP.widgets.prompts = {
    draw: function (el) {
      var self = this;
      this.ths = COLS.map(function (c, k) {
        return h("th", { cls: "pp-sortable" + (k === 1 ? "" : " num"), title: "sort by this column", text: c.name,
          onclick: function () { sort = { col: k, asc: sort.col === k ? !sort.asc : !!c.asc }; self.sig = null; self.update(PP.state); } });
      });
      this.body = h("tbody");
      this.line = h("p", { cls: "muted small", id: "pp-prompts-count" });
      this.more = h("p", { cls: "pp-pager" });
      var unranked = prompts.filter(function (p) { return p.disagreement === null || p.disagreement === undefined; }).length;
      el.appendChild(this.line);
      el.appendChild(h("table", { id: "pp-prompts" }, [h("thead", null, [h("tr", null, this.ths)]), this.body]));
      el.appendChild(this.more);
      if (unranked) el.appendChild(h("p", { cls: "muted small", text: unranked.toLocaleString("en") + " of these prompts " +
        "are not in result.json's prompt ranking (it keeps the top prompts only): their disagreement and share read –, " +
        "and they sort last." }));
      this.shown = PAGE;
      this.update(PP.state);
    },
    update: function (s) {
      if (!this.body) return;
      var ids = matching(s), sig = [ids.length, ids[0], ids[ids.length - 1], s.q, s.facet, s.tag, s.range].join("|");
      if (sig !== this.key) { this.key = sig; this.shown = PAGE; this.sig = null; }
      var list = sorted(ids), n = Math.min(this.shown, list.length), draw = [sig, sort.col, sort.asc, n].join("|");
      this.line.textContent = (list.length ? "Showing " + n.toLocaleString("en") + " of " : "No prompt of the ") +
        list.length.toLocaleString("en") + (filtered(s) ? " prompts that match the search and filters (of " +
        prompts.length.toLocaleString("en") + ")" : " prompts") + (list.length ? "; click a header to sort, a row to open it." : " matches.");
      this.ths.forEach(header);
      if (draw === this.sig) {  // the same rows: only the selection moved (the rows, and the focus, stay)
        this.body.querySelectorAll("tr").forEach(function (r) { r.classList.toggle("pp-selected", r.getAttribute("data-pp-prompt") === s.prompt); });
        return;
      }
      this.sig = draw;
      this.body.textContent = "";
      list.slice(0, n).forEach(function (i) { this.body.appendChild(row(i)); }, this);
      PP.focusable(this.body);
      this.pager(list.length, n);
    },
    pager: function (total, n) {
      var self = this;
      this.more.textContent = "";
      if (n >= total) return;
      var step = Math.min(PAGE * 4, total - n);
      this.more.appendChild(h("button", { type: "button", id: "pp-prompts-more", text: "show " + step + " more",
        onclick: function () { self.shown += step; self.update(PP.state); } }));
      this.more.appendChild(document.createTextNode(" "));
      this.more.appendChild(h("button", { type: "button", id: "pp-prompts-all", text: "show all " + total.toLocaleString("en"),
        onclick: function () { self.shown = total; self.update(PP.state); } }));
    }
  };
})(window.PP);
