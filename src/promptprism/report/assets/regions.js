/* promptprism report: the Regions page's region view, on the shared components (report.js: PP.panel,
 * PP.table; the side-by-side columns of views.js). "#region=<r>": the region's mask over the pixel grid, each
 * generated set's CMS on it (interval, its rank among the set's regions) and the first images of every set
 * (real first) with everything outside the region dimmed. The heat map's pixels and the "per region" table's
 * rows open it.
 */
(function (PP) {
  "use strict";
  var h = PP.h, fmt = PP.fmt, V = PP.V;
  if (!V.labels || !V.shape) return;
  var R = PP.data.result || {};

  /* a canvas of the pixel grid: the region's pixels `inside`, the others `outside` (CSS colours) */
  function maskCanvas(r, inside, outside, id) {
    var hgt = V.shape[0], wid = V.shape[1];
    var cv = h("canvas", { width: wid, height: hgt, cls: "pp-mask", id: id || null, "aria-label": "mask of region " + r });
    var ctx = cv.getContext("2d");
    for (var y = 0; y < hgt; y++) for (var x = 0; x < wid; x++) {
      ctx.fillStyle = V.labels[y * wid + x] === r ? inside : outside;
      ctx.fillRect(x, y, 1, 1);
    }
    return cv;
  }
  /* the rank (1 = lowest CMS, the region that differs most) of region r among a set's regions */
  function rankOf(vals, r) {
    var v = vals[r];
    if (v === null || v === undefined) return "–";
    return 1 + vals.filter(function (x) { return x !== null && x !== undefined && x < v; }).length;
  }
  PP.views.region = function (id) {
    var r = +id, names = R.names || [], sizes = R.region_sizes || [];
    if (!(r >= 0 && r < sizes.length)) return false;
    var rows = names.map(function (n, k) {
      var vals = (R.region_cms || [])[k] || [];
      return [n, fmt(vals[r], 4), PP.ivText(((V.intervals || [])[k] || [])[r]), rankOf(vals, r) + " of " + vals.length];
    });
    var sets = Object.keys(V.samples || {});
    var cols = h("div", { cls: "pp-cols" }, sets.map(function (s) {
      return h("div", { "data-pp-col": s }, [h("h3", { text: s + " · first " + V.samples[s].length + " images" }),
        h("div", { cls: "pp-imgs" }, V.samples[s].map(function (t, i) {
          return h("figure", { cls: "pp-masked", "data-pp-sample": s + ":" + i }, [
            h("img", { src: V.thumbs[t], alt: s + " image " + i, loading: "lazy" }),
            maskCanvas(r, "rgba(0,0,0,0)", "rgba(20,24,32,0.6)")]);
        }))]);
    }));
    if (sets.length > 2) cols.style.gridTemplateColumns = "repeat(" + sets.length + ", minmax(0, 1fr))";
    PP.panel("Region " + r + " · " + (sizes[r] || 0).toLocaleString("en") + " pixels", [
      h("div", { cls: "pp-maskbox" }, [maskCanvas(r, "#c8641c", "#e9ecf1", "pp-region-mask")]),
      h("p", { cls: "muted small", text: "The region's pixels (orange) over the image grid. Lower CMS: the generated set differs more from the real images there; rank 1 = its lowest region." }),
      h("h3", { text: "each generated set on this region" }),
      PP.table(["generated set", "CMS (eq. 4)", "U-form and its interval", "rank among its regions"], rows, names.map(function (n) { return { "data-pp-group": n }; })),
      sets.length ? h("h3", { text: "images of every set, the region picked out (outside dimmed)" }) : null,
      sets.length ? cols : h("p", { cls: "muted", text: "no images in this page (the inputs were not given)" })
    ]);
  };
})(window.PP);
