// The page's charts, drawn with uPlot. Colours and units are report.html's
// (internal/chart): the Okabe-Ito palette in its order, so that p50, p95 and
// p99 are blue, vermillion and bluish green there and here; latency in ms,
// rates a second, time in seconds since the page's run started.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export const palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"];
export const [blue, vermillion, green] = palette;
const grid = "#e0e0e0", ink = "#404040";
const font = "11px system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif";

// axis is an X axis of a fixed height; yAxis a Y axis as wide as its
// widest tick label needs, so that the label beside it ("requests/s" by
// 1,000) never runs into the ticks, as a fixed width let it.
function axis(label) {
  return {stroke: ink, font, labelFont: font, label, labelSize: 16, labelGap: 2, size: 48, grid: {stroke: grid, width: 1}, ticks: {stroke: grid, width: 1}};
}
function yAxis(label) {
  return {...axis(label), size: (u, values, i, cycle) => {
    const a = u.axes[i];
    if (cycle > 1 && a._size) return a._size;
    u.ctx.save();
    u.ctx.font = font;
    const widest = Math.max(0, ...(values || []).map(v => u.ctx.measureText(v).width));
    u.ctx.restore();
    // The tick marks (10 px by default), their gap (5) and room to spare.
    return Math.ceil(widest + 10 + 5 + 6);
  }};
}

function width(el) { return Math.max(240, el.clientWidth || 480); }

// A level is a dashed horizontal line with a label: memory_quota, an SLO's
// latency clause.
function drawLevels(u, levels) {
  const ctx = u.ctx, {left, top, width: w, height: h} = u.bbox, dpr = uPlot.pxRatio;
  ctx.save();
  ctx.beginPath(); ctx.rect(left, top, w, h); ctx.clip();
  for (const l of levels) {
    const y = u.valToPos(l.value, "y", true);
    ctx.strokeStyle = l.color; ctx.fillStyle = l.color; ctx.lineWidth = 1.5 * dpr;
    ctx.setLineDash([4 * dpr, 4 * dpr]);
    ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(left + w, y); ctx.stroke();
    ctx.setLineDash([]);
    // uPlot leaves the axes' alignment set: the label starts at the left.
    ctx.font = Math.round(11 * dpr) + "px system-ui, sans-serif";
    ctx.textAlign = "left"; ctx.textBaseline = "bottom";
    ctx.fillText(l.label, left + 4 * dpr, y - 3 * dpr);
  }
  ctx.restore();
}

// TimeChart is a chart over the run's seconds: series of {label, color},
// and dashed levels of {value, label, color} (set with levels()).
export class TimeChart {
  constructor(el, yLabel, series) {
    this.el = el; this.levels = [];
    const self = this;
    this.u = new uPlot({
      width: width(el), height: el.clientHeight || 200,
      legend: {show: true, live: false},
      cursor: {drag: {x: false, y: false}},
      scales: {x: {time: false}, y: {range: (u, min, max) => {
        let top = Math.max(max || 0, ...self.levels.map(l => l.value * 1.05));
        if (!(top > 0)) top = 1;
        return [0, top * 1.05];
      }}},
      axes: [axis("s"), yAxis(yLabel)],
      series: [{label: "s"}, ...series.map(s => ({label: s.label, stroke: s.color, width: 1.6, points: {show: false}, spanGaps: false}))],
      hooks: {draw: [u => drawLevels(u, self.levels)]},
    }, [[], ...series.map(() => [])], el);
  }
  set(data, levels) { this.levels = levels || []; this.u.setData(data); }
  resize() { this.u.setSize({width: width(this.el), height: this.el.clientHeight || 200}); }
}

// CurveChart is a capacity search's rate-vs-latency curve: p50, p95 and
// p99 of each finished step against its offered level, a dot where the
// step held and a cross where it broke, the SLO's latency clauses dashed
// in their quantile's colour, and a dotted line at the step running now.
export class CurveChart {
  constructor(el, xLabel) {
    this.el = el; this.levels = []; this.steps = []; this.running = null;
    const self = this;
    const colors = [blue, vermillion, green];
    this.u = new uPlot({
      width: width(el), height: el.clientHeight || 260,
      legend: {show: true, live: false},
      cursor: {drag: {x: false, y: false}},
      scales: {
        x: {time: false, range: (u, min, max) => [0, Math.max(max || 0, self.running || 0, 1) * 1.05]},
        y: {range: (u, min, max) => {
          let top = Math.max(max || 0, ...self.levels.map(l => l.value * 1.1));
          if (!(top > 0)) top = 1;
          return [0, top * 1.05];
        }},
      },
      axes: [axis(xLabel), yAxis("ms")],
      series: [{label: xLabel}, ...["p50", "p95", "p99"].map((q, i) => ({label: q + " ms", stroke: colors[i], width: 1.6, points: {show: false}}))],
      hooks: {draw: [u => {
        drawLevels(u, self.levels);
        const ctx = u.ctx, dpr = uPlot.pxRatio, {left, top, width: w, height: h} = u.bbox;
        ctx.save();
        ctx.beginPath(); ctx.rect(left, top, w, h); ctx.clip();
        for (let i = 0; i < 3; i++) {
          ctx.strokeStyle = colors[i]; ctx.fillStyle = colors[i]; ctx.lineWidth = 1.6 * dpr;
          for (const s of self.steps) {
            const x = u.valToPos(s.level, "x", true), y = u.valToPos(s.p[i], "y", true), r = 4 * dpr;
            ctx.beginPath();
            if (s.holds) { ctx.arc(x, y, 3.5 * dpr, 0, 2 * Math.PI); ctx.fill(); }
            else { ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r); ctx.moveTo(x + r, y - r); ctx.lineTo(x - r, y + r); ctx.stroke(); }
          }
        }
        if (self.running) {
          const x = u.valToPos(self.running, "x", true);
          ctx.strokeStyle = ink; ctx.lineWidth = dpr; ctx.setLineDash([2 * dpr, 3 * dpr]);
          ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
        }
        ctx.restore();
      }]},
    }, [[], [], [], []], el);
  }
  // set takes the finished steps, sorted by level, the SLO's lines
  // ({value, label, color}) and the level of the step running (or null).
  set(steps, levels, running) {
    this.steps = steps; this.levels = levels; this.running = running;
    this.u.setData([steps.map(s => s.level), ...[0, 1, 2].map(i => steps.map(s => s.p[i]))]);
  }
  resize() { this.u.setSize({width: width(this.el), height: this.el.clientHeight || 260}); }
}
