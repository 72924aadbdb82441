/**
 * The statechart visualizer (SPEC §8): lifecycle → graph model → dot / mermaid / json / svg / html,
 * plus the live server. Everything here but `readSnapshot` and `startVizServer` is pure.
 */
import { renderJson, type VizGraph } from './graph.js';
import { renderHtml, type PageOptions, type VizSnapshot } from './html.js';
import { renderSvg } from './svg.js';
import { renderDot, renderMermaid } from './text.js';
import type { VizFormat } from './formats.js';

export {
  buildGraph,
  renderJson,
  toJson,
  withCounts,
  edgeLabel,
  type VizGraph,
  type VizJson,
  type VizState,
  type VizTransition,
  type VizRepeat,
} from './graph.js';
export { renderDot, renderMermaid } from './text.js';
export { layoutGraph, type Layout } from './layout.js';
export { renderSvg } from './svg.js';
export { renderHtml, type PageOptions, type ProposalRow, type VizSnapshot } from './html.js';
export { readSnapshot, titleField, PROPOSALS_PER_STATE, type SnapshotRead } from './snapshot.js';
export { startVizServer, type VizServer, type VizServerOptions } from './server.js';

export { VIZ_FORMATS, type VizFormat } from './formats.js';

/** Render `graph` in `format`; the html page also needs the snapshot (proposals per state). Pure. */
export function renderFormat(format: VizFormat, graph: VizGraph, snapshot: VizSnapshot, options: PageOptions = {}): string {
  switch (format) {
    case 'html':
      return renderHtml(graph, snapshot, options);
    case 'svg':
      return renderSvg(graph);
    case 'dot':
      return renderDot(graph);
    case 'mermaid':
      return renderMermaid(graph);
    case 'json':
      return renderJson(graph);
  }
}
