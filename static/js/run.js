// The run page: draws the Plotly charts from json_script data and polls progress.json
// while the run is not final. No framework, no build step.
"use strict";

function readJSON(id) {
  var node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : null;
}

var PLOT_CONFIG = {responsive: true, displaylogo: false};

function drawThroughput() {
  var figure = readJSON("throughput-data");
  var select = document.getElementById("latency-metric");
  if (!figure || !select) return;
  var titles = {};
  figure.metrics.forEach(function (m) { titles[m.field] = m.title; });
  function draw() {
    var field = select.value;
    var traces = figure.traces.map(function (t) {
      return {
        type: "scatter", mode: "lines+markers", name: t.name,
        x: t.x[field], y: t.y, text: t.text,
        hovertemplate: "%{text}<br>%{x:.0f} ms, %{y:.0f} tok/s<extra>%{fullData.name}</extra>",
        marker: {size: 9, symbol: t.valid.map(function (v) { return v ? "circle" : "circle-open"; })}
      };
    });
    Plotly.react("throughput-chart", traces, {
      margin: {t: 10, r: 10}, legend: {orientation: "h", y: -0.25},
      xaxis: {title: {text: titles[field]}, rangemode: "tozero"},
      yaxis: {title: {text: "Output tokens/s"}, rangemode: "tozero"}
    }, PLOT_CONFIG);
  }
  select.addEventListener("change", draw);
  draw();
}

function drawSamples() {
  var select = document.getElementById("samples-point");
  if (!select) return;
  function draw() {
    fetch(select.value, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (figure) {
        var traces = [];
        figure.replicas.forEach(function (r) {
          var suffix = figure.replicas.length > 1 ? " r" + r.replica : "";
          traces.push({type: "scatter", mode: "lines", name: "waiting" + suffix, x: r.t, y: r.waiting});
          traces.push({type: "scatter", mode: "lines", name: "running" + suffix, x: r.t, y: r.running});
          traces.push({type: "scatter", mode: "lines", name: "KV use" + suffix, x: r.t, y: r.kv_usage,
                       yaxis: "y2", line: {dash: "dot"}});
        });
        Plotly.react("samples-chart", traces, {
          margin: {t: 10, r: 50}, legend: {orientation: "h", y: -0.25},
          xaxis: {title: {text: "Seconds since the point started"}},
          yaxis: {title: {text: "Requests"}, rangemode: "tozero"},
          yaxis2: {title: {text: "KV cache use"}, overlaying: "y", side: "right",
                   range: [0, 1], tickformat: ".0%"}
        }, PLOT_CONFIG);
      });
  }
  select.addEventListener("change", draw);
  draw();
}

var POLL_MS = 3000;

function pollProgress() {
  var status = document.getElementById("status");
  if (!status || status.dataset.final === "true") return;
  fetch(status.dataset.progressUrl, {credentials: "same-origin"})
    .then(function (r) { return r.json(); })
    .then(function (p) {
      // A new point or a final state changes the charts and the table: reload the page.
      if (p.final || String(p.points_done) !== status.dataset.pointsDone) {
        window.location.reload();
        return;
      }
      document.getElementById("run-state").textContent = p.state;
      document.getElementById("run-note").textContent = p.progress_note;
      document.getElementById("run-progress").value = p.progress;
      setTimeout(pollProgress, POLL_MS);
    })
    .catch(function () { setTimeout(pollProgress, POLL_MS * 2); });
}

function showPlan() {
  var plan = readJSON("plan-data");
  var pre = document.getElementById("plan-text");
  if (plan && pre) pre.textContent = JSON.stringify(plan, null, 2);
}

document.addEventListener("DOMContentLoaded", function () {
  drawThroughput();
  drawSamples();
  showPlan();
  setTimeout(pollProgress, POLL_MS);
});
