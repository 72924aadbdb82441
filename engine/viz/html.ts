/**
 * `--format html` (the default): one self-contained page — inline CSS and script, the SVG export
 * embedded as markup, the data the page needs embedded as JSON. It loads nothing: the Content
 * Security Policy allows no source but the page itself (and, for the served page, fetches of
 * `state.json` from the same origin), so even a stray URL in a description cannot reach the network.
 */
import type { VizGraph } from './graph.js';
import { PAGE_SCRIPT } from './page-script.js';
import { escapeXml, renderSvg } from './svg.js';

export interface ProposalRow {
  id: string;
  /** The review stage's title field (`list` shows the same), or null. */
  title: string | null;
}

/** What changes while the page is open: counts, and the proposals (at most a cap) per state. */
export interface VizSnapshot {
  counts: Record<string, number>;
  proposals: Record<string, ProposalRow[]>;
}

export interface PageOptions {
  /** Poll `state.json` to keep counts live (the served page). */
  live?: boolean;
  /** Poll interval in milliseconds (default 1000). */
  interval?: number;
  /** When the snapshot was taken, shown on the static page (RFC 3339). */
  generatedAt?: string;
}

const CSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#0f172a;background:#ffffff}
header{padding:14px 20px;border-bottom:1px solid #e2e8f0;display:flex;gap:16px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:18px;margin:0}
header p{margin:0;color:#475569}
#live{margin-left:auto;font-size:12px;color:#64748b}
#live.live{color:#15803d}
#live.down{color:#b91c1c}
main{display:grid;grid-template-columns:minmax(0,1fr) 360px;gap:0;min-height:calc(100vh - 56px)}
#diagram{padding:16px;overflow:auto}
#diagram svg{max-width:100%;height:auto}
.viz .state{cursor:pointer}
.viz .state:hover .box,.viz .state:focus .box{stroke:#2563eb;stroke-width:2.5}
.viz .state.selected .box{stroke:#2563eb;stroke-width:3;fill:#dbeafe}
.viz .state:focus{outline:none}
aside{border-left:1px solid #e2e8f0;padding:16px 20px;background:#f8fafc;overflow:auto}
aside h2{font-size:16px;margin:0 0 6px}
aside h3{font-size:13px;margin:18px 0 6px;text-transform:uppercase;letter-spacing:.04em;color:#475569}
.badge{display:inline-block;min-width:24px;padding:0 8px;border-radius:10px;background:#1e293b;color:#fff;font-size:12px;text-align:center}
.tag{display:inline-block;margin-right:6px;color:#475569;font-family:ui-monospace,monospace;font-size:12px}
.marks{margin:0;color:#64748b;font-size:12px}
ul.proposals,ul.events{list-style:none;margin:0;padding:0}
ul.proposals li,ul.events li{padding:5px 0;border-bottom:1px solid #e2e8f0}
ul.proposals code{font-size:11px;color:#475569}
.guard{color:#9a3412;font-family:ui-monospace,monospace;font-size:12px}
.message{color:#64748b;font-size:12px}
li.repeat{color:#64748b}
.repeat-mark{color:#64748b;font-style:italic;margin-right:6px}
.empty,.hint,.more{color:#64748b}
table{border-collapse:collapse;width:100%;margin-top:6px}
td,th{text-align:left;padding:4px 6px;border-bottom:1px solid #e2e8f0;font-size:13px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr[data-state]{cursor:pointer}
tr[data-state]:hover,tr[data-state].selected{background:#dbeafe}
#legend{padding:0 20px 20px;display:flex;flex-wrap:wrap;gap:18px;color:#334155;font-size:13px}
#legend svg{vertical-align:middle;margin-right:6px}
@media (max-width:900px){main{grid-template-columns:1fr}aside{border-left:0;border-top:1px solid #e2e8f0}}
`;

const LEGEND = [
  ['<svg width="16" height="16"><circle cx="8" cy="8" r="6" fill="#0f172a"/></svg>', 'points at the initial state'],
  [
    '<svg width="34" height="20"><rect x="1" y="1" width="32" height="18" rx="6" fill="#f1f5f9" stroke="#334155"/><rect x="4" y="4" width="26" height="12" rx="4" fill="none" stroke="#334155"/></svg>',
    'terminal: no transition to another state',
  ],
  [
    '<svg width="30" height="20"><rect x="1" y="2" width="28" height="16" rx="8" fill="#1e293b"/><text x="15" y="14" fill="#fff" font-size="11" text-anchor="middle">3</text></svg>',
    'proposals in the state now',
  ],
  [
    '<svg width="40" height="10"><path d="M1,5 L39,5" stroke="#64748b" stroke-width="1.5"/></svg>',
    '<code>event</code> <span class="guard">[guard]</span>: a transition, taken when the guard passes',
  ],
  ['<span class="repeat-mark">\u21ba</span>', '<code>event</code>: accepted in this state, changes nothing (a repeat)'],
];

/** JSON that is safe inside a <script> element (no `</script>` or `<!--` can be formed). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function countsTable(graph: VizGraph): string {
  const rows = graph.states.map(
    (state) =>
      `<tr data-state="${escapeXml(state.id)}" tabindex="0"><td>${escapeXml(state.id)}</td><td class="n" data-count-for="${escapeXml(state.id)}">${state.count}</td></tr>`,
  );
  const total = graph.states.reduce((sum, state) => sum + state.count, 0);
  return `<table id="counts"><thead><tr><th>state</th><th class="n">proposals</th></tr></thead><tbody>${rows.join('')}</tbody><tfoot><tr><th>total</th><th class="n" data-count-total>${total}</th></tr></tfoot></table>`;
}

/** Render the page for `graph` (whose counts match `snapshot.counts`). Pure. */
export function renderHtml(graph: VizGraph, snapshot: VizSnapshot, options: PageOptions = {}): string {
  const live = options.live ?? false;
  const connect = live ? "'self'" : "'none'";
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src ${connect}; base-uri 'none'; form-action 'none'`;
  const data = { graph, snapshot, live, interval: options.interval ?? 1000 };
  const status = live ? 'live · connecting' : options.generatedAt ? `counts as of ${options.generatedAt}` : 'counts at generation';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(graph.id)} · pipeline viz</title>
<style>${CSS}</style>
</head>
<body>
<header><h1>${escapeXml(graph.id)}</h1>${graph.description ? `<p>${escapeXml(graph.description)}</p>` : ''}<span id="live"${live ? ' class="live"' : ''}>${escapeXml(status)}</span></header>
<main>
<section>
<div id="diagram">
${renderSvg(graph)}</div>
<div id="legend">${LEGEND.map(([icon, text]) => `<span>${icon}${text}</span>`).join('')}</div>
</section>
<aside>
<div id="panel"></div>
<h3>All states</h3>
${countsTable(graph)}
</aside>
</main>
<script type="application/json" id="viz-data">${scriptJson(data)}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}
