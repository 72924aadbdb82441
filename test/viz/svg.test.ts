/**
 * `--format svg`: laid out with dagre and drawn in Node, deterministic, standalone, with every
 * state, count, mark and label in it; boxes and labels never overlap.
 */
import { describe, expect, it } from 'vitest';
import { buildGraph, layoutGraph, renderSvg, type VizGraph } from '../../engine/viz/index.js';
import { basisPath } from '../../engine/viz/svg.js';
import { shippedPipeline } from '../helpers.js';
import { EDITORIAL } from './fixtures.js';

const graphs = async (): Promise<[string, VizGraph][]> => [
  ['shipped', buildGraph((await shippedPipeline()).lifecycle, { pending: 2, approved: 12345 })],
  ['editorial', buildGraph((await shippedPipeline(EDITORIAL)).lifecycle, { review: 1 })],
];

interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
}
const overlap = (a: Box, b: Box) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
const box = (x: number, y: number, width: number, height: number): Box => ({
  left: x - width / 2,
  right: x + width / 2,
  top: y - height / 2,
  bottom: y + height / 2,
});

describe('svg', () => {
  it('is the same text every time for the same graph', async () => {
    for (const [, graph] of await graphs()) expect(renderSvg(graph)).toBe(renderSvg(structuredClone(graph)));
  });

  it('draws every state with its count, marks initial and terminal, and labels every transition', async () => {
    for (const [name, graph] of await graphs()) {
      const svg = renderSvg(graph);
      expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'), name).toBe(true);
      for (const state of graph.states) {
        const classes = ['state', state.initial ? 'initial' : '', state.terminal ? 'terminal' : ''].filter(Boolean).join(' ');
        const group = svg.match(new RegExp(`<g class="${classes}" data-state="${state.id}"[^]*?</g>`))?.[0];
        expect(group, `${name}: ${state.id}`).toBeDefined();
        expect(group).toContain(`data-count-for="${state.id}"`);
        expect(group).toContain(`>${state.count}</text>`);
        expect(group!.includes('class="inner"'), `${state.id} double border`).toBe(state.terminal);
      }
      expect(svg.match(/<circle class="start"/g)).toHaveLength(1);
      expect(svg.match(/<g class="transition"/g)).toHaveLength(graph.transitions.length);
      for (const t of graph.transitions) {
        expect(svg).toContain(`data-from="${t.from}" data-to="${t.to}" data-event="${t.event}"`);
        expect(svg).toContain(`>${t.event}</text>`);
        if (t.guard) expect(svg).toContain(`>[${t.guard.replace(/&/g, '&amp;')}]</text>`);
      }
    }
  });

  it('lists the events a state repeats inside its box', async () => {
    const [[, shipped]] = (await graphs()) as [[string, VizGraph]];
    const svg = renderSvg(shipped);
    expect(svg).toContain('\u21ba defer, unconfirm, unpass</text>');
    expect(svg).toContain('\u21ba confirm</text>');
    expect(svg).toContain('\u21ba pass</text>');
  });

  it('refers to nothing outside itself', async () => {
    for (const [, graph] of await graphs()) {
      const svg = renderSvg(graph);
      expect(svg.replace('xmlns="http://www.w3.org/2000/svg"', '')).not.toMatch(/https?:|href=|@import|url\((?!#viz-arrow\))/);
    }
  });

  it('escapes text from the YAML', () => {
    const graph: VizGraph = {
      id: 'm<x>',
      description: '"quoted" & <tagged>',
      states: [{ id: 'a', initial: true, terminal: true, description: '<script>alert(1)</script>', tags: ['a&b'], count: 0 }],
      transitions: [],
      repeats: [],
    };
    const svg = renderSvg(graph);
    expect(svg).toContain('<title>&lt;script&gt;alert(1)&lt;/script&gt;</title>');
    expect(svg).toContain('#a&amp;b');
    expect(svg).toContain('m&lt;x&gt;: &quot;quoted&quot; &amp; &lt;tagged&gt;');
    expect(svg).not.toContain('<script>');
  });

  it('lays boxes and labels out without overlaps, inside the drawing', async () => {
    for (const [name, graph] of await graphs()) {
      const layout = layoutGraph(graph);
      const boxes = [
        ...layout.nodes.map((n) => box(n.x, n.y, n.width, n.height)),
        ...layout.edges.flatMap((e) => (e.label ? [box(e.label.x, e.label.y, e.label.width, e.label.height)] : [])),
      ];
      expect(boxes).toHaveLength(graph.states.length + graph.transitions.length);
      boxes.forEach((a, i) => {
        expect(a.left >= 0 && a.top >= 0 && a.right <= layout.width && a.bottom <= layout.height, `${name}: box ${i} inside`).toBe(true);
        boxes.slice(i + 1).forEach((b, j) => expect(overlap(a, b), `${name}: boxes ${i} and ${i + j + 1}`).toBe(false));
      });
    }
  });

  it('draws each edge through its points, ending exactly on the last one (where the arrowhead goes)', () => {
    expect(
      basisPath([
        { x: 0, y: 0 },
        { x: 10, y: 10 },
      ]),
    ).toBe('M0,0 L10,10');
    const path = basisPath([
      { x: 0, y: 0 },
      { x: 6, y: 12 },
      { x: 12, y: 0 },
      { x: 30, y: 30 },
    ]);
    expect(path.startsWith('M0,0 L1,2 C')).toBe(true);
    expect(path.endsWith('L30,30')).toBe(true);
  });
});
