/**
 * `--format dot` (Graphviz) and `--format mermaid` (stateDiagram-v2): the graph as text a user
 * pastes into other tools. Both are pure and deterministic, so tests pin them verbatim.
 */
import { edgeLabel, repeatLabel, repeatsByState, type VizGraph, type VizState } from './graph.js';

/** A DOT string: `\` and `"` escaped, a newline written as DOT's `\n` line break. */
function dotString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;
}

function stateLabel(state: VizState): string {
  return `${state.id} (${state.count})`;
}

/**
 * Graphviz DOT, top to bottom: the initial state has a point pointing at it, terminal states a
 * double border, a state's repeats are one dashed self-loop; descriptions and guard messages become tooltips
 * (Graphviz shows them on hover in its SVG output).
 */
export function renderDot(graph: VizGraph): string {
  const lines: string[] = [`digraph ${dotString(graph.id)} {`];
  if (graph.description) lines.push(`  label=${dotString(graph.description)};`, '  labelloc=t;');
  lines.push(
    '  rankdir=TB;',
    '  graph [fontname="Helvetica"];',
    '  node [shape=box, style=rounded, fontname="Helvetica"];',
    '  edge [fontname="Helvetica", fontsize=10];',
    '  "__initial" [shape=point, width=0.15, label=""];',
  );
  for (const state of graph.states) {
    const attrs = [`label=${dotString(state.tags.length ? `${stateLabel(state)}\ntags: ${state.tags.join(', ')}` : stateLabel(state))}`];
    if (state.terminal) attrs.push('peripheries=2');
    if (state.description) attrs.push(`tooltip=${dotString(state.description)}`);
    lines.push(`  ${dotString(state.id)} [${attrs.join(', ')}];`);
  }
  const initial = graph.states.find((state) => state.initial);
  if (initial) lines.push(`  "__initial" -> ${dotString(initial.id)};`);
  for (const transition of graph.transitions) {
    const attrs = [`label=${dotString(edgeLabel(transition))}`];
    if (transition.message) attrs.push(`tooltip=${dotString(transition.message)}`);
    lines.push(`  ${dotString(transition.from)} -> ${dotString(transition.to)} [${attrs.join(', ')}];`);
  }
  for (const { state, events } of repeatsByState(graph)) {
    lines.push(`  ${dotString(state)} -> ${dotString(state)} [label=${dotString(repeatLabel(events))}, style=dashed];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/**
 * Mermaid text: entity codes stand in for the characters Mermaid would read as syntax (`;` ends a
 * statement, `"` a label, `#` starts an entity), and newlines fold into spaces.
 */
const MERMAID_ENTITIES: Record<string, string> = { '#': '#35;', ';': '#59;', '"': '#quot;', '<': '#lt;', '>': '#gt;' };

function mermaidText(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/[#;"<>]/g, (char) => MERMAID_ENTITIES[char]!);
}

/**
 * Mermaid stateDiagram-v2: `[*] -->` marks the initial state and `--> [*]` each terminal one;
 * descriptions and tags are state description lines; a state's repeats are one self-transition
 * marked "(no change)". Mermaid cannot dash a single edge, so the label carries the difference.
 */
export function renderMermaid(graph: VizGraph): string {
  const lines: string[] = ['stateDiagram-v2'];
  if (graph.description) lines.push(`  %% ${graph.id}: ${graph.description.replace(/\r?\n/g, ' ')}`);
  for (const state of graph.states) {
    lines.push(`  state "${mermaidText(stateLabel(state))}" as ${state.id}`);
    if (state.description) lines.push(`  ${state.id} : ${mermaidText(state.description)}`);
    if (state.tags.length) lines.push(`  ${state.id} : tags: ${mermaidText(state.tags.join(', '))}`);
  }
  const initial = graph.states.find((state) => state.initial);
  if (initial) lines.push(`  [*] --> ${initial.id}`);
  for (const transition of graph.transitions) lines.push(`  ${transition.from} --> ${transition.to} : ${mermaidText(edgeLabel(transition))}`);
  for (const { state, events } of repeatsByState(graph)) lines.push(`  ${state} --> ${state} : ${mermaidText(repeatLabel(events))}`);
  for (const state of graph.states) if (state.terminal) lines.push(`  ${state.id} --> [*]`);
  const terminal = graph.states.filter((state) => state.terminal).map((state) => state.id);
  if (terminal.length) lines.push('  classDef terminal stroke-width:3px', `  class ${terminal.join(', ')} terminal`);
  return `${lines.join('\n')}\n`;
}
