/* promptprism report: the K-way (compare) page's views, on the split page's components (report.js, views.js).
 * #prompt=<id>: the prompt's outputs of all K models side by side (texts with the words no other model
 * uses marked, or thumbnails); #model=<name>: that model's strongest samples on its strongest significant
 * mode against the rest's on the same mode, and the prompts of its comparison with the rest.
 * The metrics page (view kind "sets") reuses the prompt view: each generated set and the reference.
 */
(function (PP) {
  "use strict";
  var h = PP.h, fmt = PP.fmt, V = PP.V;
  if (V.kind !== "kway" && V.kind !== "sets") return;  // sets: the metrics page's generated sets and reference
  var models = V.models || [], what = V.kind === "sets" ? "sets'" : "models'";

  function hasText(rows) {
    return models.some(function (m) { return (rows[m] || []).some(function (r) { var row = V.rows[r]; return row && row.t && row.im === undefined; }); });
  }
  PP.views.prompt = function (id) {
    var p = (V.prompts || [])[+id];
    if (!p) return false;
    var counts = models.map(function (m) { return m + " " + (p.n[m] === undefined ? "–" : p.n[m]); }).join(" · ");
    var dev = Object.keys(p.dev || {});
    PP.panel(p.prompt.length > 300 ? p.prompt.slice(0, 300) + "…" : p.prompt, [
      p.prompt.length > 300 ? h("p", { cls: "pp-text", dir: "auto" }, [PP.longText(p.prompt)]) : null,
      PP.facetLine(+id),
      h("p", { text: "samples: " + counts + (dev.length ? " · attributed to " + dev.map(function (m) {
        return m + " (" + fmt(100 * (p.dev[m] || 0), 3) + "% of its deviation)"; }).join(", ") : "") }),
      h("h3", { text: "all " + models.length + " " + what + " outputs side by side" +
        (hasText(p.rows) ? " (highlighted: words no other column's outputs for this prompt use)" : "") }),
      PP.sideBySide(p.rows, "outputs", true, models)
    ]);
  };
  PP.views.model = function (name) {
    var d = (V.deviations || []).filter(function (x) { return x.model === name; })[0];
    if (!d) return false;
    var mode = d.mode;
    var nodes = [
      h("p", { text: (d.deviates ? "deviates from the rest" : "does not deviate from the rest") + " · " +
        d.significant_modes + " significant modes against " + d.against +
        (d.separated_from.length ? " · differs from " + d.separated_from.join(", ") : "") }),
    ];
    if (mode) {
      var list = { model: d.samples.model, rest: d.samples.rest }, names = V.names;
      V.names = Object.assign({}, names, { model: d.model, rest: "the rest" });
      nodes.push(h("h3", { text: "its strongest samples on its mode +" + mode.rank + " (eigenvalue " + fmt(mode.eigenvalue) +
        ", p " + fmt(mode.p_value, 2) + ") against the rest's on the same mode" }));
      nodes.push(PP.sideBySide(list, "samples", false, ["model", "rest"]));
      V.names = names;
    } else {
      nodes.push(h("p", { cls: "muted", text: "no significant mode on which " + d.model + " does more than the rest: no samples to show" }));
    }
    if (d.prompts.length) {
      nodes.push(h("h3", { text: "prompts of its comparison with the rest (click one for all models' outputs)" }));
      nodes.push(PP.table(["prompt", "share of the significant modes"], d.prompts.map(function (x) {
        return [V.prompts[x[0]].prompt, x[1] === null ? "–" : fmt(100 * x[1], 3) + "%"];
      }), d.prompts.map(function (x) { return { "data-pp-prompt": x[0] }; })));
    }
    PP.panel(d.model + " against the rest", nodes);
  };
})(window.PP);
