(function () {
  "use strict";
  var root = document.documentElement;
  root.setAttribute("data-js", "ready");
  if (window.getComputedStyle(root).getPropertyValue("--shoal-css").trim() === "1") {
    root.setAttribute("data-css", "ready");
  }
  function each(list, f) { Array.prototype.forEach.call(list, f); }
  function rowsOf(el) {
    if (el.tBodies && el.tBodies[0]) { return el.tBodies[0].rows; }
    return el.querySelectorAll("[data-item]");
  }
  // Paging: a `table.paged` shows `data-page-size` of its matching rows at a time.
  var pagers = [];
  function paged(table) {
    var size = parseInt(table.getAttribute("data-page-size"), 10) || 100;
    var state = { table: table, size: size, page: 0 };
    var nav = document.createElement("nav");
    nav.className = "pager";
    var prev = document.createElement("button");
    prev.type = "button";
    prev.textContent = "\u2190 Previous";
    var next = document.createElement("button");
    next.type = "button";
    next.textContent = "Next \u2192";
    var info = document.createElement("span");
    nav.appendChild(prev);
    nav.appendChild(info);
    nav.appendChild(next);
    table.parentNode.insertBefore(nav, table.nextSibling);
    state.show = function () {
      var matching = Array.prototype.filter.call(rowsOf(table), function (r) {
        return r.getAttribute("data-match") !== "0";
      });
      var pages = Math.max(1, Math.ceil(matching.length / size));
      if (state.page >= pages) { state.page = pages - 1; }
      var from = state.page * size;
      each(rowsOf(table), function (r) { r.hidden = true; });
      matching.forEach(function (r, i) { r.hidden = i < from || i >= from + size; });
      info.textContent = " Page " + (state.page + 1) + " of " + pages + " (" + matching.length + " rows) ";
      prev.disabled = state.page === 0;
      next.disabled = state.page >= pages - 1;
      nav.hidden = pages < 2;
    };
    prev.addEventListener("click", function () { state.page -= 1; state.show(); });
    next.addEventListener("click", function () { state.page += 1; state.show(); });
    table.shoalPager = state;
    pagers.push(state);
    state.show();
  }
  function refresh(table) {
    if (table.shoalPager) { table.shoalPager.show(); return; }
    each(rowsOf(table), function (r) { r.hidden = r.getAttribute("data-match") === "0"; });
  }
  function key(row, i, numeric) {
    var c = row.cells[i];
    if (!c) { return numeric ? -Infinity : ""; }
    var v = c.getAttribute("data-v");
    var t = v !== null ? v : c.textContent;
    if (numeric) { var n = parseFloat(t); return isNaN(n) ? -Infinity : n; }
    return t.toLowerCase();
  }
  function sortBy(table, th, i) {
    var asc = th.getAttribute("aria-sort") !== "ascending";
    each(table.tHead.rows[0].cells, function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var numeric = th.getAttribute("data-type") === "num";
    var body = table.tBodies[0];
    var keyed = Array.prototype.map.call(body.rows, function (r, j) { return [key(r, i, numeric), j, r]; });
    keyed.sort(function (a, b) {
      if (a[0] < b[0]) { return asc ? -1 : 1; }
      if (a[0] > b[0]) { return asc ? 1 : -1; }
      return a[1] - b[1];
    });
    var frag = document.createDocumentFragment();
    keyed.forEach(function (k) { frag.appendChild(k[2]); });
    body.appendChild(frag);
    if (table.shoalPager) { table.shoalPager.page = 0; }
    refresh(table);
  }
  each(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies[0]) { return; }
    each(table.tHead.rows[0].cells, function (th, i) {
      th.tabIndex = 0;
      th.setAttribute("aria-sort", "none");
      th.addEventListener("click", function () { sortBy(table, th, i); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th, i); }
      });
    });
  });
  each(document.querySelectorAll("table.paged"), paged);
  // Filters: text, severity (`data-sev` on rows of findings tables, the letters of `data-s`
  // elsewhere) and family (a bit of `data-f`), over one or more tables or lists (`data-for`).
  function matches(r, text, level, fam) {
    if (level) {
      var sev = r.getAttribute("data-sev");
      var letters = r.getAttribute("data-s");
      var ok = sev !== null ? sev === level || sev.charAt(0) === level : (letters || "").indexOf(level.charAt(0)) >= 0;
      if (!ok) { return false; }
    }
    if (fam && (parseInt(r.getAttribute("data-f") || "0", 10) & fam) === 0) { return false; }
    return !text || r.textContent.toLowerCase().indexOf(text) >= 0;
  }
  function filter(box, targets) {
    var q = box.querySelector("input.q");
    var sev = box.querySelector("select.sev");
    var fam = box.querySelector("select.fam");
    var text = q ? q.value.trim().toLowerCase() : "";
    var level = sev ? sev.value : "";
    var bits = fam && fam.value ? parseInt(fam.value, 10) : 0;
    var shown = 0;
    var total = 0;
    targets.forEach(function (t) {
      each(rowsOf(t), function (r) {
        var ok = matches(r, text, level, bits);
        r.setAttribute("data-match", ok ? "1" : "0");
        total += 1;
        if (ok) { shown += 1; }
      });
      if (t.shoalPager) { t.shoalPager.page = 0; }
      refresh(t);
    });
    var out = box.querySelector(".shown");
    if (out) { out.textContent = shown + " of " + total + " shown"; }
  }
  each(document.querySelectorAll(".controls[data-for]"), function (box) {
    var targets = box.getAttribute("data-for").split(" ").map(function (id) {
      return document.getElementById(id);
    }).filter(function (t) { return t !== null; });
    if (targets.length === 0) { return; }
    var timer = null;
    var later = function () {
      if (timer !== null) { window.clearTimeout(timer); }
      timer = window.setTimeout(function () { timer = null; filter(box, targets); }, 150);
    };
    each(box.querySelectorAll("input, select"), function (el) {
      el.addEventListener("input", later);
      el.addEventListener("change", later);
    });
  });
  // When the page was laid out, in ms since navigation started (the overview benchmark reads it).
  void document.body.offsetHeight;
  root.setAttribute("data-layout-ms", String(Math.round(window.performance.now())));
}());
