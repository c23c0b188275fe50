// Click a header of a table.sortable to sort its rows by that column (numbers as numbers); again to reverse.
"use strict";
(function () {
  function key(cell) {
    // A cell's data-key, where it has one, is what it sorts by (the matrix: PAR-2 under "solved 0.12").
    const text = (cell ? (cell.dataset.key !== undefined ? cell.dataset.key : cell.textContent) : "").trim();
    const n = Number(text.replace(/[,\s×%]/g, ""));
    return text !== "" && text !== "—" && !isNaN(n) ? [0, n] : [1, text.toLowerCase()];
  }
  function sortBy(table, col, th) {
    const body = table.tBodies[0];
    const down = th.getAttribute("aria-sort") === "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", down ? "descending" : "ascending");
    const rows = Array.from(body.rows);
    rows.sort(function (a, b) {
      const x = key(a.cells[col]), y = key(b.cells[col]);
      const c = x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0);
      return down ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function setUp() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      if (!table.tHead || !table.tBodies.length) { return; }
      Array.from(table.tHead.rows[0].cells).forEach(function (th, col) {
        th.classList.add("sorts");
        th.title = "sort by this column";
        th.addEventListener("click", function () { sortBy(table, col, th); });
      });
    });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", setUp); } else { setUp(); }
})();
