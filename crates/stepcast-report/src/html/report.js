"use strict";
// stepcast report: table sorting, the timeline canvas, and the load check a browser test
// reads from the root element (data-report-ready, data-load-ms, data-layout).
(function () {
  var root = document.documentElement;

  // `#only=ID` shows one section alone (screenshots per section).
  var only = /^#only=([\w-]+)$/.exec(window.location.hash);
  if (only) {
    var shown = document.getElementById(only[1]);
    if (shown) {
      document.body.classList.add("only");
      shown.classList.add("shown");
    }
  }

  // Tables: a click on a header sorts by that column (numbers by their value), again to
  // reverse.
  function cellKey(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var value = cell.getAttribute("data-v");
    return value === null ? cell.textContent : parseFloat(value);
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, index) {
      th.addEventListener("click", function () {
        var dir = th.getAttribute("data-dir") === "desc" ? "asc" : "desc";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-dir"); });
        th.setAttribute("data-dir", dir);
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellKey(a, index), y = cellKey(b, index);
          var order = typeof x === "number" && typeof y === "number"
            ? x - y : String(x).localeCompare(String(y));
          return dir === "asc" ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  // The timeline: lanes, each with one row per version (recorded, replayed, predicted).
  var dataElement = document.getElementById("tl-data");
  var canvas = document.getElementById("tl-canvas");
  if (dataElement && canvas && canvas.getContext) {
    var data = JSON.parse(dataElement.textContent);
    var context = canvas.getContext("2d");
    var info = document.getElementById("tl-info");
    var ROW_H = 12, ROW_GAP = 2, LANE_GAP = 8, LABEL_W = 240, AXIS_H = 24;
    var KIND_COLORS = data.kind_colors;
    var CRITICAL = "#d62728";
    var rows = data.rows;
    var laneH = rows.length * (ROW_H + ROW_GAP) + LANE_GAP;
    var height = AXIS_H + data.lanes.length * laneH + 4;
    var span = 1;
    rows.forEach(function (row) {
      span = Math.max(span, row.span_ns);
      for (var i = 0; i < row.slices.length; i += 6) {
        span = Math.max(span, row.slices[i + 1] + row.slices[i + 2]);
      }
    });
    var view = [0, span];
    var shortLabel = function (label) { return label.length > 24 ? label.slice(0, 23) + "…" : label; };

    var plotWidth = function () { return Math.max(10, canvas.clientWidth - LABEL_W - 8); };
    var timeText = function (ns) {
      var abs = Math.abs(ns);
      if (abs >= 1e6) return (ns / 1e6).toFixed(3).replace(/\.?0+$/, "") + " ms";
      if (abs >= 1e3) return (ns / 1e3).toFixed(1) + " µs";
      return ns + " ns";
    };

    var draw = function () {
      var width = canvas.clientWidth || 800;
      var ratio = window.devicePixelRatio || 1;
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      canvas.style.height = height + "px";
      context.setTransform(ratio, 0, 0, ratio, 0, 0);
      context.clearRect(0, 0, width, height);
      var plot = plotWidth();
      var scale = plot / (view[1] - view[0]);
      context.font = "11px system-ui, sans-serif";
      // Time axis.
      var step = Math.pow(10, Math.floor(Math.log10((view[1] - view[0]) / 6)));
      [1, 2, 5, 10].some(function (m) {
        if ((view[1] - view[0]) / (step * m) <= 8) { step *= m; return true; }
        return false;
      });
      context.fillStyle = "#57606a";
      context.strokeStyle = "#eaeef2";
      for (var t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
        var x = LABEL_W + (t - view[0]) * scale;
        context.beginPath();
        context.moveTo(x + 0.5, AXIS_H - 4);
        context.lineTo(x + 0.5, height);
        context.stroke();
        if (x < width - 70) context.fillText(timeText(t), x + 3, AXIS_H - 8);
      }
      // Lane and row labels.
      data.lanes.forEach(function (lane, laneIndex) {
        var y0 = AXIS_H + laneIndex * laneH;
        context.fillStyle = "#1b1f24";
        context.fillText(lane.length > 30 ? lane.slice(0, 29) + "…" : lane, 4, y0 + ROW_H - 2);
        rows.forEach(function (row, rowIndex) {
          context.fillStyle = "#57606a";
          context.textAlign = "right";
          context.fillText(shortLabel(row.label), LABEL_W - 6,
            y0 + rowIndex * (ROW_H + ROW_GAP) + ROW_H - 2 + (rowIndex === 0 ? ROW_H + ROW_GAP : 0) * 0);
          context.textAlign = "left";
        });
      });
      // Slices, clipped to the plot.
      context.save();
      context.beginPath();
      context.rect(LABEL_W, 0, plot, height);
      context.clip();
      rows.forEach(function (row, rowIndex) {
        var s = row.slices;
        for (var i = 0; i < s.length; i += 6) {
          var start = s[i + 1], end = start + s[i + 2];
          if (end < view[0] || start > view[1]) continue;
          var x = LABEL_W + (start - view[0]) * scale;
          var w = Math.max((end - start) * scale, 0.6);
          var y = AXIS_H + s[i] * laneH + rowIndex * (ROW_H + ROW_GAP);
          var critical = s[i + 5] === 1;
          context.globalAlpha = critical ? 1 : 0.7;
          context.fillStyle = critical ? CRITICAL : KIND_COLORS[s[i + 4]] || "#999999";
          context.fillRect(x, y, w, ROW_H);
        }
      });
      context.restore();
      context.globalAlpha = 1;
      canvas.setAttribute("data-view", Math.round(view[0]) + "," + Math.round(view[1]));
    };

    var at = function (event) {
      var box = canvas.getBoundingClientRect();
      var x = event.clientX - box.left, y = event.clientY - box.top;
      return { x: x, y: y, t: view[0] + (x - LABEL_W) / (plotWidth() / (view[1] - view[0])) };
    };

    canvas.addEventListener("wheel", function (event) {
      var point = at(event);
      if (point.x < LABEL_W) return;
      event.preventDefault();
      var width = view[1] - view[0];
      var next = Math.min(span * 1.05, Math.max(1000, width * Math.exp(event.deltaY * 0.0015)));
      var left = point.t - (point.t - view[0]) * next / width;
      view = [left, left + next];
      draw();
    }, { passive: false });

    var drag = null;
    canvas.addEventListener("mousedown", function (event) {
      drag = { x: event.clientX, view: view.slice() };
    });
    window.addEventListener("mouseup", function () { drag = null; });
    canvas.addEventListener("mousemove", function (event) {
      if (drag) {
        var shift = (event.clientX - drag.x) * (drag.view[1] - drag.view[0]) / plotWidth();
        view = [drag.view[0] - shift, drag.view[1] - shift];
        draw();
        return;
      }
      var point = at(event);
      var lane = Math.floor((point.y - AXIS_H) / laneH);
      var rowIndex = Math.floor(((point.y - AXIS_H) - lane * laneH) / (ROW_H + ROW_GAP));
      var row = rows[rowIndex];
      if (!info || !row || lane < 0 || lane >= data.lanes.length || point.x < LABEL_W) return;
      var best = -1, bestDur = Infinity;
      var slack = 2 * (view[1] - view[0]) / plotWidth();
      for (var i = 0; i < row.slices.length; i += 6) {
        var s = row.slices;
        if (s[i] === lane && s[i + 1] - slack <= point.t && point.t <= s[i + 1] + s[i + 2] + slack && s[i + 2] < bestDur) {
          best = i;
          bestDur = s[i + 2];
        }
      }
      if (best < 0) { info.textContent = ""; return; }
      var s2 = row.slices;
      info.textContent = data.names[s2[best + 3]] + " (" + data.kinds[s2[best + 4]] + ", " +
        row.label + ", " + data.lanes[lane] + "): starts " + timeText(s2[best + 1]) +
        ", lasts " + timeText(s2[best + 2]) + (s2[best + 5] === 1 ? ", on the critical path" : "");
    });
    var reset = function () { view = [0, span]; draw(); };
    canvas.addEventListener("dblclick", reset);
    var button = document.getElementById("tl-reset");
    if (button) button.addEventListener("click", reset);
    window.addEventListener("resize", draw);
    draw();
  }

  // `#selftest`: what a reader does, done by the page itself for the browser test: sort a
  // table by a number column, zoom the timeline; the outcome goes to data-selftest.
  if (window.location.hash === "#selftest") {
    var results = [];
    var header = document.querySelector("table.sortable th:nth-child(3)");
    if (header) {
      header.click();
      var table = header.closest("table");
      var values = Array.prototype.map.call(table.tBodies[0].rows, function (row) {
        return cellKey(row, 2);
      });
      var sorted = values.every(function (v, i) { return i === 0 || !(v > values[i - 1]); });
      results.push("table:" + (sorted && header.getAttribute("data-dir") === "desc" ? "sorted" : "unsorted"));
    }
    var zoomed = document.getElementById("tl-canvas");
    if (zoomed && zoomed.getAttribute("data-view")) {
      var before = zoomed.getAttribute("data-view").split(",").map(Number);
      var box = zoomed.getBoundingClientRect();
      zoomed.dispatchEvent(new WheelEvent("wheel", {
        deltaY: -400, clientX: box.left + box.width * 0.6, clientY: box.top + 30,
        bubbles: true, cancelable: true }));
      var after = zoomed.getAttribute("data-view").split(",").map(Number);
      var narrower = after[1] - after[0] < (before[1] - before[0]) * 0.9;
      results.push("timeline:" + (narrower ? "zoomed" : "not zoomed"));
    }
    root.setAttribute("data-selftest", results.join(" "));
  }

  root.setAttribute("data-report-ready", "1");
  window.addEventListener("load", function () {
    var layout = Array.prototype.map.call(document.querySelectorAll("section.card"), function (section) {
      var box = section.getBoundingClientRect();
      return { id: section.id, top: Math.round(box.top + window.scrollY), height: Math.round(box.height),
        width: Math.round(box.width), shown: section.offsetParent !== null };
    });
    // Elements that stick out of their container (a scrolling table's contents excepted:
    // its box scrolls them), named for the browser test.
    var overflowing = [];
    Array.prototype.forEach.call(document.querySelectorAll("section.card *"), function (el) {
      var parent = el.parentElement;
      if (!parent || el.closest(".scroll") && el.closest(".scroll") !== el) return;
      if (el.offsetParent === null && getComputedStyle(el).position !== "fixed") return;
      var box = el.getBoundingClientRect(), outer = parent.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) return;
      if (box.right > outer.right + 1 || box.left < outer.left - 1) {
        overflowing.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
          (el.className && typeof el.className === "string" ? "." + el.className.split(" ")[0] : "") +
          " " + Math.round(box.right - outer.right) + "px");
      }
    });
    var answer = document.querySelector("p.answer");
    var answerBox = answer && answer.getBoundingClientRect();
    root.setAttribute("data-layout", JSON.stringify({
      sections: layout, viewport: window.innerWidth, page_width: document.documentElement.scrollWidth,
      overflowing: overflowing.slice(0, 20),
      answer_bottom: answerBox ? Math.round(answerBox.bottom + window.scrollY) : null,
      viewport_height: window.innerHeight }));
    root.setAttribute("data-load-ms", performance.now().toFixed(1));
  });
})();
