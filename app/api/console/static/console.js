// spamfilter console: draws the charts from data-chart attributes (uPlot) and reads an
// uploaded message into the scan form. Served from /ui/static under default-src 'self'.
(function () {
  "use strict";
  var palette = ["#1f7a4d", "#9a6700", "#b3261e", "#555555", "#2456a6", "#7b3fa0", "#0f7c8c", "#c2571a"];

  function draw(figure) {
    var chart = JSON.parse(figure.getAttribute("data-chart"));
    if (typeof uPlot === "undefined" || !chart.x.length) { return; }
    var series = [{}];
    var data = [chart.x];
    chart.series.forEach(function (s, i) {
      series.push({ label: s.label, stroke: palette[i % palette.length], width: 2, spanGaps: false });
      data.push(s.values);
    });
    var width = Math.max(Math.min(figure.clientWidth - 24, 1050), 260);
    var opts = { width: width, height: 220, series: series,
      axes: [{}, { label: chart.unit, size: 60 }], scales: { x: { time: true } } };
    var plot = new uPlot(opts, data, figure);
    window.addEventListener("resize", function () {
      plot.setSize({ width: Math.max(Math.min(figure.clientWidth - 24, 1050), 260), height: 220 });
    });
  }

  function upload(input) {
    input.addEventListener("change", function () {
      var file = input.files && input.files[0];
      if (!file) { return; }
      var reader = new FileReader();
      reader.onload = function () {
        var bytes = new Uint8Array(reader.result);
        var text = "";
        for (var i = 0; i < bytes.length; i += 8192) {
          text += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
        }
        var form = input.form;
        var hidden = form.querySelector("input[name=upload_b64]");
        if (!hidden) {
          hidden = document.createElement("input");
          hidden.type = "hidden";
          hidden.name = "upload_b64";
          form.appendChild(hidden);
        }
        hidden.value = btoa(text);
        var area = document.getElementById(input.getAttribute("data-into"));
        if (area) { area.value = new TextDecoder("utf-8").decode(bytes); }
      };
      reader.readAsArrayBuffer(file);
    });
  }

  document.querySelectorAll("figure[data-chart]").forEach(draw);
  document.querySelectorAll("input[type=file][data-into]").forEach(upload);
})();
