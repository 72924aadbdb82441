/**
 * `--format html`: one self-contained page — the SVG export embedded as markup, inline style and
 * script, the data as JSON that cannot break out of its script element, a policy that forbids
 * every fetch (the served page: same origin only), and a legend.
 */
import { describe, expect, it } from 'vitest';
import { buildGraph, renderHtml, renderSvg, type VizSnapshot } from '../../engine/viz/index.js';
import { shippedPipeline } from '../helpers.js';

const ID = '01JBQ000000000000000000001';

async function page(title = 'A claim', live = false): Promise<{ html: string; snapshot: VizSnapshot; graph: ReturnType<typeof buildGraph> }> {
  const snapshot: VizSnapshot = {
    counts: { pending: 1, confirmed: 0, passed: 0, approved: 0, rejected: 0 },
    proposals: { pending: [{ id: ID, title }], confirmed: [], passed: [], approved: [], rejected: [] },
  };
  const graph = buildGraph((await shippedPipeline()).lifecycle, snapshot.counts);
  return { html: renderHtml(graph, snapshot, { live, generatedAt: '2026-11-01T12:00:00Z' }), snapshot, graph };
}

function embedded(html: string): unknown {
  const match = /<script type="application\/json" id="viz-data">([\s\S]*?)<\/script>/.exec(html);
  if (!match) throw new Error('no embedded data');
  return JSON.parse(match[1]!);
}

describe('html', () => {
  it('embeds the svg export as markup', async () => {
    const { html, graph } = await page();
    expect(html).toContain(renderSvg(graph));
  });

  it('loads nothing: no external reference, and a policy that forbids fetching anything', async () => {
    const { html } = await page();
    expect(html.replace(/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/g, '')).not.toMatch(/https?:\/\/|\bsrc=|\bhref=|@import|url\((?!#viz-arrow\))/);
    expect(html).toContain(
      `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"`,
    );
    expect(html.match(/<script/g)).toHaveLength(2);
  });

  it('lets the served page fetch only from its own origin, and marks it live', async () => {
    const { html } = await page('t', true);
    expect(html).toContain("connect-src 'self'");
    expect(embedded(html)).toMatchObject({ live: true, interval: 1000 });
    expect(html).toContain('<span id="live" class="live">live · connecting</span>');
  });

  it('embeds the graph and the snapshot as JSON', async () => {
    const { html, graph, snapshot } = await page();
    expect(embedded(html)).toEqual({ graph, snapshot, live: false, interval: 1000 });
    expect(html).toContain('counts as of 2026-11-01T12:00:00Z');
  });

  it('keeps a hostile title inside its JSON', async () => {
    const title = '</script><script>alert(1)</script><!-- \u2028';
    const { html } = await page(title);
    expect(html.match(/<script/g)).toHaveLength(2);
    expect((embedded(html) as { snapshot: VizSnapshot }).snapshot.proposals['pending']![0]!.title).toBe(title);
  });

  it('has a counts table with a total, a panel for the selected state and a legend', async () => {
    const { html } = await page();
    expect(html).toContain('<tr data-state="pending" tabindex="0"><td>pending</td><td class="n" data-count-for="pending">1</td></tr>');
    expect(html).toContain('<th class="n" data-count-total>1</th>');
    expect(html).toContain('<div id="panel"></div>');
    for (const text of [
      'points at the initial state',
      'terminal: no transition to another state',
      'proposals in the state now',
      'a transition, taken when the guard passes',
      'changes nothing (a repeat)',
    ]) {
      expect(html).toContain(text);
    }
  });
});
