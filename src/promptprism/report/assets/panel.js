/* promptprism report: the side panel (PP.panel(title, nodes), PP.closePanel()), on report.js. */
(function (PP) {
  "use strict";
  var h = PP.h, PANEL = PP.PANEL;
  /* A dialog (not modal: the page stays usable). Opening it moves the focus to its heading, so that Tab goes
   * on to its controls; closing it (Esc, ×) gives the focus back to what opened it. A view drawn again while
   * the focus is elsewhere (typing in the search box) leaves the focus where it is. */
  var panel, opener = null;
  function focusNow() { var a = document.activeElement; return a && a !== document.body ? a : null; }
  PP.panel = function (title, nodes) {
    if (!panel) {
      panel = h("aside", { cls: "pp-panel", id: "pp-panel", role: "dialog", "aria-labelledby": "pp-panel-title", hidden: true });
      document.body.appendChild(panel);
    }
    var was = !panel.hidden, active = focusNow(), inside = !!active && panel.contains(active);
    var heading = panel.querySelector("#pp-panel-title");
    /* a new view asked for from the page (Enter on another row while open) takes the focus too */
    var asked = !!active && !inside && active.hasAttribute("data-pp-key") && (!heading || heading.textContent !== title);
    if (!was || asked) opener = inside ? opener : active;
    panel.textContent = "";
    panel.appendChild(h("button", { type: "button", cls: "pp-close", title: "close (Esc)", "aria-label": "close", text: "×",
      onclick: function () { PP.set(PANEL); } }));
    heading = h("h2", { id: "pp-panel-title", text: title, dir: "auto", tabindex: "-1" });
    panel.appendChild(heading);
    nodes.forEach(function (n) { if (n) panel.appendChild(n); });
    if (PP.focusable) PP.focusable(panel);
    panel.hidden = false;
    panel.scrollTop = 0;
    if (!was || inside || asked || !focusNow()) heading.focus({ preventScroll: true });
  };
  /* the opener, or (drawn again since) the element of the same prompt, mode, ... in the page */
  function openerNow() {
    if (!opener || document.contains(opener)) return opener;
    var keys = ["data-pp-prompt", "data-pp-mode", "data-pp-facet", "data-pp-model", "data-pp-region", "data-pp-cluster", "data-pp-attr"];
    for (var i = 0; i < keys.length; i++) {
      var v = opener.getAttribute(keys[i]);
      if (v !== null) return document.querySelector("main [" + keys[i] + '="' + CSS.escape(v) + '"][data-pp-key]');
    }
    return null;
  }
  PP.closePanel = function () {
    if (!panel || panel.hidden) return;
    var active = focusNow(), back = openerNow();
    panel.hidden = true;
    opener = null;
    if (back && (!active || panel.contains(active))) back.focus({ preventScroll: false });
  };
})(window.PP);
