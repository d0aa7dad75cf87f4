// Charts drawn by uPlot (a small canvas charting library, MIT), loaded with
// the first chart like the graph library. A canvas says nothing to a screen
// reader, so every chart is an image with a one-line summary for its name
// and a table twin in a `<details>` below it holding every number drawn.
// The chart is as wide as its container and is drawn again when that
// changes (phone width included); its times are UTC.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "./dom.js";

export interface Series {
  label: string;
  values: Array<number | null>;
  colour: string;
  /** Drawn as bars rather than a line. */
  bars?: boolean;
  /** How a value reads in the table and the tooltip (default: as is). */
  format?: (value: number) => string;
}

export interface Chart {
  title: string;
  /** One sentence the chart says, for its accessible name. */
  summary: string;
  /** The start of each point, ISO 8601. */
  times: string[];
  /** How each time reads in the table. */
  timeLabel: (iso: string) => string;
  series: Series[];
  /** The y axis from 0 to this at least (1 for rates). */
  yMax?: number;
}

const HEIGHT = 220;

function tableTwin(chart: Chart): HTMLElement {
  return h(
    "details",
    { class: "chart-table" },
    h("summary", {}, `${chart.title}: the numbers`),
    h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        { class: "list" },
        h("caption", { class: "visually-hidden" }, chart.title),
        h(
          "thead",
          {},
          h("tr", {}, h("th", { scope: "col" }, "Time"), ...chart.series.map((series) => h("th", { scope: "col", class: "number" }, series.label))),
        ),
        h(
          "tbody",
          {},
          ...chart.times.map((iso, index) =>
            h(
              "tr",
              {},
              h("th", { scope: "row", "data-label": "Time" }, chart.timeLabel(iso)),
              ...chart.series.map((series) => {
                const value = series.values[index];
                return h(
                  "td",
                  { class: "number", "data-label": series.label },
                  value === null || value === undefined ? "—" : (series.format ?? String)(value),
                );
              }),
            ),
          ),
        ),
      ),
    ),
  );
}

/** A chart with its table twin; `destroy` stops it. */
export function chart(chart: Chart): { element: HTMLElement; destroy: () => void } {
  const canvas = h("div", { class: "chart-canvas", role: "img", "aria-label": `${chart.title}. ${chart.summary}` });
  const element = h("figure", { class: "chart" }, h("figcaption", {}, chart.title), canvas, tableTwin(chart));
  const bars = uPlot.paths.bars?.({ size: [0.7, 40] });
  const xs = chart.times.map((iso) => new Date(iso).getTime() / 1000);
  // Half a bucket either side, so that the first and last bars are whole.
  const half = xs.length > 1 ? ((xs[1] ?? 0) - (xs[0] ?? 0)) / 2 : 1800;
  const options: uPlot.Options = {
    width: 600,
    height: HEIGHT,
    // Times in UTC, as everywhere in the dashboard.
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
    scales: { x: { time: true, range: (_plot, min, max) => [min - half, max + half] }, y: { range: (_plot, _min, max) => [0, Math.max(max, chart.yMax ?? 1)] } },
    axes: [{}, { size: 48 }],
    legend: { live: false },
    series: [
      {},
      ...chart.series.map((series) => {
        const item: uPlot.Series = { label: series.label, stroke: series.colour, width: 2 };
        if (series.bars && bars !== undefined) {
          item.fill = series.colour;
          item.paths = bars;
        }
        if (series.format !== undefined) {
          const format = series.format;
          item.value = (_plot, value) => (value === null ? "—" : format(value));
        }
        return item;
      }),
    ],
  };
  const data: uPlot.AlignedData = [xs, ...chart.series.map((series) => series.values)];
  const plot = new uPlot(options, data, canvas);
  const resize = new ResizeObserver(() => {
    const width = Math.floor(canvas.clientWidth);
    if (width > 0 && width !== plot.width) {
      plot.setSize({ width, height: HEIGHT });
    }
  });
  resize.observe(canvas);
  return {
    element,
    destroy: () => {
      resize.disconnect();
      plot.destroy();
    },
  };
}
