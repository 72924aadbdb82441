/**
 * `--format svg`: the laid-out graph drawn as hand-written SVG — rounded boxes with the count in a
 * pill, a dot pointing at the initial state, a double border on terminal states, the events a
 * state repeats (accepts without changing) listed in its box after ↺, labels `event` / `[guard]`. Styles are inline so the file stands alone; the page
 * embeds this same markup and finds states and counts by their data attributes.
 */
import type { VizGraph, VizRepeat, VizState } from './graph.js';
import { DETAIL_ROW, detailLines, layoutGraph, LINE_HEIGHT, NAME_SIZE, pillWidth, SMALL_SIZE, type Layout, type NodeBox, type Point } from './layout.js';

/** Escape text for XML content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);
}

const num = (value: number) => String(Math.round(value * 10) / 10);

/** A smooth path through dagre's points (a uniform B-spline, like d3's curveBasis), ending exactly on the last point. */
export function basisPath(points: readonly Point[]): string {
  if (points.length < 3) return points.map((p, i) => `${i ? 'L' : 'M'}${num(p.x)},${num(p.y)}`).join(' ');
  const parts: string[] = [];
  let [x0, y0, x1, y1] = [0, 0, 0, 0];
  const curve = (x: number, y: number) =>
    parts.push(
      `C${num((2 * x0 + x1) / 3)},${num((2 * y0 + y1) / 3)} ${num((x0 + 2 * x1) / 3)},${num((y0 + 2 * y1) / 3)} ${num((x0 + 4 * x1 + x) / 6)},${num((y0 + 4 * y1 + y) / 6)}`,
    );
  points.forEach(({ x, y }, i) => {
    if (i === 0) parts.push(`M${num(x)},${num(y)}`);
    else if (i >= 2) {
      if (i === 2) parts.push(`L${num((5 * x0 + x1) / 6)},${num((5 * y0 + y1) / 6)}`);
      curve(x, y);
    }
    [x0, y0, x1, y1] = [x1, y1, x, y];
  });
  curve(x1, y1);
  parts.push(`L${num(x1)},${num(y1)}`);
  return parts.join(' ');
}

const STYLE = `
.viz { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace; }
.viz .box { fill: #f8fafc; stroke: #334155; stroke-width: 1.5; }
.viz .state.initial .box { fill: #eff6ff; }
.viz .state.terminal .box { fill: #f1f5f9; }
.viz .inner { fill: none; stroke: #334155; stroke-width: 1; }
.viz .name { font-size: ${NAME_SIZE}px; font-weight: 700; fill: #0f172a; }
.viz .pill { fill: #1e293b; }
.viz .count { font-size: ${NAME_SIZE}px; font-weight: 700; fill: #ffffff; }
.viz .tags { font-size: ${SMALL_SIZE}px; fill: #475569; }
.viz .edge { fill: none; stroke: #64748b; stroke-width: 1.4; }
.viz .edge-label rect { fill: #ffffff; fill-opacity: 0.9; }
.viz .edge-label text { font-size: ${SMALL_SIZE}px; fill: #1e293b; }
.viz .edge-label .guard { fill: #9a3412; }
.viz .repeats { font-size: ${SMALL_SIZE}px; fill: #64748b; font-style: italic; }
.viz .start { fill: #0f172a; }
`;

