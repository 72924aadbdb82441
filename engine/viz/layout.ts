/**
 * Lay the graph out with dagre, in Node, with no browser: text is measured with a fixed width per
 * character (the SVG draws labels in a monospace font, where that estimate holds), so the same
 * graph always gets the same coordinates.
 */
import { Graph, layout as dagreLayout } from '@dagrejs/dagre';
import type { VizGraph, VizRepeat, VizState } from './graph.js';

export interface Point {
  x: number;
  y: number;
}

export interface NodeBox {
  id: string;
  /** Centre. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface EdgeLayout {
  kind: 'transition' | 'initial';
  /** Index in graph.transitions (-1 for the initial marker's edge). */
  index: number;
  points: Point[];
  /** A self-loop: `points` are a cubic Bézier's start, two control points and end. */
  loop?: boolean;
  /** The label's centre and lines (none for the initial marker's edge). */
  label?: { x: number; y: number; width: number; height: number; lines: string[] };
}

export interface Layout {
  width: number;
  height: number;
  nodes: NodeBox[];
  /** Where the initial marker (a filled dot) sits, if there is an initial state. */
  start?: Point;
  edges: EdgeLayout[];
}

/** Font sizes: state names and counts, then tags, repeats and edge labels. */
export const NAME_SIZE = 14;
export const SMALL_SIZE = 11;
/** Character width of the monospace fonts at a size (0.6 em), rounded up. */
const charWidth = (size: number) => Math.ceil(size * 0.6 * 10) / 10;
export const textWidth = (text: string, size: number) => [...text].length * charWidth(size);

export const LINE_HEIGHT = 15;
export const DETAIL_ROW = 16;
const PAD_X = 14;
/** The count's pill fits at least four digits: the served page updates the number, not the drawing. */
export const pillWidth = (count: number) => 12 + charWidth(NAME_SIZE) * Math.max(4, String(count).length);
export const START_ID = '__initial';
const START_SIZE = 14;

/** Marks the events a state accepts without changing (self-loops would crowd the layout). */
export const REPEAT_MARK = '\u21ba';

/** The lines under a state's name: its tags, then the events it repeats (accepts without changing). */
export function detailLines(state: VizState, repeats: readonly VizRepeat[]): { tags?: string; repeats?: string } {
  const events = repeats.filter((repeat) => repeat.state === state.id).map((repeat) => repeat.event);
  return {
    ...(state.tags.length ? { tags: state.tags.map((tag) => `#${tag}`).join(' ') } : {}),
    ...(events.length ? { repeats: `${REPEAT_MARK} ${events.join(', ')}` } : {}),
  };
}

/** The size of a state's box: name and count on the first row, one more row per detail line. */
export function stateSize(state: VizState, repeats: readonly VizRepeat[]): { width: number; height: number } {
  const first = textWidth(state.id, NAME_SIZE) + 10 + pillWidth(state.count);
  const lines = Object.values(detailLines(state, repeats));
  const widest = Math.max(first, ...lines.map((line) => textWidth(line, SMALL_SIZE)));
  return { width: Math.max(120, Math.ceil(widest) + 2 * PAD_X), height: 44 + DETAIL_ROW * lines.length };
}

/** Label lines of a transition: the event, then the guard in brackets (two short lines, not one long one). */
function labelLines(text: string, guard: string | null): string[] {
  return guard ? [text, `[${guard}]`] : [text];
}

function labelBox(lines: string[]): { width: number; height: number } {
  return { width: Math.ceil(Math.max(...lines.map((line) => textWidth(line, SMALL_SIZE)))) + 8, height: lines.length * LINE_HEIGHT + 4 };
}

const round = (value: number) => Math.round(value * 10) / 10;

/**
 * dagre places a self-loop's label right of its node but routes the loop itself erratically; draw
 * it as one cubic curve from the node's right side out to the label and back (points: start, two
 * control points, end).
 */
function selfLoop(node: NodeBox, label: { x: number; width: number }): Point[] {
  const x = node.x + node.width / 2;
  const reach = Math.max(20, label.x - label.width / 2 - x - 2) / 0.75;
  const top = node.y - node.height / 4;
  const bottom = node.y + node.height / 4;
  return [
    { x, y: top },
    { x: x + reach, y: top - 14 },
    { x: x + reach, y: bottom + 14 },
    { x, y: bottom },
  ];
}

/** Lay out `graph` top to bottom. Pure and deterministic. */
export function layoutGraph(graph: VizGraph): Layout {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 40, ranksep: 50, edgesep: 20, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  const initial = graph.states.find((state) => state.initial);
  if (initial) g.setNode(START_ID, { width: START_SIZE, height: START_SIZE });
  for (const state of graph.states) g.setNode(state.id, stateSize(state, graph.repeats));
  if (initial) g.setEdge(START_ID, initial.id, { minlen: 1 }, 'initial');

  const labels = new Map<string, string[]>();
  graph.transitions.forEach((transition, index) => {
    const lines = labelLines(transition.event, transition.guard);
    labels.set(`t${index}`, lines);
    g.setEdge(transition.from, transition.to, { ...labelBox(lines), labelpos: 'c' }, `t${index}`);
  });

  dagreLayout(g);

  const nodes: NodeBox[] = graph.states.map((state) => {
    const node = g.node(state.id) as { x: number; y: number; width: number; height: number };
    return { id: state.id, x: round(node.x), y: round(node.y), width: node.width, height: node.height };
  });
  const order = { initial: 0, transition: 1 };
  const edges: EdgeLayout[] = (g.edges() as { v: string; w: string; name?: string }[])
    .map((edge): EdgeLayout => {
      const data = g.edge(edge) as { points: Point[]; x?: number; y?: number; width?: number; height?: number };
      const name = edge.name ?? '';
      const loop = edge.v === edge.w;
      const raw = loop ? selfLoop(g.node(edge.v) as NodeBox, { x: data.x ?? 0, width: data.width ?? 0 }) : data.points;
      const points = raw.map((p) => ({ x: round(p.x), y: round(p.y) }));
      const lines = labels.get(name);
      const kind: EdgeLayout['kind'] = name === 'initial' ? 'initial' : 'transition';
      return {
        kind,
        index: kind === 'initial' ? -1 : Number(name.slice(1)),
        points,
        ...(loop ? { loop: true } : {}),
        ...(lines && data.x !== undefined && data.y !== undefined
          ? { label: { x: round(data.x), y: round(data.y), width: data.width ?? 0, height: data.height ?? 0, lines } }
          : {}),
      };
    })
    .sort((a, b) => order[a.kind] - order[b.kind] || a.index - b.index);
  const start = initial ? (g.node(START_ID) as Point) : undefined;
  const size = g.graph() as { width?: number; height?: number };
  return {
    width: Math.ceil(size.width ?? 0),
    height: Math.ceil(size.height ?? 0),
    nodes,
    ...(start ? { start: { x: round(start.x), y: round(start.y) } } : {}),
    edges,
  };
}
