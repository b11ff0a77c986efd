// prosecutor's HTML report: sortable tables, line selection, and the propagation path of the
// selected line drawn as SVG. Program text only ever reaches the page through textContent.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var dataEl = document.getElementById("prosecutor-data");
  var data = dataEl ? JSON.parse(dataEl.textContent) : {};

  function cellValue(row, i) {
    var c = row.cells[i];
    if (!c) return "";
    return c.hasAttribute("data-v") ? c.getAttribute("data-v") : c.textContent.trim();
  }

  function sortBy(table, th, i) {
    var numeric = th.classList.contains("num");
    var asc = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, i), y = cellValue(b, i), d;
      if (numeric) {
        d = (parseFloat(x) || 0) - (parseFloat(y) || 0);
      } else {
        d = x.localeCompare(y, undefined, { numeric: true });
      }
      return asc ? d : -d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  function makeSortable(table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.title = "sort by " + th.textContent;
      th.addEventListener("click", function () { sortBy(table, th, i); });
    });
  }

  function el(name, attrs, text) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function clip(s, n) {
    s = String(s).replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n - 1) + "\u2026" : s;
  }

  function fmt(p) {
    if (p === 0) return "0";
    if (p >= 0.001) return p.toFixed(3);
    return p.toExponential(1);
  }

  // fill of a vertex by its belief: white (0) to red (1)
  function tint(p) {
    var t = Math.sqrt(Math.max(0, Math.min(1, p)));
    var r = Math.round(255 - 20 * t), g = Math.round(255 - 170 * t), b = Math.round(255 - 165 * t);
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  function vertexHead(v) {
    var head = v.label + " \u00b7 " + v.file + ":" + v.line + " \u00b7 belief " + fmt(v.belief);
    if (v.observed === "incorrect") head += " \u00b7 observed wrong: the failure";
    return head;
  }

  function drawPath(path) {
    var W = 560, H = 44, GAP = 24;
    var n = path.vertices.length;
    var svg = el("svg", { width: W, height: n * (H + GAP) - GAP + 2, viewBox: "0 0 " + W + " " + (n * (H + GAP) - GAP + 2), role: "img" });
    svg.appendChild(el("defs", {})).appendChild(el("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto" }))
      .appendChild(el("path", { d: "M0,0 L8,4 L0,8 z", fill: "#8c959f" }));
    path.vertices.forEach(function (v, i) {
      var y = i * (H + GAP) + 1;
      var g = el("g", { "class": "vertex " + v.kind, "data-observed": v.observed });
      g.appendChild(el("rect", { x: 1, y: y, width: W - 2, height: H, rx: 6, fill: tint(v.belief), stroke: v.observed === "incorrect" ? "#cf222e" : "#afb8c1", "stroke-width": v.observed === "incorrect" ? 2 : 1 }));
      g.appendChild(el("rect", { x: 1, y: y, width: 6, height: H, rx: 3, fill: v.kind === "statement" ? "#0969da" : "#8250df" }));
      g.appendChild(el("text", { x: 14, y: y + 16, "class": "head" }, vertexHead(v)));
      g.appendChild(el("text", { x: 14, y: y + 34, "class": "code" }, clip(v.text, 72)));
      var t = el("title", {}, v.name + (v.test ? "\ntest " + v.test : "") + "\n" + v.text);
      g.appendChild(t);
      svg.appendChild(g);
      if (i + 1 < n) {
        var x = 40, y1 = y + H, y2 = y + H + GAP;
        svg.appendChild(el("line", { x1: x, y1: y1 + 1, x2: x, y2: y2 - 2, stroke: "#8c959f", "stroke-width": 1.5, "marker-end": "url(#arrow)" }));
        var label = path.rules[i] || "";
        svg.appendChild(el("text", { x: x + 10, y: y1 + 16, "class": "rule" }, label));
      }
    });
    return svg;
  }

  function showPath(key) {
    var box = document.getElementById("path");
    if (!box) return;
    while (box.firstChild) box.removeChild(box.firstChild);
    var row = document.querySelector('#ranking tbody tr[data-key="' + key + '"]');
    var loc = row ? row.getAttribute("data-loc") : "";
    var title = document.createElement("p");
    title.className = "title";
    var path = (data.paths || {})[key];
    title.appendChild(document.createTextNode("Propagation path of "));
    title.appendChild(document.createElement("b")).textContent = loc;
    box.appendChild(title);
    if (!path) {
      var none = document.createElement("p");
      none.className = "none";
      none.textContent = Number(key) >= (data.top || 0)
        ? "Paths are computed for the top " + (data.top || 0) + " entries only."
        : "No path from this line to the failure in the EPG (its values reach the failure through no vertex the model believes wrong).";
      box.appendChild(none);
      return;
    }
    title.appendChild(document.createTextNode(
      " to the failure (" + path.model + " model, product of beliefs " + fmt(path.probability) + ")" +
      (path.elided ? ", " + path.elided + " vertices in the middle not shown" : "")));
    box.appendChild(drawPath(path));
  }

  function select(key) {
    var prev = document.querySelectorAll(".selected");
    Array.prototype.forEach.call(prev, function (e) { e.classList.remove("selected"); });
    var row = document.querySelector('#ranking tbody tr[data-key="' + key + '"]');
    if (!row) return;
    row.classList.add("selected");
    var line = document.getElementById(row.getAttribute("data-src"));
    if (line) line.classList.add("selected");
    document.body.setAttribute("data-selected", key);
    showPath(key);
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), makeSortable);
  var ranking = document.getElementById("ranking");
  if (ranking) {
    ranking.tBodies[0].addEventListener("click", function (ev) {
      var row = ev.target.closest("tr");
      if (row) select(row.getAttribute("data-key"));
    });
    select("0");
  }
  document.body.setAttribute("data-ready", "1");
})();
