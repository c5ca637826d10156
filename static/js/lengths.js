// The run page's request-length histograms (templates/runs/_lengths.html): a trace or
// length-log workload's file against what the run sent, from judgement.charts.lengths_figure.
// Loaded after Plotly (both deferred, in document order); the figure data decides every label.
"use strict";

(function () {
  var COLORS = {source: "#7f7f7f", sent: "#1f77b4"};

  function bars(panel, side, name) {
    return {
      type: "bar", name: name, x: panel.x, y: panel[side], width: panel.width,
      customdata: panel.bins, opacity: 0.6, marker: {color: COLORS[side]},
      hovertemplate: "%{customdata} tokens: %{y:.1f}%<extra>%{fullData.name}</extra>"
    };
  }

  function draw() {
    var node = document.getElementById("lengths-data");
    if (!node || typeof Plotly === "undefined") return;
    var figure = JSON.parse(node.textContent);
    figure.panels.forEach(function (panel, i) {
      var traces = [bars(panel, "source", figure.source_label),
                    bars(panel, "sent", figure.sent_label)];
      Plotly.newPlot("lengths-chart-" + i, traces, {
        barmode: "overlay", height: 280, margin: {t: 10, r: 10},
        legend: {orientation: "h", y: -0.35},
        xaxis: {title: {text: panel.title}},
        yaxis: {title: {text: "% of requests"}, rangemode: "tozero"}
      }, {responsive: true, displaylogo: false});
    });
  }

  document.addEventListener("DOMContentLoaded", draw);
})();
