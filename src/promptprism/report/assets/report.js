/* promptprism report: the interactive layer. Plain JavaScript, no library, nothing loaded from elsewhere.
 *
 * Reusable parts, each driven by markup the Python renderers write (progressive enhancement: without this
 * script the page is the static one):
 *   - sortable tables: every <table> with a <thead>;
 *   - search and filters: rows/cards with data-pp-item; data-pp-side, data-pp-sig="0|1", data-pp-group;
 *   - linked selection: data-pp-mode="<id>" and data-pp-prompt="<id>" open the mode/prompt view;
 *   - side-by-side panel: PP.panel(title, nodes);
 *   - fragment state: #q=...&sig=1&side=...&group=...&range=...&mode=...&prompt=... reproduces the view;
 *   - widgets: <div class="pp-widget" data-pp-widget="modes|map|heat"> drawn from the JSON data block.
 * The sortable tables are in sort.js, the panel in panel.js, the views and widgets in views.js (each inlined
 * after this file, registered on PP before the page finishes parsing; start() runs at DOMContentLoaded).
 * Every text goes in with textContent (never parsed as HTML), so no text in the data can become markup.
 */
(function () {
  "use strict";
  var PP = (window.PP = { state: {}, views: {}, widgets: {} });
  var dataEl = document.getElementById("pp-data");
  PP.data = dataEl ? JSON.parse(dataEl.textContent) : {};
  /* the string table (report/strings.py): every long string of the data is there once; the data refers to
   * it as "\u0000<index>". Resolved here, in place (a JavaScript string is shared, not copied). */
  var STR = PP.data.strings || [];
  function resolve(v) {
    if (typeof v === "string") return v.charCodeAt(0) === 0 ? STR[+v.slice(1)] : v;
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) { for (var i = 0; i < v.length; i++) if (typeof v[i] !== "number") v[i] = resolve(v[i]); }
    else for (var k in v) if (Object.prototype.hasOwnProperty.call(v, k)) v[k] = resolve(v[k]);
    return v;
  }
  Object.keys(PP.data).forEach(function (k) { if (k !== "strings") PP.data[k] = resolve(PP.data[k]); });
  PP.str = function (i) { return STR[+i]; };
  PP.resolve = resolve;
  var V = PP.data.view || {};

  function h(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) return;
        if (k === "text") e.textContent = String(attrs[k]);
        else if (k === "cls") e.className = attrs[k];
        else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
        else e.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }
  PP.h = h;
  function fmt(x, d) {
    if (x === null || x === undefined || x !== x) return "–";
    if (typeof x !== "number") return String(x);
    return Number(x.toPrecision(d || 4)).toString();
  }
  PP.fmt = fmt;
  /* a long text cut to its first `shown` characters, with "show all" (and "show less") */
  var LONG = 1500, SHOWN = 300;  // as report/strings.py
  function longText(text, shown) {
    text = text === null || text === undefined ? "" : String(text);
    shown = shown || SHOWN;
    if (text.length <= Math.max(shown, LONG)) return document.createTextNode(text);
    var span = h("span", { cls: "pp-long" });
    span.appendChild(document.createTextNode(text.slice(0, shown) + "…"));
    moreButton(span, text);
    return span;
  }
  function moreButton(span, text) {
    var head = span.firstChild ? span.firstChild.textContent : "", open = false;
    var b = h("button", { type: "button", cls: "pp-more", text: "show all (" + text.length.toLocaleString("en") + " characters)" });
    b.addEventListener("click", function (ev) {
      ev.stopPropagation();
      open = !open;
      span.firstChild.textContent = open ? text : head;
      b.textContent = open ? "show less" : "show all (" + text.length.toLocaleString("en") + " characters)";
    });
    span.appendChild(b);
  }
  PP.longText = longText;
  /* the markup's cut texts (<span class="pp-long" data-pp-str="i">) get their "show all" */
  function longSpans(root) {
    (root || document).querySelectorAll("span.pp-long[data-pp-str]").forEach(function (span) {
      var text = STR[+span.getAttribute("data-pp-str")];
      if (typeof text !== "string" || span.querySelector(".pp-more")) return;
      moreButton(span, text);
    });
  }

  /* ------------------------------------------------------------------------------- fragment state */
  var KEYS = ["q", "sig", "side", "group", "facet", "range", "by", "tag", "mode", "prompt", "attr", "cluster", "model",
    "region", "sel"];
  /* more filters (keep.js: the tag filter): fn(element, state) -> false hides it */
  PP.filters = [];
  /* called once at start, after the toolbar is built (keep.js adds its button) */
  PP.onStart = [];
  /* more of the toolbar's count: fn(state) -> text appended to it (prompts.js: the prompts that match) */
  PP.counts = [];
  /* called with a table after a click sorted it (facets.js groups its rows again) */
  PP.afterSort = [];
  /* the keys that open the side panel (cleared together when it closes) */
  var PANEL = { mode: "", prompt: "", attr: "", cluster: "", model: "", region: "", sel: "" };
  PP.PANEL = PANEL;
  /* A mode's id is ASCII ("+1", "-1"); also accepted: the printed label's minus sign (U+2212), a "+" that
   * URLSearchParams read as a space ("#mode=+1"), a bare rank ("1" = "+1"), "p1"/"n1". */
  function modeId(x) {
    var s = String(x === null || x === undefined ? "" : x).replace(/\u2212/g, "-").trim();
    var m = /^([+-]|p|n)?(\d+)$/i.exec(s);
    if (!m) return s;
    return (m[1] === "-" || (m[1] || "").toLowerCase() === "n" ? "-" : "+") + String(+m[2]);
  }
  PP.modeId = modeId;
  function readHash() {
    var s = {}, raw = location.hash.slice(1);
    if (raw.indexOf("=") < 0) return s; // a plain #anchor (the section links)
    var ps = new URLSearchParams(raw);
    KEYS.forEach(function (k) { if (ps.get(k)) s[k] = ps.get(k); });
    if (s.mode) s.mode = modeId(s.mode);
    return s;
  }
  function writeHash() {
    var ps = new URLSearchParams();
    KEYS.forEach(function (k) { if (PP.state[k]) ps.set(k, PP.state[k]); });
    var str = ps.toString();
    var url = location.href.split("#")[0] + (str ? "#" + str : "");
    try { history.replaceState(null, "", url); } catch (e) { PP.ignoreHash = true; location.hash = str; }
  }
  PP.set = function (changes) {
    Object.keys(changes).forEach(function (k) { PP.state[k] = changes[k] || ""; });
    if (PP.state.mode) PP.state.mode = modeId(PP.state.mode);
    writeHash();
    apply();
  };

  /* ------------------------------------------------------------------------------ search, filters */
  var toolbar, search, sigBox, sideSel, groupSel, facetSel, count;
  /* facets (report/facets.py): "#facet=<name>:<value index>"; facetOf(state) -> {f, k} or null */
  function facetOf(s) {
    var m = /^(.*):(\d+)$/.exec(s.facet || "");
    if (!m) return null;
    var f = (V.facets || []).filter(function (x) { return x.name === m[1]; })[0];
    return f ? { f: f, k: +m[2] } : null;
  }
  PP.facetOf = facetOf;
  /* the facet values of prompt `pid`, as a line for its view (null without facets) */
  PP.facetLine = function (pid) {
    var fs = V.facets || [];
    if (!fs.length) return null;
    return h("p", { cls: "muted small", text: fs.map(function (f) {
      return f.name + ": " + ((f.prompts[pid] || []).map(function (k) { return f.values[k]; }).join(", ") || "–");
    }).join(" · ") });
  };
  /* does prompt `pid` (or sample row `r` of V.rows) carry the facet value? */
  PP.facetPrompt = function (fv, pid) { var v = fv.f.prompts[pid]; return !!v && v.indexOf(fv.k) >= 0; };
  PP.facetRow = function (fv, r) {
    var row = V.rows[r], side = row && fv.f.rows[row.s];
    return !!side && side[row.i] === fv.k;
  };
  function facetSelect() {
    var fs = V.facets || [];
    /* a facet keeps prompts: a page without prompt rows (or a map) has nothing it could keep */
    if (!fs.length || !document.querySelector("main [data-pp-prompt], main canvas")) return null;
    var sides = Object.keys(fs[0].counts);
    return h("select", { id: "pp-facet", "aria-label": "facet", onchange: function () { PP.set({ facet: facetSel.value }); } },
      [h("option", { value: "", text: "every " + fs.map(function (f) { return f.name; }).join(", ") })].concat(fs.map(function (f) {
        return h("optgroup", { label: f.name }, f.keep.map(function (k) {
          return h("option", { value: f.name + ":" + k, text: f.name + ": " + f.values[k] + " (" +
            sides.map(function (sd) { return f.counts[sd][k]; }).join(" · ") + ")" });
        }));
      })));
  }
  PP.promptText = promptText;
  function promptText(id) {
    var p = (V.prompts || [])[id];
    if (!p) return "";
    if (p._text === undefined) {
      var parts = [p.prompt];
      Object.keys(p.rows || {}).forEach(function (s) {
        (p.rows[s] || []).forEach(function (r) { var row = V.rows[r]; if (row && row.t) parts.push(row.t); });
      });
      p._text = parts.join("\n").toLowerCase();
    }
    return p._text;
  }
  function buildToolbar() {
    if (!document.querySelector("[data-pp-item]")) {
      // a page whose sections did not opt in: the rows of its tables (those with a header) are searchable
      document.querySelectorAll("main table").forEach(function (t) {
        if (t.tHead && t.tHead.textContent.trim() && t.tBodies[0])
          Array.prototype.forEach.call(t.tBodies[0].rows, function (r) { r.setAttribute("data-pp-item", ""); });
      });
    }
    var items = document.querySelectorAll("[data-pp-item]");
    if (!items.length) return;
    search = h("input", { type: "search", id: "pp-search", placeholder: "search prompts and outputs…",
      "aria-label": "search prompts and outputs", oninput: function () { PP.set({ q: search.value }); } });
    var parts = [search];
    if (document.querySelector("[data-pp-sig]")) {
      sigBox = h("input", { type: "checkbox", id: "pp-sig", onchange: function () { PP.set({ sig: sigBox.checked ? "1" : "" }); } });
      parts.push(h("label", null, [sigBox, " significant only"]));
    }
    if (document.querySelector("[data-pp-side]")) {
      sideSel = h("select", { id: "pp-side", "aria-label": "side", onchange: function () { PP.set({ side: sideSel.value }); } },
        [h("option", { value: "", text: "both sides" }), h("option", { value: "test", text: (V.names || {}).test || "test" }),
          h("option", { value: "reference", text: (V.names || {}).reference || "reference" })]);
      parts.push(sideSel);
    }
    var groups = {};
    document.querySelectorAll("[data-pp-group]").forEach(function (e) { groups[e.getAttribute("data-pp-group")] = 1; });
    var names = Object.keys(groups);
    if (names.length > 1) {
      groupSel = h("select", { id: "pp-group", "aria-label": "group", onchange: function () { PP.set({ group: groupSel.value }); } },
        [h("option", { value: "", text: "every " + (V.group_label || "group") })].concat(
          names.map(function (g) { return h("option", { value: g, text: g }); })));
      parts.push(groupSel);
    }
    facetSel = facetSelect();
    if (facetSel) parts.push(facetSel);
    count = h("span", { cls: "pp-count", id: "pp-count" });
    parts.push(count);
    toolbar = h("div", { cls: "pp-toolbar", id: "pp-toolbar", role: "search" }, parts);
    var main = document.querySelector("main");
    main.parentNode.insertBefore(toolbar, main);
  }
  function filter() {
    var s = PP.state, q = (s.q || "").toLowerCase(), shown = 0, total = 0, fv = facetOf(s);
    /* prompt rows inside a card (a mode's top prompts and samples): a facet keeps those of its prompts */
    document.querySelectorAll("tr[data-pp-prompt]:not([data-pp-item])").forEach(function (r) {
      r.classList.toggle("pp-hidden", !!fv && !PP.facetPrompt(fv, +r.getAttribute("data-pp-prompt")));
    });
    document.querySelectorAll("[data-pp-item]").forEach(function (e) {
      var ok = true;
      /* a card whose prompt rows the facet hides, every one, has nothing of that value to show */
      if (fv && !e.hasAttribute("data-pp-prompt") && e.querySelector("tr[data-pp-prompt]") &&
          !e.querySelector("tr[data-pp-prompt]:not([data-pp-item]):not(.pp-hidden)")) ok = false;
      if (q) {
        var pid = e.getAttribute("data-pp-prompt");
        ok = ok && (e.textContent.toLowerCase().indexOf(q) >= 0 || (pid !== null && promptText(+pid).indexOf(q) >= 0));
      }
      if (ok && s.sig && e.getAttribute("data-pp-sig") === "0") ok = false;
      if (ok && s.side && e.hasAttribute("data-pp-side") && e.getAttribute("data-pp-side") !== s.side) ok = false;
      if (ok && fv && e.hasAttribute("data-pp-prompt") && !PP.facetPrompt(fv, +e.getAttribute("data-pp-prompt"))) ok = false;
      for (var fi = 0; ok && fi < PP.filters.length; fi++) if (PP.filters[fi](e, s) === false) ok = false;
      if (ok && s.group && e.hasAttribute("data-pp-group") && e.getAttribute("data-pp-group") !== s.group) ok = false;
      e.classList.toggle("pp-hidden", !ok);
      total++; if (ok) shown++;
    });
    if (count) count.textContent = shown + " of " + total + " rows and cards shown" +
      PP.counts.map(function (fn) { return fn(s) || ""; }).join("");
    if (search && search.value !== (s.q || "")) search.value = s.q || "";
    if (sigBox) sigBox.checked = !!s.sig;
    if (sideSel) sideSel.value = s.side || "";
    if (groupSel) groupSel.value = s.group || "";
    if (facetSel) facetSel.value = fv ? s.facet : "";
  }

  /* --------------------------------------------------------------------------- linked selection */
  function markSelected() {
    var s = PP.state;
    document.querySelectorAll(".pp-selected").forEach(function (e) { e.classList.remove("pp-selected"); });
    if (s.mode) document.querySelectorAll('[data-pp-mode="' + CSS.escape(s.mode) + '"]').forEach(function (e) { e.classList.add("pp-selected"); });
    if (s.prompt) document.querySelectorAll('[data-pp-prompt="' + CSS.escape(s.prompt) + '"]').forEach(function (e) { e.classList.add("pp-selected"); });
    if (s.facet) document.querySelectorAll('tr[data-pp-facet="' + CSS.escape(s.facet) + '"]').forEach(function (e) { e.classList.add("pp-selected"); });
  }
  function linkClicks() {
    document.addEventListener("click", function (ev) {
      var t = ev.target;
      if (!(t instanceof Element) || t.closest(".pp-toolbar") || t.closest("summary")) return;
      var fc = t.closest("[data-pp-facet]");
      if (fc) { var v = fc.getAttribute("data-pp-facet"); PP.set({ facet: PP.state.facet === v ? "" : v }); return; }
      var md = t.closest("[data-pp-model]");
      if (md) { PP.set(Object.assign({}, PANEL, { model: md.getAttribute("data-pp-model") })); return; }
      var rg = t.closest("[data-pp-region]");
      if (rg) { PP.set(Object.assign({}, PANEL, { region: rg.getAttribute("data-pp-region") })); return; }
      var cl = t.closest("[data-pp-cluster]");
      if (cl) { PP.set({ cluster: cl.getAttribute("data-pp-cluster") }); return; }
      var at = t.closest("[data-pp-attr]");
      if (at) { PP.set({ attr: at.getAttribute("data-pp-attr") }); return; }
      var pr = t.closest("[data-pp-prompt]");
      if (pr) { PP.set({ prompt: pr.getAttribute("data-pp-prompt"), mode: "", model: "" }); return; }
      var mo = t.closest("[data-pp-mode]");
      if (mo && (mo.tagName !== "DIV" || t.closest("h3"))) { PP.set({ mode: mo.getAttribute("data-pp-mode"), prompt: "" }); }
    });
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") { PP.set(PANEL); return; }
      /* Enter or Space on a focused row, card or header acts as a click (keyboard users: see focusable()) */
      var t = ev.target;
      if ((ev.key === "Enter" || ev.key === " ") && t instanceof Element && t.hasAttribute("data-pp-key")) {
        ev.preventDefault();
        t.click();
      }
    });
  }
  /* what a click opens (prompt and facet rows, model and mode cards' titles, sortable headers), reachable
     by Tab and opened by Enter or Space */
  function focusable(root) {
    var sel = "tr[data-pp-prompt], tr[data-pp-facet], [data-pp-model]:not(button), [data-pp-region], " +
      "[data-pp-cluster], [data-pp-attr], .card[data-pp-mode] h3, th.pp-sortable";
    root.querySelectorAll(sel).forEach(function (e) {
      if (e.closest(".pp-toolbar") || e.matches("a, button, input, select, summary")) return;
      if (!e.hasAttribute("tabindex")) e.setAttribute("tabindex", "0");
      e.setAttribute("data-pp-key", "");
    });
  }
  PP.focusable = focusable;
  function apply() {
    var s = PP.state;
    filter();
    markSelected();
    var shown = false;
    Object.keys(PP.views).forEach(function (k) { if (!shown && s[k]) shown = PP.views[k](s[k]) !== false; });
    if (!shown) PP.closePanel();
    Object.keys(PP.widgets).forEach(function (k) { PP.widgets[k].update && PP.widgets[k].update(s); });
  }
  PP.apply = apply;

  PP.V = V;

  /* ------------------------------------------------------------------------------------ start */
  function start() {
    longSpans(document);
    /* (a K x K matrix is not sorted: reordering its rows alone would break its symmetry) */
    document.querySelectorAll("main table").forEach(function (t) { if (t.tHead && !t.classList.contains("pp-matrix")) PP.sortable(t); });
    document.querySelectorAll(".pp-widget[data-pp-widget]").forEach(function (el) {
      var w = PP.widgets[el.getAttribute("data-pp-widget")];
      if (!w || !w.draw) return;
      w.draw(el);
      if (el.childNodes.length && el.parentNode) el.parentNode.classList.add("pp-on");
    });
    buildToolbar();
    PP.onStart.forEach(function (fn) { fn(toolbar); });
    /* the sticky toolbar's height: a section a link scrolls to starts below it (report.css: scroll-margin-top) */
    var barHeight = function () {
      if (toolbar) document.documentElement.style.setProperty("--pp-bar", (toolbar.offsetHeight + 6) + "px");
    };
    barHeight();
    window.addEventListener("resize", barHeight);
    linkClicks();
    focusable(document);
    PP.state = readHash();
    window.addEventListener("hashchange", function () {
      if (PP.ignoreHash) { PP.ignoreHash = false; return; }
      var s = readHash();
      if (Object.keys(s).length) { PP.state = s; apply(); }
    });
    apply();
    document.documentElement.setAttribute("data-pp-ready", "1");
    if (window.performance && performance.mark) performance.mark("pp-ready");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