function renderState(state: VizState, box: NodeBox, repeats: readonly VizRepeat[]): string {
  const left = box.x - box.width / 2;
  const top = box.y - box.height / 2;
  const classes = ['state', state.initial ? 'initial' : '', state.terminal ? 'terminal' : ''].filter(Boolean).join(' ');
  const pill = pillWidth(state.count);
  const parts = [
    `<g class="${classes}" data-state="${escapeXml(state.id)}" tabindex="0" role="button" aria-label="${escapeXml(`${state.id}: ${state.count}`)}">`,
    `<title>${escapeXml(state.description ?? state.id)}</title>`,
    `<rect class="box" x="${num(left)}" y="${num(top)}" width="${num(box.width)}" height="${num(box.height)}" rx="10" ry="10"/>`,
  ];
  if (state.terminal)
    parts.push(`<rect class="inner" x="${num(left + 4)}" y="${num(top + 4)}" width="${num(box.width - 8)}" height="${num(box.height - 8)}" rx="7" ry="7"/>`);
  const row = top + 24;
  parts.push(
    `<text class="name" x="${num(left + 14)}" y="${num(row)}">${escapeXml(state.id)}</text>`,
    `<rect class="pill" x="${num(left + box.width - 14 - pill)}" y="${num(row - 15)}" width="${num(pill)}" height="20" rx="10" ry="10"/>`,
    `<text class="count" data-count-for="${escapeXml(state.id)}" x="${num(left + box.width - 14 - pill / 2)}" y="${num(row)}" text-anchor="middle">${state.count}</text>`,
  );
  const details = detailLines(state, repeats);
  let y = row + 4;
  if (details.tags) parts.push(`<text class="tags" x="${num(left + 14)}" y="${num((y += DETAIL_ROW))}">${escapeXml(details.tags)}</text>`);
  if (details.repeats) {
    const title = repeats
      .filter((r) => r.state === state.id)
      .map((r) => `${r.event}: ${r.description ?? 'accepted, changes nothing'}`)
      .join('\n');
    parts.push(
      `<text class="repeats" x="${num(left + 14)}" y="${num((y += DETAIL_ROW))}"><title>${escapeXml(title)}</title>${escapeXml(details.repeats)}</text>`,
    );
  }
  parts.push('</g>');
  return parts.join('');
}

function renderLabel(label: NonNullable<Layout['edges'][number]['label']>): string {
  const top = label.y - label.height / 2;
  const lines = label.lines.map((line, i) => {
    const cls = i > 0 ? ' class="guard"' : '';
    return `<text${cls} x="${num(label.x)}" y="${num(top + 2 + LINE_HEIGHT * (i + 1) - 4)}" text-anchor="middle">${escapeXml(line)}</text>`;
  });
  return `<g class="edge-label"><rect x="${num(label.x - label.width / 2)}" y="${num(top)}" width="${num(label.width)}" height="${num(label.height)}" rx="3" ry="3"/>${lines.join('')}</g>`;
}

/** Render the graph as a standalone SVG document (no XML prolog, so it also embeds in HTML). Pure. */
export function renderSvg(graph: VizGraph, layout: Layout = layoutGraph(graph)): string {
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="viz" viewBox="0 0 ${layout.width} ${layout.height}" width="${layout.width}" height="${layout.height}" role="img" aria-labelledby="viz-title">`,
    `<title id="viz-title">${escapeXml(graph.description ? `${graph.id}: ${graph.description}` : graph.id)}</title>`,
    `<style>${STYLE}</style>`,
    '<defs><marker id="viz-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#64748b"/></marker></defs>',
    '<g class="edges">',
  ];
  for (const edge of layout.edges) {
    const [p0, p1, p2, p3] = edge.points;
    const d =
      edge.loop && p0 && p1 && p2 && p3
        ? `M${num(p0.x)},${num(p0.y)} C${num(p1.x)},${num(p1.y)} ${num(p2.x)},${num(p2.y)} ${num(p3.x)},${num(p3.y)}`
        : basisPath(edge.points);
    const path = `<path class="edge" d="${d}" marker-end="url(#viz-arrow)"/>`;
    if (edge.kind === 'initial') {
      out.push(`<g class="initial-edge">${path}</g>`);
    } else {
      const t = graph.transitions[edge.index]!;
      const title = [t.description, t.message ? `refused: ${t.message}` : null].filter(Boolean).join('\n');
      out.push(
        `<g class="transition" data-from="${escapeXml(t.from)}" data-to="${escapeXml(t.to)}" data-event="${escapeXml(t.event)}">${title ? `<title>${escapeXml(title)}</title>` : ''}${path}${edge.label ? renderLabel(edge.label) : ''}</g>`,
      );
    }
  }
  out.push('</g>');
  if (layout.start) out.push(`<circle class="start" cx="${num(layout.start.x)}" cy="${num(layout.start.y)}" r="7"><title>initial state</title></circle>`);
  out.push('<g class="states">');
  for (const box of layout.nodes) out.push(renderState(graph.states.find((state) => state.id === box.id)!, box, graph.repeats));
  out.push('</g>', '</svg>');
  return `${out.join('\n')}\n`;
}
