// A Vega spec of TFLOP/s (or GFLOP/s) against sequence length: one panel per (head dim, causal, dtype,
// heads), one line per backend and mode; PyTorch's series dashed.
import type { BenchRow } from '../bench/row.js';

export interface PlotPoint {
  readonly panel: string;
  readonly panelOrder: number;
  readonly series: string;
  readonly source: 'attn' | 'torch';
  readonly x: number;
  readonly y: number;
}

export interface PlotData {
  readonly points: PlotPoint[];
  readonly unit: 'TFLOP/s' | 'GFLOP/s';
  readonly seqs: number[];
}

function panelName(r: BenchRow): string {
  const heads = r.headsKV === r.headsQ ? `H=${r.headsQ}` : `Hq=${r.headsQ} Hk=${r.headsKV}`;
  const seqQ = r.seqQ === r.seqK ? '' : `, Sq=${r.seqQ}`;
  return `D=${r.headDim}, ${r.causal ? 'causal' : 'non-causal'}, ${r.dtype}, ${heads}${seqQ}${r.features === 'non-causal' || r.features === 'causal' ? '' : ` (${r.features})`}`;
}

export function plotData(rows: readonly BenchRow[]): PlotData {
  const ok = rows.filter((r) => r.status === 'ok' && r.tflops !== undefined);
  const giga = ok.length > 0 && ok.every((r) => r.tflops! < 1);
  const panels: string[] = [];
  const points = ok.map((r) => {
    const panel = panelName(r);
    if (!panels.includes(panel)) panels.push(panel);
    return {
      panel,
      panelOrder: panels.indexOf(panel),
      series: `${r.backend} ${r.mode}`,
      source: r.source,
      x: r.seqK,
      y: giga ? r.tflops! * 1000 : r.tflops!,
    };
  });
  points.sort((a, b) => a.panelOrder - b.panelOrder || a.series.localeCompare(b.series) || a.x - b.x);
  return {
    points,
    unit: giga ? 'GFLOP/s' : 'TFLOP/s',
    seqs: [...new Set(points.map((p) => p.x))].sort((a, b) => a - b),
  };
}

export function chartSpec(data: PlotData, title: string, subtitle: string): Record<string, unknown> {
  const panels = new Set(data.points.map((p) => p.panel)).size;
  const withTorch = data.points.some((p) => p.source === 'torch');
  const xy = {
    x: { scale: 'x', field: 'x' },
    y: { scale: 'y', field: 'y' },
  };
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    // Each panel's scales span the top-level width and height signals (the cell size).
    width: 380,
    height: 240,
    padding: 12,
    autosize: 'pad',
    background: 'white',
    title: { text: title, subtitle, anchor: 'start' },
    data: [{ name: 'points', values: data.points }],
    scales: [
      { name: 'color', type: 'ordinal', domain: { data: 'points', field: 'series', sort: true }, range: 'category' },
      {
        name: 'dash',
        type: 'ordinal',
        domain: ['attn', 'torch'],
        range: [
          [1, 0],
          [6, 3],
        ],
      },
    ],
    legends: [
      {
        stroke: 'color',
        title: 'backend, mode',
        orient: 'right',
        symbolType: 'stroke',
        symbolStrokeWidth: 3,
        labelLimit: 300,
      },
      ...(withTorch
        ? [
            {
              strokeDash: 'dash',
              title: 'source',
              orient: 'right',
              symbolType: 'stroke',
              symbolStrokeWidth: 2,
              encode: { labels: { update: { text: { signal: "datum.value == 'torch' ? 'PyTorch SDPA' : 'attn'" } } } },
            },
          ]
        : []),
    ],
    layout: { columns: Math.min(2, Math.max(1, panels)), padding: 28, bounds: 'full', align: 'all' },
    marks: [
      {
        type: 'group',
        name: 'panel',
        from: { facet: { name: 'panelData', data: 'points', groupby: ['panel', 'panelOrder'] } },
        sort: { field: 'datum.panelOrder' },
        title: { text: { signal: 'parent.panel' }, fontSize: 12 },
        encode: { update: { width: { signal: 'width' }, height: { signal: 'height' }, stroke: { value: '#ccc' } } },
        scales: [
          {
            name: 'x',
            type: 'log',
            base: 2,
            domain: { data: 'panelData', field: 'x' },
            range: 'width',
            nice: false,
            zero: false,
            padding: 12,
          },
          {
            name: 'y',
            type: 'linear',
            domain: { data: 'panelData', field: 'y' },
            range: 'height',
            nice: true,
            zero: true,
          },
        ],
        axes: [
          {
            orient: 'bottom',
            scale: 'x',
            title: 'sequence length (keys)',
            values: data.seqs,
            grid: true,
            encode: {
              labels: {
                update: {
                  text: {
                    signal: "datum.value >= 1024 && datum.value % 1024 == 0 ? (datum.value / 1024) + 'k' : datum.value",
                  },
                },
              },
            },
          },
          { orient: 'left', scale: 'y', title: data.unit, grid: true },
        ],
        marks: [
          {
            type: 'group',
            from: { facet: { name: 'seriesData', data: 'panelData', groupby: ['series', 'source'] } },
            marks: [
              {
                type: 'line',
                from: { data: 'seriesData' },
                encode: {
                  enter: {
                    ...xy,
                    stroke: { scale: 'color', field: 'series' },
                    strokeWidth: { value: 2 },
                    strokeDash: { scale: 'dash', field: 'source' },
                  },
                },
              },
              {
                type: 'symbol',
                from: { data: 'seriesData' },
                encode: { enter: { ...xy, fill: { scale: 'color', field: 'series' }, size: { value: 28 } } },
              },
            ],
          },
        ],
      },
    ],
  };
}
