/* promptprism report: the views (side panel contents) and widgets of each report kind, on top of report.js.
 * PP.views.<key>(id) fills the panel for the fragment key <key> (mode, prompt, cluster, attr); returns false
 * when the id is unknown. PP.widgets.<name> = {draw(el), update(state)} for <div data-pp-widget="<name>">.
 * Every text goes in with textContent (through PP.h), never parsed as HTML.
 */
(function (PP) {
  "use strict";
  var h = PP.h, fmt = PP.fmt, V = PP.V, sortable = PP.sortable;

  /* --------------------------------------------------------------------- sample cards, word diff */
  function words(text) { return (text || "").toLowerCase().match(/[\p{L}\p{N}_']+/gu) || []; }
  function highlighted(text, other) {
    // the words of `text` that none of the other model's outputs (for the same prompt) contain
    var box = h("div", { cls: "pp-text", dir: "auto" });
    var parts = (text || "").split(/([\p{L}\p{N}_']+)/u);
    parts.forEach(function (part, i) {
      if (i % 2 === 1 && other && !other[part.toLowerCase()]) box.appendChild(h("mark", { text: part }));
      else if (part) box.appendChild(document.createTextNode(part));
    });
    return box;
  }
  function sampleCard(r, other) {
    var row = V.rows[r];
    if (!row) return null;
    var meta = (V.kind === "kway" ? row.s + " " : "") + "#" + row.i + (row.sc !== undefined && row.sc !== null ? " · score " + fmt(row.sc, 3) : "") +
      (row.cut ? " · first " + row.t.length + " of " + row.cut + " characters" : "");
    var prompt = V.prompts[row.p];
    var cap = h("div", { cls: "pp-meta", dir: "auto" }, [meta, prompt && !other ? " · " + prompt.prompt.slice(0, 120) : ""]);
    if (row.im !== undefined && row.im !== null && V.thumbs[row.im]) {
      // the thumbnail is decoded only now, when its card is shown (lazy)
      return h("figure", { "data-pp-prompt": row.p, "data-pp-sample": row.s + ":" + row.i, title: "show this prompt's outputs" },
        [h("img", { src: V.thumbs[row.im], alt: prompt ? prompt.prompt.slice(0, 200) : "sample", loading: "lazy", decoding: "async" }), cap]);
    }
    var t = row.t === null || row.t === undefined ? "(no output recorded)" : row.t;
    return h("div", { "data-pp-prompt": row.p, "data-pp-sample": row.s + ":" + row.i }, [other && t.length <= 4000 ? highlighted(t, other) : h("div", { cls: "pp-text", dir: "auto" }, [PP.longText(t, 1200)]), cap]);
  }
  function sideBySide(list, label, diff, keys) {
    // one column per side (keys: ["test", "reference"], or the K models of a compare page); with diff,
    // each text marks the words that no other column's outputs (for the same prompt) use
    keys = keys || ["test", "reference"];
    var names = V.names || { test: "test", reference: "reference" };
    var bags = {};
    if (diff) keys.forEach(function (s) {
      var b = {}; (list[s] || []).forEach(function (r) { words((V.rows[r] || {}).t).forEach(function (w) { b[w] = 1; }); });
      bags[s] = b;
    });
    function others(s) {
      var o = {};
      keys.forEach(function (k) { if (k !== s) Object.keys(bags[k]).forEach(function (w) { o[w] = 1; }); });
      return o;
    }
    var cols = h("div", { cls: "pp-cols" }, keys.map(function (s) {
      var rows = list[s] || [], other = diff ? others(s) : false;
      var cards = rows.map(function (r) { return sampleCard(r, other); });
      var imgs = cards.filter(function (c) { return c && c.tagName === "FIGURE"; });
      return h("div", { "data-pp-col": s }, [h("h3", { text: (names[s] || s) + " · " + rows.length + " " + label })].concat(
        imgs.length ? [h("div", { cls: "pp-imgs" }, cards)] : cards));
    }));
    if (keys.length > 2) cols.style.gridTemplateColumns = "repeat(" + keys.length + ", minmax(0, 1fr))";
    return cols;
  }
  PP.sideBySide = sideBySide;

  /* ------------------------------------------------------------------------- PromptSplit views */
  function modeById(id) { id = PP.modeId(id); return (V.modes || []).filter(function (m) { return m.id === id; })[0]; }
  function sigText(m) { return m.significant === true ? "significant" : m.significant === false ? "not significant" : "not tested"; }
  function table(headers, rows, rowAttrs) {
    var t = h("table", null, [h("thead", null, [h("tr", null, headers.map(function (x) { return h("th", { text: x }); }))]),
      h("tbody", null, rows.map(function (r, i) {
        return h("tr", rowAttrs ? rowAttrs[i] : null, r.map(function (c) {
          return typeof c === "string" && c.length > 1500 ? h("td", { dir: "auto" }, [PP.longText(c)]) : h("td", { text: c, dir: "auto" });
        }));
      }))]);
    sortable(t);
    return t;
  }
  PP.table = table;
  PP.views.mode = function (id) {
    var m = modeById(id);
    if (!m) return false;
    var names = V.names || {};
    PP.panel("Mode " + (m.label || m.id) + " · " + (names[m.side] || m.side) + " does more", [
      h("p", { text: "eigenvalue " + fmt(m.eigenvalue) + " · p = " + fmt(m.p_value, 3) + " · " + sigText(m) })
    ].concat((m.verdicts || []).map(function (t) { return h("p", { cls: "small pp-mode-verdict", text: t }); }), [
      h("h3", { text: "its prompts (click one for its outputs)" }),
      table(["prompt", "contribution", "share of eigenvalue", "n test", "n ref"], m.prompts.map(function (p) {
        return [V.prompts[p[0]].prompt, fmt(p[1], 3), p[2] === null ? "–" : fmt(100 * p[2], 3) + "%", p[3], p[4]];
      }), m.prompts.map(function (p) { return { "data-pp-prompt": p[0] }; })),
      h("h3", { text: "its strongest samples, both models side by side" }),
      sideBySide(m.samples, "samples", false)
    ]));
  };
  function hasText(list) {
    return ["test", "reference"].some(function (s) { return (list[s] || []).some(function (r) { var row = V.rows[r]; return row && row.t && row.im === undefined; }); });
  }
  PP.views.prompt = function (id) {
    var p = (V.prompts || [])[+id];
    if (!p) return false;
    var contrib = (V.modes || []).map(function (m) {
      var c = p.contrib ? p.contrib[m.id] : undefined;
      return [m.label || m.id, c === undefined ? "not among its top prompts" : fmt(c, 3),
        c === undefined || !m.eigenvalue ? "–" : fmt(100 * c / m.eigenvalue, 3) + "%", sigText(m), fmt(m.p_value, 3)];
    });
    var shown = (p.rows.test || []).length + (p.rows.reference || []).length;
    PP.panel(p.prompt.length > 300 ? p.prompt.slice(0, 300) + "…" : p.prompt, [
      p.prompt.length > 300 ? h("p", { cls: "pp-text", dir: "auto" }, [PP.longText(p.prompt)]) : null,
      PP.facetLine(+id),
      h("p", { text: "disagreement " + fmt(p.disagreement) + (p.share !== null && p.share !== undefined ? " (" + fmt(100 * p.share, 3) + "% of the total)" : "") +
        " · " + p.n_test + " test and " + p.n_reference + " reference samples · " + shown + " shown" +
        (V.ranking_basis ? " · ranking from " + V.ranking_basis : "") }),
      h("h3", { text: "outputs side by side" + (hasText(p.rows) ? " (highlighted: words the other model's outputs for this prompt do not use)" : "") }),
      sideBySide(p.rows, "outputs", true),
      h("h3", { text: "contribution to each mode" }),
      table(["mode", "contribution", "share of eigenvalue", "mode significance", "p"], contrib,
        (V.modes || []).map(function (m) { return { "data-pp-mode": m.id }; }))
    ]);
  };

  /* ------------------------------------------------------------------------------ Scendi views */
  function clusterColumn(c, col, title) {
    var cards = c.samples.map(function (s) {
      var cap = h("div", { cls: "pp-meta", dir: "auto", text: "#" + s.i + " · score " + fmt(s.sc, 3) + " · " + (s.p || "").slice(0, 120) });
      var key = c.model + ":" + s.i;
      if (s.im !== undefined) return h("figure", { "data-pp-sample": key }, [h("img", { src: V.thumbs[s.im], alt: (s.p || "sample").slice(0, 200), loading: "lazy" }), cap]);
      return h("div", { "data-pp-sample": key }, [h("div", { cls: "pp-text", dir: "auto" }, [PP.longText(s.t === null || s.t === undefined ? "(no output recorded)" : s.t, 1200)]), cap]);
    });
    var imgs = cards.filter(function (x) { return x.tagName === "FIGURE"; }).length;
    // col: the column of the every-model row (data-pp-cluster-col, beside the pair's data-pp-col)
    return h("div", col ? { "data-pp-cluster-col": col } : { "data-pp-col": c.kind }, [h("h3", { text: (title || c.kind) + " #" + c.rank + " · " + fmt(100 * c.share, 3) + "% of the trace" })]
      .concat(imgs ? [h("div", { cls: "pp-imgs" }, cards)] : cards));
  }
  function columns(cols) {
    var box = h("div", { cls: "pp-cols" }, cols);
    if (cols.length > 2) box.style.gridTemplateColumns = "repeat(" + cols.length + ", minmax(0, 1fr))";
    return box;
  }
  PP.views.cluster = function (id) {
    var cs = V.clusters || [], c = cs[+id];
    if (!c) return false;
    var pair = cs.filter(function (o) { return o.model === c.model && o.row === c.row; });
    // the cluster of the same kind and row in every model: the models side by side
    var same = cs.filter(function (o) { return o.kind === c.kind && o.row === c.row; });
    PP.panel(c.model + " · cluster row " + (c.row + 1), [
      h("p", { cls: "muted", text: "Model-driven cluster (what the model varies beyond its prompts) beside the unconditioned cluster of the same rank (the outputs' own clusters, prompts ignored); their strongest samples." }),
      h("div", { cls: "pp-cols" }, pair.map(function (o) { return clusterColumn(o); })),
      same.length > 1 ? h("h3", { text: "the " + c.kind + " cluster #" + c.rank + " of every model, side by side" }) : null,
      same.length > 1 ? h("div", { cls: "pp-models" }, [columns(same.map(function (o) { return clusterColumn(o, o.model, o.model + " · " + o.kind); }))]) : null
    ]);
  };

  /* ---------------------------------------------------------------------------- CompCon views */
  PP.views.attr = function (id) {
    var a = (V.attributes || [])[+id];
    if (!a) return false;
    var names = V.names || { A: "A", B: "B" };
    PP.panel(a.attribute, [
      h("p", { text: "diverges on " + a.n_diverging + " of " + a.n_prompts + " prompts (score " + fmt(a.score, 3) +
        ") · mean fraction " + names.A + " " + fmt(a.mean_fraction_a, 3) + ", " + names.B + " " + fmt(a.mean_fraction_b, 3) +
        " · CLIP threshold " + fmt(a.threshold, 3) }),
      h("h3", { text: "diverging prompts, both models' images" })
    ].concat(a.prompts.length ? a.prompts.map(function (k) {
      var pr = V.prompts[k];
      return h("div", { cls: "card" }, [h("b", { text: pr.prompt, dir: "auto" }), h("div", { cls: "pp-cols" }, ["A", "B"].map(function (key) {
        var ids = pr[key] || [];
        return h("div", { "data-pp-col": key }, [h("h4", { text: names[key] }), ids.length ? h("div", { cls: "pp-imgs" }, ids.map(function (t) {
          return h("figure", null, [h("img", { src: V.thumbs[t], alt: names[key] + ": " + pr.prompt.slice(0, 150), loading: "lazy" })]);
        })) : h("p", { cls: "muted small", text: pr[key + "_why"] || "no images (the model's images were not given)" })]);
      }))]);
    }) : [h("p", { cls: "muted", text: "no diverging prompt" })]));
  };

  /* a region's interval, {low, high, debiased} (result.json) or [low, high]: the U-form estimate it is built
   * around (when recorded) beside it, so that the interval is never read as one of the eq.-4 value */
  function ivText(iv) {
    if (!iv) return "no interval";
    var arr = Array.isArray(iv), lo = arr ? iv[0] : iv.low, hi = arr ? iv[1] : iv.high;
    var u = !arr && iv.debiased !== undefined && iv.debiased !== null ? "U-form " + fmt(iv.debiased, 3) + " " : "interval ";
    return u + "[" + fmt(lo, 3) + ", " + fmt(hi, 3) + "]";
  }
  PP.ivText = ivText;

  /* ------------------------------------------------------------------------------------ widgets */
  PP.widgets.heat = {
    draw: function (el) {
      var R = PP.data.result || {}, names = R.names || [], shape = V.shape, labels = V.labels;
      if (!shape || !labels || !names.length) return;
      var hgt = shape[0], wid = shape[1], cell = Math.max(2, Math.floor(300 / Math.max(hgt, wid)));
      var sel = h("select", { id: "pp-checkpoint", "aria-label": "generated set", onchange: function () { PP.set({ group: sel.value }); } },
        names.map(function (n) { return h("option", { value: n, text: n }); }));
      var cv = h("canvas", { width: wid * cell, height: hgt * cell, id: "pp-heat", "aria-label": "region CMS heat map" });
      var tip = h("div", { cls: "pp-tip", hidden: true });
      var legend = h("p", { cls: "muted small" });
      el.appendChild(h("p", { cls: "muted small" }, ["Region CMS over the image for ", sel, " (hover a pixel for its region's value and interval; dark: lower CMS, the region that differs more)."]));
      el.appendChild(h("div", { cls: "pp-map" }, [cv, tip]));
      el.appendChild(legend);
      var ctx = cv.getContext("2d");
      function setIndex() { var k = names.indexOf(sel.value); return k < 0 ? 0 : k; }
      this.paint = function () {
        var k = setIndex(), vals = (R.region_cms || [])[k] || [];
        var lo = Math.min.apply(null, vals.filter(isFinite)), hi = Math.max.apply(null, vals.filter(isFinite));
        for (var y = 0; y < hgt; y++) for (var x = 0; x < wid; x++) {
          var v = vals[labels[y * wid + x]], f = hi > lo ? (v - lo) / (hi - lo) : 1;
          ctx.fillStyle = v === null || v === undefined ? "#ccc" : "hsl(12," + Math.round(70 * (1 - f) + 10) + "%," + Math.round(35 + 55 * f) + "%)";
          ctx.fillRect(x * cell, y * cell, cell, cell);
        }
        legend.textContent = names[k] + ": region CMS from " + fmt(lo, 3) + " (darkest) to " + fmt(hi, 3) + " (lightest)";
      };
      cv.addEventListener("mousemove", function (ev) {
        var r = cv.getBoundingClientRect(), x = Math.floor((ev.clientX - r.left) * wid / r.width), y = Math.floor((ev.clientY - r.top) * hgt / r.height);
        if (x < 0 || y < 0 || x >= wid || y >= hgt) { tip.hidden = true; return; }
        var k = setIndex(), reg = labels[y * wid + x], iv = ((V.intervals || [])[k] || [])[reg];
        tip.textContent = names[k] + " · pixel (" + y + ", " + x + ") · region " + reg + " · CMS (eq. 4) " +
          fmt(((R.region_cms || [])[k] || [])[reg], 4) + " · " + ivText(iv);
        tip.style.left = Math.min(ev.clientX - r.left + 12, r.width) + "px";
        tip.style.top = (ev.clientY - r.top + 12) + "px";
        tip.hidden = false;
      });
      cv.addEventListener("mouseleave", function () { tip.hidden = true; });
      cv.addEventListener("click", function (ev) {  // a pixel opens its region's view
        var r = cv.getBoundingClientRect(), x = Math.floor((ev.clientX - r.left) * wid / r.width), y = Math.floor((ev.clientY - r.top) * hgt / r.height);
        if (x >= 0 && y >= 0 && x < wid && y < hgt) PP.set({ region: String(labels[y * wid + x]) });
      });
      this.sel = sel;
      this.paint();
    },
    update: function (s) {
      if (!this.paint) return;
      var names = (PP.data.result || {}).names || [];
      this.sel.value = s.group && names.indexOf(s.group) >= 0 ? s.group : names[0];
      this.paint();
    }
  };
  PP.widgets.modes = {
    draw: function (el) {
      var ms = V.modes || [];
      if (!ms.length) return;
      var top = Math.max.apply(null, ms.map(function (m) { return Math.abs(m.eigenvalue) || 0; })) || 1;
      el.appendChild(h("p", { cls: "muted small", text: "Modes by |eigenvalue| (blue: test does more, orange: reference; pale: not significant). Click a bar to open the mode." }));
      el.appendChild(h("div", { cls: "pp-modebars" }, ms.map(function (m) {
        var b = h("button", { "data-pp-mode": m.id, cls: (m.side === "test" ? "" : "neg") + (m.significant === false ? " ns" : ""),
          title: "mode " + (m.label || m.id) + " · eigenvalue " + fmt(m.eigenvalue) + " · " + sigText(m) });
        b.style.height = Math.max(2, 110 * Math.abs(m.eigenvalue || 0) / top) + "px";
        return b;
      })));
    }
  };
  PP.sampleCard = sampleCard;
  PP.modeById = modeById;
})(window.PP);
