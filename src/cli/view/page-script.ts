/**
 * The script of the viewer's page, as text: plain browser JavaScript with no dependencies and no build step. It is kept
 * free of backticks and dollar-braces so that it can live in this template literal unchanged.
 */
export const VIEW_SCRIPT = String.raw`
'use strict';
// The viewer's page: fetches JSON from the command's own server and builds the DOM with textContent only, so no text
// from a rollout is ever read as HTML. State lives in the URL's hash (run, group, rollout) and the filter form.
var STATUSES = ['scored', 'dropped', 'failed', 'running', 'unknown'];
var TOKENS_SHOWN = 6000;
var runSelect = document.getElementById('run');
var form = document.getElementById('filters');
var groupsBox = document.getElementById('groups');
var detailBox = document.getElementById('rollout');
var summary = document.getElementById('summary');
var notices = document.getElementById('notices');
var state = { run: null, group: null, sample: null, asked: 0, scale: null };

function el(tag, attrs) {
  var node = document.createElement(tag);
  for (var key in attrs || {}) {
    var value = attrs[key];
    if (value === null || value === undefined || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else if (key === 'style') node.setAttribute('style', value);
    else if (key.slice(0, 2) === 'on') node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : value);
  }
  for (var i = 2; i < arguments.length; i++) {
    var child = arguments[i];
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function fmt(n) {
  if (n === null || n === undefined) return '—';
  return Math.abs(n) >= 1000 || n === Math.round(n) ? String(n) : String(Number(n.toFixed(3)));
}
function tone(score) {
  return score === null ? 'zero' : score > 0 ? 'pos' : score < 0 ? 'neg' : 'zero';
}
function getJson(url) {
  return fetch(url).then(function (r) {
    return r.json().then(function (body) {
      if (!r.ok) throw new Error(body.error || r.statusText);
      return body;
    });
  });
}

function readHash() {
  var params = new URLSearchParams(location.hash.slice(1));
  return { run: params.get('run'), group: params.get('group'), sample: params.get('sample') };
}
function writeHash() {
  var params = new URLSearchParams();
  if (state.run) params.set('run', state.run);
  if (state.group !== null) params.set('group', state.group);
  if (state.sample !== null) params.set('sample', String(state.sample));
  history.replaceState(null, '', '#' + params.toString());
}

function filterQuery() {
  var data = new FormData(form);
  var params = new URLSearchParams();
  ['env', 'min', 'max', 'q'].forEach(function (name) {
    var value = String(data.get(name) || '').trim();
    if (value) params.set(name, value);
  });
  var statuses = data.getAll('status');
  if (statuses.length && statuses.length < STATUSES.length) params.set('status', statuses.join(','));
  return params;
}

/** A strip from the run's lowest to its highest score, a tick per rollout: the group's spread at a glance. */
function spreadStrip(scores) {
  var known = scores.filter(function (s) { return s !== null; });
  var svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('width', '90');
  svg.setAttribute('height', '14');
  svg.setAttribute('aria-hidden', 'true');
  var line = document.createElementNS(svg.namespaceURI, 'line');
  [['x1', 5], ['x2', 85], ['y1', 7], ['y2', 7], ['stroke', '#ccd']].forEach(function (a) { line.setAttribute(a[0], a[1]); });
  svg.append(line);
  var lo = state.scale ? state.scale.min : 0;
  var hi = state.scale ? state.scale.max : 1;
  known.forEach(function (s) {
    var dot = document.createElementNS(svg.namespaceURI, 'circle');
    var x = hi > lo ? 5 + (80 * (s - lo)) / (hi - lo) : 45;
    [['cx', x], ['cy', 7], ['r', 4], ['fill', s > 0 ? '#2e9d55' : s < 0 ? '#c33' : '#888'], ['fill-opacity', 0.55]].forEach(function (a) {
      dot.setAttribute(a[0], a[1]);
    });
    svg.append(dot);
  });
  return svg;
}

function rolloutRow(group, r) {
  var facts = [r.turns + (r.turns === 1 ? ' turn' : ' turns')];
  if (r.toolCalls) facts.push(r.toolCalls + (r.toolCalls === 1 ? ' tool call' : ' tool calls'));
  facts.push(r.messagesOnly ? 'messages only' + (r.tokens === null ? '' : ' · ' + r.tokens + ' completion tokens') : r.tokens + ' tokens');
  if (r.rewards.length) facts.push('rewards ' + r.rewards.map(fmt).join(', '));
  if (r.truncated) facts.push('truncated');
  var key = group.id + '#' + r.sample;
  var row = el('div', {
    class: 'rollout' + (state.group === group.id && state.sample === r.sample ? ' selected' : ''),
    'data-rollout': key, role: 'button', tabindex: '0',
    onclick: function () { openRollout(group.id, r.sample); },
    onkeydown: function (e) { if (e.key === 'Enter') openRollout(group.id, r.sample); },
  },
  el('span', { text: '#' + r.sample }),
  el('span', { class: 'score ' + tone(r.score), text: 'score ' + fmt(r.score) }),
  el('span', { class: 'preview', text: facts.join(' · ') + (r.preview ? ' — ' + r.preview : '') }));
  return row;
}

function groupBox(group, open) {
  var spread = group.spread;
  var spreadText = spread ? fmt(spread.min) + ' … ' + fmt(spread.max) + ' · mean ' + fmt(spread.mean) + ' ± ' + fmt(spread.std) : 'no scores';
  var shown = group.rollouts.length < group.size ? group.rollouts.length + ' of ' + group.size : String(group.size);
  var head = el('summary', null,
    el('span', null, el('span', { class: 'label', text: group.label }), ' ',
      el('span', { class: 'status ' + group.status, text: group.status }), ' ',
      el('span', { text: shown + ' rollouts' })),
    el('span', { class: 'spread', title: 'scores: ' + group.scores.map(fmt).join(', ') }, spreadStrip(group.scores), el('span', { class: 'spread-text', text: spreadText })),
    group.prompt ? el('span', { class: 'prompt', text: group.prompt }) : null,
    group.note ? el('span', { class: 'note', text: group.note }) : null);
  var box = el('details', { class: 'group', 'data-group': group.id, 'data-status': group.status, open: open }, head);
  group.rollouts.forEach(function (r) { box.append(rolloutRow(group, r)); });
  return box;
}

function fillFilters(body) {
  var envSelect = form.elements.env;
  var chosen = envSelect.value;
  envSelect.replaceChildren(el('option', { value: '', text: body.environments.length ? 'all' : 'not recorded' }));
  body.environments.forEach(function (name) { envSelect.append(el('option', { value: name, text: name, selected: name === chosen })); });
  envSelect.disabled = body.environments.length === 0;
  var box = document.getElementById('statuses');
  if (!box.querySelector('input')) {
    STATUSES.forEach(function (s) {
      box.append(el('label', null, el('input', { type: 'checkbox', name: 'status', value: s, checked: true }), ' ' + s, el('span', { class: 'count', 'data-status-count': s })));
    });
  }
  STATUSES.forEach(function (s) {
    box.querySelector('[data-status-count="' + s + '"]').textContent = ' (' + body.statuses[s] + ')';
  });
}

function loadGroups(reload) {
  if (!state.run) return;
  var params = filterQuery();
  var query = params.toString();
  params.set('run', state.run);
  if (reload) params.set('reload', '1');
  var asked = ++state.asked;
  summary.dataset.state = 'loading';
  return getJson('/api/groups?' + params.toString()).then(function (body) {
    if (asked !== state.asked) return;
    fillFilters(body);
    document.getElementById('origin').textContent = body.run.origin;
    var link = document.getElementById('run-workflows');
    link.hidden = !body.run.workflowsUrl;
    if (body.run.workflowsUrl) link.href = body.run.workflowsUrl;
    var all = [];
    body.groups.forEach(function (g) { g.scores.forEach(function (s) { if (s !== null) all.push(s); }); });
    state.scale = all.length ? { min: Math.min.apply(null, all), max: Math.max.apply(null, all) } : null;
    var open = body.groups.length <= 40;
    groupsBox.replaceChildren.apply(groupsBox, body.groups.map(function (g) { return groupBox(g, open); }));
    if (!body.groups.length) groupsBox.append(el('p', { class: 'missing', text: 'No group matches these filters.' }));
    summary.textContent = 'Showing ' + body.shown.groups + ' of ' + body.total.groups + ' groups · ' +
      body.shown.rollouts + ' of ' + body.total.rollouts + ' rollouts';
    summary.dataset.groups = body.shown.groups;
    summary.dataset.rollouts = body.shown.rollouts;
    summary.dataset.query = query;
    summary.dataset.state = 'ready';
    notices.replaceChildren.apply(notices, body.notices.map(function (n) { return el('li', { text: n }); }));
  }).catch(function (error) {
    summary.textContent = 'Could not load the run: ' + error.message;
    summary.dataset.state = 'error';
  });
}

function messageBox(m) {
  var heading = [m.turn !== null ? 'turn ' + m.turn : null, m.role === 'tool' && m.name ? 'tool · ' + m.name : m.role];
  if (m.toolCallId) heading.push(m.toolCallId);
  if (m.reward !== null) heading.push('reward ' + fmt(m.reward));
  var box = el('div', { class: 'msg ' + m.role, 'data-role': m.role }, el('h3', { text: heading.filter(Boolean).join(' · ') }));
  if (m.text || !m.toolCalls.length) box.append(el('pre', { text: m.text || '(empty)' }));
  m.images.forEach(function (src) { box.append(el('img', { src: src, alt: 'image in the message' })); });
  m.toolCalls.forEach(function (c) { box.append(el('div', { class: 'tool-call', text: '→ ' + c.name + '(' + c.arguments + ')' })); });
  return box;
}

function tint(logprob) {
  var p = Math.min(1, Math.max(0, Math.exp(logprob)));
  return 'background:hsl(' + Math.round(p * 120) + ',75%,82%)';
}

/** The sequence in runs of trained and masked positions, each token tinted by the probability it was sampled with. */
function tokenView(tokens) {
  var box = el('div', { class: 'tokens' + (tokens.pieces ? '' : ' ids'), 'data-decoded': tokens.pieces ? 'yes' : 'no' });
  var n = Math.min(tokens.ids.length, state.allTokens ? Infinity : TOKENS_SHOWN);
  var seg = null;
  var segTrained = null;
  var stats = null;
  function close() {
    if (!seg) return;
    var caption = segTrained
      ? 'trained · ' + stats.count + ' tokens' + (stats.known ? ' · mean logprob ' + fmt(stats.sum / stats.known) : '')
      : 'not trained (mask -100) · ' + stats.count + ' tokens: prompt, tool results, environment turns';
    seg.prepend(el('span', { class: 'caption', text: caption }));
    box.append(seg);
  }
  for (var i = 0; i < n; i++) {
    var trained = tokens.masks[i] !== -100;
    if (trained !== segTrained) {
      close();
      seg = el('div', { class: 'seg ' + (trained ? 'trained' : 'masked') });
      segTrained = trained;
      stats = { count: 0, sum: 0, known: 0 };
    }
    var id = tokens.ids[i];
    var lp = tokens.logprobs ? tokens.logprobs[i] : null;
    var text = tokens.pieces ? tokens.pieces[i].replace(/\n/g, '↵\n') || '∅' : String(id);
    var title = 'id ' + id + (trained && lp !== null && lp <= 0 ? ' · logprob ' + fmt(lp) + ' · p ' + fmt(Math.exp(lp)) : '') + (trained ? '' : ' · masked');
    stats.count++;
    if (trained && lp !== null && lp <= 0) { stats.sum += lp; stats.known++; }
    seg.append(el('span', { class: 'tok', title: title, style: trained && lp !== null && lp <= 0 ? tint(lp) : null, text: text }));
  }
  close();
  if (n < tokens.ids.length) {
    box.append(el('button', { type: 'button', text: 'show all ' + tokens.ids.length + ' tokens', onclick: function () { state.allTokens = true; openRollout(state.group, state.sample); } }));
  }
  return box;
}

var ENDED = { exited: 'the agent exited', calls: 'its model calls were spent', tokens: 'its tokens were spent', time: 'out of time' };
var MARKS = {
  replayed: 'answered from the record of an earlier attempt',
  live: 'answered by the model',
  recorded: 'recorded; whether the attempt that ends the rollout replays it is not known yet',
};

/** A harness rollout's model calls in order, each marked replayed or live, and how its episode went. */
function harnessView(h) {
  var box = el('div', { class: 'harness', 'data-harness': h.sample });
  var o = h.outcome;
  if (o) {
    var facts = el('dl', { class: 'facts' });
    var check = o.check.passed ? 'passed' : 'failed (' + (o.check.timedOut ? 'timed out' : 'exit ' + fmt(o.check.exitCode)) + ')';
    facts.append(
      el('dt', { text: 'agent' }), el('dd', { 'data-fact': 'agent', text: o.agent + ' · ' + (o.exitCode === null ? 'stopped' : 'exit ' + o.exitCode) + ' · ' + (ENDED[o.ended] || o.ended) }),
      el('dt', { text: 'check' }), el('dd', { 'data-fact': 'check', class: o.check.passed ? 'pos' : 'neg' }, check,
        o.check.output ? el('details', null, el('summary', { text: 'output' }), el('pre', { text: o.check.output })) : null),
      el('dt', { text: 'replayed' }), el('dd', { 'data-fact': 'replayed', text: o.replayed + ' of ' + o.calls + ' calls' }));
    if (o.diverged.length) {
      facts.append(el('dt', { text: 'diverged' }), el('dd', { 'data-fact': 'diverged' }, el('ul', null, ...o.diverged.map(function (d) {
        return el('li', { text: 'call ' + d.call + ': ' + d.reason });
      }))));
    }
    box.append(facts);
  } else {
    box.append(el('p', { class: 'missing', text: 'still running, or its attempt failed: no outcome recorded yet' }));
  }
  box.append(el('ol', { class: 'calls', start: 0 }, ...h.calls.map(function (c) {
    return el('li', { class: 'call', 'data-call': c.call, 'data-mark': c.mark },
      el('span', { class: 'mark ' + c.mark, title: MARKS[c.mark], text: c.mark }), ' ',
      el('span', { class: 'call-facts', text: 'call ' + c.call + ' · ' + c.promptTokens + ' prompt + ' + c.completionTokens + ' completion tokens · ' + Math.round(c.modelMs) + ' ms' }),
      el('div', { class: 'call-summary', text: c.summary }),
      c.reply ? el('div', { class: 'call-reply', text: '→ ' + c.reply }) : null);
  })));
  return box;
}

function renderRollout(group, r) {
  var facts = el('dl', { class: 'facts' });
  function fact(name, value, attrs) { facts.append(el('dt', { text: name }), el('dd', attrs || null, value)); }
  fact('score', el('span', { class: 'score ' + tone(r.score), text: fmt(r.score) }), { 'data-fact': 'score' });
  fact('per-turn rewards', r.rewards.length ? r.rewards.map(fmt).join(', ') : el('span', { class: 'missing', text: 'none given' }), { 'data-fact': 'rewards' });
  fact('parsed answer', r.parsed ? JSON.stringify(r.parsed.value) : el('span', { class: 'missing', text: 'not recorded' }), { 'data-fact': 'parsed' });
  fact('gold answer', r.gold ? JSON.stringify(r.gold.value) + ' (' + r.gold.from + ')' : el('span', { class: 'missing', text: 'not recorded' }), { 'data-fact': 'gold' });
  if (r.truncated) fact('truncated', 'yes: its advantage is set to zero');
  fact('status', group.status + (group.note ? ' — ' + group.note : ''));
  fact('workflow', group.workflowUrl
    ? el('a', { id: 'workflow-link', href: group.workflowUrl, target: '_blank', rel: 'noopener', text: 'open in the Temporal UI' })
    : el('span', { class: 'missing', text: 'unknown: the group is not in the trajectory store (--store)' }));
  var legend = el('div', { class: 'legend' }, 'tokens' + (r.tokens.tokenizer ? ' decoded with ' + r.tokens.tokenizer : ' as ids (tokenizer not known: --tokenizer)') + ' · p low',
    el('span', { class: 'gradient' }), 'high', el('span', { class: 'swatch-masked', text: 'masked: not trained' }));
  detailBox.replaceChildren(
    el('h2', { text: group.label + ' · rollout #' + r.sample }), facts,
    ...(r.harness ? [el('h3', { class: 'section', text: 'Model calls (' + r.harness.calls.length + ')' }), harnessView(r.harness)] : []),
    el('h3', { class: 'section', text: 'Messages (' + r.messages.length + ')' }),
    el('div', { class: 'messages' }, ...r.messages.map(messageBox)),
    el('h3', { class: 'section', text: 'Tools offered (' + r.tools.length + ')' }),
    r.tools.length ? el('ul', { class: 'tools' }, ...r.tools.map(function (t) {
      return el('li', { 'data-tool': t.name }, el('code', { text: t.name }), t.description ? ' — ' + t.description : '',
        t.parameters ? el('pre', { class: 'tool-parameters', text: t.parameters }) : '');
    })) : el('span', { class: 'missing', text: 'none offered or not recorded' }),
    ...(r.messagesOnly
      ? [el('h3', { class: 'section', text: 'Tokens' }), el('span', { class: 'missing', 'data-fact': 'messages-only',
        text: 'none recorded: a messages-only run (--env.messages_only) keeps the messages alone, not training data' +
          (r.messagesOnly.completionTokens === null ? '' : '; ' + r.messagesOnly.completionTokens + ' completion tokens counted by the server') })]
      : [el('h3', { class: 'section', text: 'Tokens (' + r.tokens.ids.length + ')' }), legend, tokenView(r.tokens)]));
  detailBox.dataset.key = group.id + '#' + r.sample;
}

function openRollout(groupId, sample) {
  state.group = groupId;
  state.sample = sample;
  writeHash();
  document.querySelectorAll('.rollout.selected').forEach(function (n) { n.classList.remove('selected'); });
  var row = document.querySelector('[data-rollout="' + CSS.escape(groupId + '#' + sample) + '"]');
  if (row) row.classList.add('selected');
  var params = new URLSearchParams({ run: state.run, group: groupId, sample: String(sample) });
  detailBox.dataset.key = '';
  return getJson('/api/rollout?' + params.toString()).then(function (got) {
    if (state.group !== groupId || state.sample !== sample) return;
    renderRollout(got.group, got.rollout);
  }).catch(function (error) {
    detailBox.replaceChildren(el('p', { class: 'missing', text: 'Could not load the rollout: ' + error.message }));
  });
}

function chooseRun(id) {
  state.run = id;
  state.allTokens = false;
  runSelect.value = id;
  writeHash();
  return loadGroups(false);
}

var typing = null;
form.addEventListener('input', function (e) {
  clearTimeout(typing);
  typing = setTimeout(function () { loadGroups(false); }, e.target.type === 'search' || e.target.type === 'number' ? 250 : 0);
});
form.addEventListener('submit', function (e) { e.preventDefault(); loadGroups(false); });
runSelect.addEventListener('change', function () { state.group = null; state.sample = null; chooseRun(runSelect.value); });
document.getElementById('reload').addEventListener('click', function () { loadGroups(true); });

getJson('/api/runs').then(function (body) {
  body.runs.forEach(function (r) { runSelect.append(el('option', { value: r.id, text: r.id })); });
  var wanted = readHash();
  var run = body.runs.find(function (r) { return r.id === wanted.run; }) || body.runs[0];
  if (!run) { summary.textContent = 'No runs to show.'; return; }
  return chooseRun(run.id).then(function () {
    if (wanted.group !== null && wanted.sample !== null && run.id === wanted.run) openRollout(wanted.group, Number(wanted.sample));
  });
});
`;
