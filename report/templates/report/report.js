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
  // The pager under a paged table: Previous, "Page x of y", Next.
  function pagerFor(table) {
    var p = { nav: document.createElement("nav"), prev: document.createElement("button"),
      next: document.createElement("button"), info: document.createElement("span") };
    p.nav.className = "pager";
    p.prev.type = "button";
    p.prev.textContent = "\u2190 Previous";
    p.next.type = "button";
    p.next.textContent = "Next \u2192";
    p.nav.appendChild(p.prev);
    p.nav.appendChild(p.info);
    p.nav.appendChild(p.next);
    table.parentNode.insertBefore(p.nav, table.nextSibling);
    return p;
  }
  // Paging: a `table.paged` shows `data-page-size` of its matching rows at a time.
  var pagers = [];
  function paged(table) {
    var size = parseInt(table.getAttribute("data-page-size"), 10) || 100;
    var state = { table: table, size: size, page: 0 };
    var p = pagerFor(table);
    var nav = p.nav, prev = p.prev, next = p.next, info = p.info;
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
  // A table whose rows come from a JSON data block (`data-source`): the overview of a large batch,
  // where laying out 10,000 rows would take seconds. A row of data is [start URL, link, score,
  // score band, trend, errors, warnings, notices, pages, largest issue, severity letters, family
  // bits, unfinished]; text goes in with textContent, the link is one of the report's own.
  function dataTable(table) {
    var src = document.getElementById(table.getAttribute("data-source"));
    var all;
    try { all = JSON.parse(src.textContent); } catch (e) { return; }
    var size = parseInt(table.getAttribute("data-page-size"), 10) || 500;
    var st = { rows: all, shown: all, page: 0, keep: function () { return true; } };
    var columns = [0, 2, 4, 5, 6, 7, 8, 9];
    var body = table.tBodies[0];
    var p = pagerFor(table);
    var prev = p.prev, next = p.next, info = p.info;
    function td(tr, text, cls) {
      var c = document.createElement("td");
      if (cls) { c.className = cls; }
      c.textContent = text;
      tr.appendChild(c);
      return c;
    }
    st.render = function () {
      var pages = Math.max(1, Math.ceil(st.shown.length / size));
      if (st.page >= pages) { st.page = pages - 1; }
      var frag = document.createDocumentFragment();
      st.shown.slice(st.page * size, (st.page + 1) * size).forEach(function (r) {
        var tr = document.createElement("tr");
        tr.setAttribute("data-s", r[10]);
        tr.setAttribute("data-f", String(r[11]));
        var first = td(tr, r[1] ? "" : r[0]);
        if (r[1]) {
          var a = document.createElement("a");
          a.setAttribute("href", r[1]);
          a.textContent = r[0];
          first.appendChild(a);
        }
        if (r[12]) {
          var small = document.createElement("small");
          small.textContent = " (unfinished)";
          first.appendChild(small);
        }
        td(tr, r[2], r[3]);
        [r[4], r[5], r[6], r[7], r[8], r[9]].forEach(function (v) { td(tr, String(v)); });
        frag.appendChild(tr);
      });
      body.textContent = "";
      body.appendChild(frag);
      info.textContent = " Page " + (st.page + 1) + " of " + pages + " (" + st.shown.length + " sites) ";
      prev.disabled = st.page === 0;
      next.disabled = st.page >= pages - 1;
    };
    st.filter = function (keep) {
      st.keep = keep;
      st.shown = st.rows.filter(keep);
      st.page = 0;
      st.render();
      return st.shown.length;
    };
    prev.addEventListener("click", function () { st.page -= 1; st.render(); });
    next.addEventListener("click", function () { st.page += 1; st.render(); });
    each(table.tHead.rows[0].cells, function (th, i) {
      th.tabIndex = 0;
      th.setAttribute("aria-sort", "none");
      var numeric = th.getAttribute("data-type") === "num";
      var sort = function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        each(table.tHead.rows[0].cells, function (h) { h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var k = function (r) {
          var v = r[columns[i]];
          if (numeric) { var n = parseFloat(v); return isNaN(n) ? -Infinity : n; }
          return String(v).toLowerCase();
        };
        var keyed = st.rows.map(function (r, j) { return [k(r), j, r]; });
        keyed.sort(function (a, b) {
          if (a[0] < b[0]) { return asc ? -1 : 1; }
          if (a[0] > b[0]) { return asc ? 1 : -1; }
          return a[1] - b[1];
        });
        st.rows = keyed.map(function (x) { return x[2]; });
        st.filter(st.keep);
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
    table.shoalData = st;
    st.render();
  }
  each(document.querySelectorAll("table[data-source]"), dataTable);
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
      if (t.shoalData) {
        total += t.shoalData.rows.length;
        shown += t.shoalData.filter(function (r) {
          if (level && r[10].indexOf(level.charAt(0)) < 0) { return false; }
          if (bits && (r[11] & bits) === 0) { return false; }
          return !text || (r[0] + " " + r[9]).toLowerCase().indexOf(text) >= 0;
        });
        return;
      }
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
