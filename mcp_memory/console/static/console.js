// Progressive enhancement only: every page works without this file. It draws the overview's
// charts from the JSON block next to their tables (the tables stay, as the fallback and for
// screen readers) and adds "select all" to tables of checkboxes.
"use strict";

function drawCharts() {
  const data = document.getElementById("chart-data");
  if (!data || typeof window.Chart === "undefined") return;
  const charts = JSON.parse(data.textContent);
  const palette = ["#3366aa", "#dd7733", "#339966", "#aa3355", "#7755aa", "#998833", "#33aaaa", "#666666"];
  for (const figure of document.querySelectorAll("figure[data-chart]")) {
    const spec = charts[figure.dataset.chart];
    if (!spec || spec.values.length === 0) continue;
    const holder = document.createElement("div");
    holder.className = "canvas-holder";
    const canvas = document.createElement("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", figure.querySelector("figcaption").textContent + " (the table below has the numbers)");
    holder.appendChild(canvas);
    figure.insertBefore(holder, figure.querySelector(".table-wrap"));
    const round = spec.type === "doughnut";
    new window.Chart(canvas, {
      type: spec.type,
      data: {labels: spec.labels, datasets: [{label: spec.label, data: spec.values,
        backgroundColor: round ? palette.slice(0, spec.values.length) : palette[0]}]},
      options: {responsive: true, maintainAspectRatio: false, animation: false,
        indexAxis: spec.horizontal ? "y" : "x",
        plugins: {legend: {display: round}},
        scales: round ? {} : {y: {beginAtZero: true, ticks: {precision: 0}}}},
    });
    // The numbers stay one click away (and for screen readers, the canvas has a label).
    const table = figure.querySelector(".table-wrap");
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "Table";
    details.append(summary);
    figure.replaceChild(details, table);
    details.append(table);
    figure.classList.add("drawn");
  }
}

function selectAll() {
  for (const table of document.querySelectorAll("table")) {
    const boxes = table.querySelectorAll("tbody input[type=checkbox]");
    const head = table.querySelector("thead th");
    if (boxes.length < 2 || !head) continue;
    const all = document.createElement("input");
    all.type = "checkbox";
    all.setAttribute("aria-label", "select all");
    all.addEventListener("change", () => boxes.forEach((b) => { b.checked = all.checked; }));
    head.replaceChildren(all);
  }
}

window.addEventListener("DOMContentLoaded", () => { selectAll(); });
window.addEventListener("load", () => { drawCharts(); });
