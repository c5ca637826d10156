// The run page: draws the Plotly charts from json_script data and polls progress.json
// while the run is not final. No framework, no build step.
"use strict";

function readJSON(id) {
  var node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : null;
}

var PLOT_CONFIG = {responsive: true, displaylogo: false};

// The judgement layer's additions, in the same axes: the operating point (a star) and
// external references (dated dotted lines). The Pareto frontier has its own chart.
function overlayTraces(overlay, field) {
  if (!overlay || !overlay.selected.keys.length) return [];
  return [{type: "scatter", mode: "markers", name: "Operating point",
           x: overlay.selected.x[field], y: overlay.selected.y, text: overlay.selected.keys,
           hovertemplate: "%{text}<br>%{y:.0f} tok/s<extra>operating point</extra>",
           marker: {symbol: "star", size: 18, color: "#d62728",
                    line: {color: "#000", width: 1}}}];
}

function referenceShapes(overlay) {
  var shapes = [], annotations = [];
  if (!overlay) return {shapes: shapes, annotations: annotations};
  overlay.references.forEach(function (r) {
    shapes.push({type: "line", xref: "paper", x0: 0, x1: 1, yref: "y", y0: r.y, y1: r.y,
                 line: {dash: "dot", color: "#8c564b", width: 1.5}});
    annotations.push({xref: "paper", x: 1, xanchor: "right", yref: "y", y: r.y,
                      yanchor: "bottom", text: r.label, showarrow: false,
                      font: {size: 10, color: "#8c564b"}});
  });
  return {shapes: shapes, annotations: annotations};
}

function drawThroughput() {
  var figure = readJSON("throughput-data");
  var overlay = readJSON("judgement-overlay");
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
    traces = traces.concat(overlayTraces(overlay, field));
    var refs = referenceShapes(overlay);
    Plotly.react("throughput-chart", traces, {
      margin: {t: 10, r: 10}, legend: {orientation: "h", y: -0.25},
      shapes: refs.shapes, annotations: refs.annotations,
      xaxis: {title: {text: titles[field]}, rangemode: "tozero"},
      yaxis: {title: {text: "Output tokens/s"}, rangemode: "tozero"}
    }, PLOT_CONFIG);
  }
  select.addEventListener("change", draw);
  draw();
}

// Output tokens/s per GPU against tokens/s per user: the frontier joined, the points it beats
// faint. Titles and points come from judgement.charts.pareto_figure.
function drawPareto() {
  var figure = readJSON("pareto-data");
  if (!figure || !document.getElementById("pareto-chart")) return;
  var hover = "%{text}<br>%{x:.1f} tok/s per user, %{y:.0f} tok/s per GPU<extra>%{fullData.name}</extra>";
  var traces = [
    {type: "scatter", mode: "markers", name: "Beaten by the frontier",
     x: figure.others.x, y: figure.others.y, text: figure.others.text, hovertemplate: hover,
     marker: {size: 8, color: "#1f77b4", opacity: 0.3}},
    {type: "scatter", mode: "lines+markers", name: "Pareto frontier",
     x: figure.frontier.x, y: figure.frontier.y, text: figure.frontier.text, hovertemplate: hover,
     marker: {size: 10, color: "#1f77b4"}, line: {color: "#1f77b4"}}
  ];
  Plotly.react("pareto-chart", traces, {
    margin: {t: 10, r: 10}, legend: {orientation: "h", y: -0.25},
    xaxis: {title: {text: figure.x_title}, rangemode: "tozero"},
    yaxis: {title: {text: figure.y_title}, rangemode: "tozero"}
  }, PLOT_CONFIG);
}

