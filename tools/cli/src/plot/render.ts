// Renders the chart headless with Vega (no browser, no canvas): SVG, or an HTML page around the SVG.
import { writeFile } from 'node:fs/promises';
import type * as Vega from 'vega';
import type { BenchRow } from '../bench/row.js';
import { CliUsageError, OutputFileError } from '../errors.js';
import { chartSpec, plotData } from './spec.js';

export type PlotFormat = 'svg' | 'html';

export function plotFormat(path: string): PlotFormat {
  if (/\.svg$/i.test(path)) return 'svg';
  if (/\.html?$/i.test(path)) return 'html';
  throw new CliUsageError(`--plot ${path}: the file name must end in .svg or .html.`);
}

export async function renderSvg(rows: readonly BenchRow[], title: string, subtitle: string): Promise<string> {
  const data = plotData(rows);
  if (data.points.length === 0)
    throw new CliUsageError('nothing to plot: no backend ran any case (see the reasons above).');
  // Loaded here, not at startup: every command but `bench --plot` runs without Vega (and starts faster).
  const vega: typeof Vega = await import('vega');
  const view = new vega.View(vega.parse(chartSpec(data, title, subtitle) as Vega.Spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

export function wrapHtml(svg: string, title: string, rows: readonly BenchRow[]): string {
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${escapeHtml(title)}</title>`,
    '<style>body{font-family:sans-serif;margin:24px} pre{font-size:11px}</style>',
    '</head><body>',
    svg,
    '<details><summary>data</summary>',
    `<pre>${escapeHtml(JSON.stringify(rows, null, 1))}</pre>`,
    '</details>',
    '</body></html>',
    '',
  ].join('\n');
}

export async function writePlot(
  path: string,
  rows: readonly BenchRow[],
  title: string,
  subtitle: string,
): Promise<void> {
  const format = plotFormat(path);
  const svg = await renderSvg(rows, title, subtitle);
  try {
    await writeFile(path, format === 'svg' ? svg : wrapHtml(svg, title, rows));
  } catch (err) {
    throw new OutputFileError(path, err);
  }
}
