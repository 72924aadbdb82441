/**
 * The page's script, inlined into the HTML as text. Plain ES2017 with no imports, so the file
 * stands alone. It reads the embedded data, wires clicks on states (diagram and table), fills the
 * side panel with the state's proposals and the events that leave it, and — on the served page
 * only — polls `state.json` on the same origin to keep the counts live.
 */
export const PAGE_SCRIPT = String.raw`
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('viz-data').textContent);
  var graph = data.graph;
  var snapshot = data.snapshot;
  var selected = null;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return node;
  }
  function each(selector, fn) { Array.prototype.forEach.call(document.querySelectorAll(selector), fn); }
  function stateOf(id) { return graph.states.filter(function (s) { return s.id === id; })[0]; }
  function countOf(id) { return snapshot.counts[id] || 0; }

  function renderCounts() {
    var total = 0;
    graph.states.forEach(function (state) {
      var count = countOf(state.id);
      total += count;
      each('[data-count-for="' + state.id + '"]', function (node) { node.textContent = String(count); });
      each('.state[data-state="' + state.id + '"]', function (node) { node.setAttribute('aria-label', state.id + ': ' + count); });
    });
    each('[data-count-total]', function (node) { node.textContent = String(total); });
  }

  function proposalList(id) {
    var rows = snapshot.proposals[id] || [];
    var count = countOf(id);
    if (count === 0) return [el('p', { class: 'empty' }, ['No proposals in this state.'])];
    var items = rows.map(function (row) {
      return el('li', { 'data-proposal': row.id }, [el('code', {}, [row.id]), ' ', el('span', { class: 'title' }, [row.title || ''])]);
    });
    var out = [el('ul', { class: 'proposals' }, items)];
    if (count > rows.length) out.push(el('p', { class: 'more' }, ['Showing ' + rows.length + ' of ' + count + '; run pipeline list --state ' + id + ' for all.']));
    return out;
  }

  // The YAML's description of a transition shows on hover.
  function described(attrs, description) {
    if (description) attrs.title = description;
    return attrs;
  }

  function eventList(id) {
    var items = graph.transitions.filter(function (t) { return t.from === id; }).map(function (t) {
      var parts = [el('code', { class: 'event' }, [t.event]), ' \u2192 ', el('strong', {}, [t.to])];
      if (t.guard) parts.push(' ', el('span', { class: 'guard' }, ['[' + t.guard + ']']));
      if (t.message) parts.push(el('div', { class: 'message' }, ['refused when the guard fails: ' + t.message]));
      return el('li', described({ 'data-event': t.event }, t.description), parts);
    });
    graph.repeats.filter(function (r) { return r.state === id; }).forEach(function (r) {
      items.push(el('li', described({ class: 'repeat', 'data-event': r.event }, r.description), [el('code', { class: 'event' }, [r.event]), ' accepted, changes nothing']));
    });
    if (!items.length) return [el('p', { class: 'empty' }, ['No event leaves this state.'])];
    return [el('ul', { class: 'events' }, items)];
  }

  function renderPanel() {
    var panel = document.getElementById('panel');
    while (panel.firstChild) panel.removeChild(panel.firstChild);
    if (selected === null) {
      panel.appendChild(el('p', { class: 'hint' }, ['Click a state to see its proposals and the events that leave it.']));
      return;
    }
    var state = stateOf(selected);
    var marks = [state.initial ? 'initial' : null, state.terminal ? 'terminal' : null].filter(Boolean);
    panel.appendChild(el('h2', {}, [state.id, ' ', el('span', { class: 'badge', 'data-count-for': state.id }, [String(countOf(state.id))])]));
    if (marks.length) panel.appendChild(el('p', { class: 'marks' }, [marks.join(' \u00b7 ')]));
    if (state.description) panel.appendChild(el('p', { class: 'description' }, [state.description]));
    if (state.tags.length) panel.appendChild(el('p', { class: 'tags' }, state.tags.map(function (t) { return el('span', { class: 'tag' }, ['#' + t]); })));
    panel.appendChild(el('h3', {}, ['Proposals']));
    proposalList(state.id).forEach(function (node) { panel.appendChild(node); });
    panel.appendChild(el('h3', {}, ['Events that leave it']));
    eventList(state.id).forEach(function (node) { panel.appendChild(node); });
  }

  function select(id) {
    selected = id;
    each('.state[data-state], tr[data-state]', function (node) { node.classList.toggle('selected', node.getAttribute('data-state') === id); });
    renderPanel();
  }

  each('.state[data-state], tr[data-state]', function (node) {
    var id = node.getAttribute('data-state');
    node.addEventListener('click', function () { select(id); });
    node.addEventListener('keydown', function (event) {
      if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); select(id); }
    });
  });
  renderCounts();
  renderPanel();

  if (!data.live) return;
  var status = document.getElementById('live');
  function poll() {
    fetch('state.json', { cache: 'no-store' }).then(function (response) {
      if (!response.ok) throw new Error('HTTP ' + response.status);
      return response.json();
    }).then(function (next) {
      snapshot = next;
      renderCounts();
      if (selected !== null) renderPanel();
      status.textContent = 'live \u00b7 updated ' + new Date().toLocaleTimeString();
      status.className = 'live';
    }, function () {
      status.textContent = 'disconnected \u00b7 retrying';
      status.className = 'live down';
    }).then(function () { setTimeout(poll, data.interval); });
  }
  setTimeout(poll, data.interval);
})();
`;