function drawSamples() {
  var select = document.getElementById("samples-point");
  if (!select) return;
  function draw() {
    fetch(select.value, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (figure) {
        var traces = [];
        // Gauges hold until the next sample: drawn as steps (judgement.charts.GAUGE_LINE_SHAPE).
        var shape = figure.line_shape;
        figure.replicas.forEach(function (r) {
          var suffix = figure.replicas.length > 1 ? " r" + r.replica : "";
          traces.push({type: "scatter", mode: "lines", name: "waiting" + suffix, x: r.t, y: r.waiting,
                       line: {shape: shape}});
          traces.push({type: "scatter", mode: "lines", name: "running" + suffix, x: r.t, y: r.running,
                       line: {shape: shape}});
          traces.push({type: "scatter", mode: "lines", name: "KV use" + suffix, x: r.t, y: r.kv_usage,
                       yaxis: "y2", line: {dash: "dot", shape: shape}});
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

// GPU telemetry per point beside the queue chart, from the same samples.json: utilization and
// power per GPU, or a CPU engine's cores busy (labelled CPU: it is not a GPU). Readings are
// samples of continuous quantities, so they are joined by straight lines, not steps.
function telemetryTraces(devices) {
  var traces = [];
  devices.forEach(function (d) {
    if (d.kind === "cpu") {
      var suffix = devices.length > 1 ? " r" + d.replica : "";
      traces.push({type: "scatter", mode: "lines", name: "CPU cores busy" + suffix,
                   x: d.t, y: d.cores_busy});
      return;
    }
    traces.push({type: "scatter", mode: "lines", name: "GPU " + d.gpu + " utilization %",
                 x: d.t, y: d.utilization_pct});
    traces.push({type: "scatter", mode: "lines", name: "GPU " + d.gpu + " power W",
                 x: d.t, y: d.power_w, yaxis: "y2", line: {dash: "dot"}});
  });
  return traces;
}

function drawTelemetry() {
  var select = document.getElementById("telemetry-point");
  if (!select) return;
  if (!select.options.length) {
    // No point of the run has readings: say so instead of an empty chart.
    document.getElementById("telemetry-controls").hidden = true;
    document.getElementById("telemetry-none").hidden = false;
    return;
  }
  function draw() {
    fetch(select.value, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (figure) {
        var devices = figure.telemetry.devices;
        var cpuOnly = devices.every(function (d) { return d.kind === "cpu"; });
        var layout = {
          margin: {t: 10, r: 50}, legend: {orientation: "h", y: -0.25},
          xaxis: {title: {text: "Seconds since the point started"}},
          yaxis: cpuOnly ? {title: {text: "CPU cores busy (CPU engine)"}, rangemode: "tozero"}
                         : {title: {text: "GPU utilization %"}, range: [0, 100]}
        };
        if (!cpuOnly) {
          layout.yaxis2 = {title: {text: "Power W"}, overlaying: "y", side: "right",
                           rangemode: "tozero"};
        }
        Plotly.react("telemetry-chart", telemetryTraces(devices), layout, PLOT_CONFIG);
      });
  }
  select.addEventListener("change", draw);
  // The queue chart's point is the one to look at beside it: follow it when it has readings.
  var queueSelect = document.getElementById("samples-point");
  if (queueSelect) {
    queueSelect.addEventListener("change", function () {
      var match = Array.prototype.some.call(select.options, function (o) {
        return o.value === queueSelect.value;
      });
      if (match) { select.value = queueSelect.value; draw(); }
    });
  }
  draw();
}

// The request timeline: one lane per request, a trace per phase (each lane's segment at its own
// height, lanes apart by nulls, so thousands of lanes are four SVG paths), the engine's waiting
// and running counts beneath on the same clock. Words and data from judgement.request_timeline;
// static/js/report.js draws a report's the same way.
var TIMELINE_PHASES = [
  ["waiting", "due", "sent", "#a0a4ab"],
  ["in_flight", "sent", "first_token", "#d62728"],
  ["streaming", "first_token", "last_token", "#2ca02c"],
  ["failed", "sent", "ended", "#444444"]
];

function laneTraces(lanes, names, requestWord) {
  var count = lanes.due.length;
  var width = Math.max(1, Math.min(6, 400 / Math.max(count, 1)));
  return TIMELINE_PHASES.map(function (phase) {
    var from = lanes[phase[1]], to = lanes[phase[2]];
    var x = [], y = [], text = [];
    for (var i = 0; i < count; i++) {
      if (from[i] === null || to[i] === null) continue;
      var label = requestWord + " " + lanes.index[i] +
        (lanes.replica[i] ? " (replica " + lanes.replica[i] + ")" : "");
      x.push(from[i], to[i], null); y.push(i, i, null); text.push(label, label, null);
    }
    return {type: "scatter", mode: "lines", name: names[phase[0]], x: x, y: y, text: text,
            hovertemplate: "%{text}: %{x:.3f} s<extra>%{fullData.name}</extra>",
            line: {color: phase[3], width: width}};
  });
}

function countTraces(queue, titles) {
  var traces = [];
  queue.replicas.forEach(function (r) {
    var suffix = queue.replicas.length > 1 ? " r" + r.replica : "";
    traces.push({type: "scatter", mode: "lines", name: titles.waiting + suffix, x: r.t,
                 y: r.waiting, yaxis: "y2", line: {shape: queue.line_shape, color: "#1f77b4"}});
    traces.push({type: "scatter", mode: "lines", name: titles.running + suffix, x: r.t,
                 y: r.running, yaxis: "y2", line: {shape: queue.line_shape, color: "#ff7f0e"}});
  });
  return traces;
}

function timelineLayout(titles) {
  return {
    margin: {t: 10, r: 10}, legend: {orientation: "h", y: -0.12},
    xaxis: {title: {text: titles.time}, anchor: "y2"},
    yaxis: {title: {text: titles.lanes}, domain: [0.34, 1], autorange: "reversed",
            showticklabels: false, zeroline: false},
    yaxis2: {title: {text: titles.counts}, domain: [0, 0.26], rangemode: "tozero"}
  };
}

function drawTimeline() {
  var select = document.getElementById("timeline-point");
  if (!select) return;
  function draw() {
    fetch(select.value, {credentials: "same-origin"})
      .then(function (r) { return r.json(); })
      .then(function (figure) {
        var traces = laneTraces(figure.lanes, figure.phase_names, figure.titles.request)
          .concat(countTraces(figure.queue, figure.titles));
        document.getElementById("timeline-drawn").textContent = figure.drawn;
        document.getElementById("timeline-phases").textContent = figure.phases;
        Plotly.react("timeline-chart", traces, timelineLayout(figure.titles), PLOT_CONFIG);
      });
  }
  select.addEventListener("change", draw);
  // The queue chart's point is the one to look at: follow it.
  var queueSelect = document.getElementById("samples-point");
  if (queueSelect) {
    queueSelect.addEventListener("change", function () {
      var chosen = queueSelect.options[queueSelect.selectedIndex].dataset.point;
      Array.prototype.forEach.call(select.options, function (o) {
        if (o.dataset.point === chosen) { select.value = o.value; draw(); }
      });
    });
  }
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
      // progress.json reaps a run whose worker died, so such a run is usually final above;
      // one whose heartbeat went stale between the reap and the read says so here.
      document.getElementById("run-state").textContent = p.worker_lost ? "worker lost" : p.state;
      document.getElementById("run-note").textContent =
        p.worker_lost ? "last heartbeat " + p.heartbeat_at : p.progress_note;
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
  drawPareto();
  drawSamples();
  drawTelemetry();
  drawTimeline();
  showPlan();
  setTimeout(pollProgress, POLL_MS);
});
