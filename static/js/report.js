// The customer report: draws its charts from the json_script block "report-figures".
// No framework, no build step; every number comes from the page's own data.
"use strict";

(function () {
  // The Print button: a listener here, since the Content-Security-Policy blocks inline handlers.
  document.addEventListener("DOMContentLoaded", function () {
    var button = document.getElementById("print-report");
    if (button) button.addEventListener("click", function () { window.print(); });
  });

  var PLOT_CONFIG = {responsive: true, displaylogo: false, displayModeBar: false};
  // The page's own fonts, so Korean axis titles and legends have glyphs.
  var FONT = {family: 'system-ui, "Segoe UI", "Apple SD Gothic Neo", "Noto Sans KR", "Malgun Gothic", "NanumGothic", sans-serif'};

  function figures() {
    var node = document.getElementById("report-figures");
    return node ? JSON.parse(node.textContent) : {};
  }

  function drawCurve(fig, labels) {
    if (!fig || !document.getElementById("curve-chart")) return null;
    var traces = fig.traces.map(function (t) {
      return {
        type: "scatter", mode: "lines+markers", name: t.name, x: t.x, y: t.y,
        hovertemplate: "%{x:.1f} s, %{y:,.0f} tok/s<extra>%{fullData.name}</extra>",
        marker: {size: 8, symbol: t.valid.map(function (v) { return v ? "circle" : "circle-open"; })}
      };
    });
    if (fig.selected) {
      traces.push({
        type: "scatter", mode: "markers", name: labels.selected,
        x: [fig.selected.x], y: [fig.selected.y],
        marker: {size: 18, symbol: "star", color: "#d62728", line: {width: 1, color: "#000"}}
      });
    }
    return Plotly.newPlot("curve-chart", traces, {
      font: FONT, margin: {t: 10, r: 10}, legend: {orientation: "h", y: -0.25},
      xaxis: {title: {text: labels.latency}, rangemode: "tozero"},
      yaxis: {title: {text: labels.throughput}, rangemode: "tozero", tickformat: ",.0f"}
    }, PLOT_CONFIG);
  }

  function drawQueue(side, index, labels) {
    var id = "queue-chart-" + index;
    if (!document.getElementById(id)) return null;
    var traces = [];
    // Gauges hold until the next sample: drawn as steps (judgement.charts.GAUGE_LINE_SHAPE).
    var shape = side.line_shape || "linear";
    side.replicas.forEach(function (r) {
      var suffix = side.replicas.length > 1 ? " r" + r.replica : "";
      traces.push({type: "scatter", mode: "lines", name: labels.waiting + suffix, x: r.t, y: r.waiting,
                   line: {shape: shape}});
      traces.push({type: "scatter", mode: "lines", name: labels.running + suffix, x: r.t, y: r.running,
                   line: {shape: shape}});
      traces.push({type: "scatter", mode: "lines", name: labels.kv + suffix, x: r.t, y: r.kv_usage,
                   yaxis: "y2", line: {dash: "dot", shape: shape}});
    });
    return Plotly.newPlot(id, traces, {
      font: FONT, margin: {t: 10, r: 50}, legend: {orientation: "h", y: -0.3},
      xaxis: {title: {text: labels.time}},
      yaxis: {title: {text: labels.requests}, rangemode: "tozero"},
      yaxis2: {title: {text: labels.kv}, overlaying: "y", side: "right", range: [0, 1], tickformat: ".0%"}
    }, PLOT_CONFIG);
  }

  // A side's request timeline: a trace per phase, each lane's segment at its own height and
  // lanes apart by nulls; the engine's counts beneath are the side's queue samples, on the
  // same clock. Drawn as static/js/run.js draws the run page's.
  var PHASES = [
    ["waiting", "due", "sent", "#a0a4ab"],
    ["in_flight", "sent", "first_token", "#d62728"],
    ["streaming", "first_token", "last_token", "#2ca02c"],
    ["failed", "sent", "ended", "#444444"]
  ];

  function drawTimeline(lanes, queue, index, labels) {
    var id = "timeline-chart-" + index;
    if (!lanes || !document.getElementById(id)) return null;
    var count = lanes.due.length;
    var width = Math.max(1, Math.min(6, 300 / Math.max(count, 1)));
    var traces = PHASES.map(function (phase) {
      var from = lanes[phase[1]], to = lanes[phase[2]];
      var x = [], y = [], text = [];
      for (var i = 0; i < count; i++) {
        if (from[i] === null || to[i] === null) continue;
        var label = labels.request + " " + lanes.index[i];
        x.push(from[i], to[i], null); y.push(i, i, null); text.push(label, label, null);
      }
      return {type: "scatter", mode: "lines", name: labels["phase_" + phase[0]], x: x, y: y,
              text: text, hovertemplate: "%{text}: %{x:.3f} s<extra>%{fullData.name}</extra>",
              line: {color: phase[3], width: width}};
    });
    (queue ? queue.replicas : []).forEach(function (r) {
      var suffix = queue.replicas.length > 1 ? " r" + r.replica : "";
      var shape = queue.line_shape || "linear";
      traces.push({type: "scatter", mode: "lines", name: labels.waiting + suffix, x: r.t,
                   y: r.waiting, yaxis: "y2", line: {shape: shape, color: "#1f77b4"}});
      traces.push({type: "scatter", mode: "lines", name: labels.running + suffix, x: r.t,
                   y: r.running, yaxis: "y2", line: {shape: shape, color: "#ff7f0e"}});
    });
    return Plotly.newPlot(id, traces, {
      font: FONT, margin: {t: 10, r: 10}, legend: {orientation: "h", y: -0.2},
      xaxis: {title: {text: labels.time}, anchor: "y2"},
      yaxis: {title: {text: labels.due_order}, domain: [0.38, 1], autorange: "reversed",
              showticklabels: false, zeroline: false},
      yaxis2: {title: {text: labels.engine_counts}, domain: [0, 0.28], rangemode: "tozero"}
    }, PLOT_CONFIG);
  }

  function drawScaling(fig, labels) {
    if (!fig || !document.getElementById("scaling-chart")) return null;
    var names = fig.replicas.map(function (r) { return labels.replica + " " + r; });
    return Plotly.newPlot("scaling-chart", [
      {type: "bar", name: labels.throughput, x: names, y: fig.throughput},
      {type: "scatter", mode: "lines", name: labels.reference, x: names,
       y: names.map(function () { return fig.reference; }), line: {dash: "dash"}}
    ], {
      font: FONT, margin: {t: 10, r: 10}, legend: {orientation: "h", y: -0.3},
      yaxis: {title: {text: labels.throughput}, rangemode: "tozero", tickformat: ",.0f"}
    }, PLOT_CONFIG);
  }

  function drawAll() {
    var figs = figures();
    var labels = figs.labels || {};
    var drawing = [drawCurve(figs.curve, labels), drawScaling(figs.scaling, labels)];
    (figs.queue || []).forEach(function (side, i) { drawing.push(drawQueue(side, i, labels)); });
    (figs.timeline || []).forEach(function (lanes, i) {
      drawing.push(drawTimeline(lanes, (figs.queue || [])[i], i, labels));
    });
    drawing = drawing.filter(function (p) { return p; });
    Promise.all(drawing).then(function () {
      document.body.setAttribute("data-charts-drawn", String(drawing.length));
    });
  }

  document.addEventListener("DOMContentLoaded", drawAll);
})();
