'use strict';

// Polls /actuator/spannertuning every second and draws it; no framework, no build step.
const ENDPOINT = 'actuator/spannertuning';
// The client's warm-up figures besides its channels (the sample's own, read from the starter's state).
const WARM_UP = 'sample/warm-up';
// What "native" means per feature: the client does it itself, so there is nothing to switch or count.
const NATIVE_MEANS = {
  'single-use-distribution':
    'this client routes single-use reads itself; spanner-tuning leaves routing alone, so nothing to ' +
    'switch and no "routed" count. The bars show the client\'s own spread.',
  'transaction-routing':
    'this client picks each transaction\'s channel itself; spanner-tuning leaves it alone.',
  'grpc-gcp': 'this client already uses the grpc-gcp pool; nothing to switch on.',
  'stream-end-guard': 'this client already skips cancels of finished streams itself.',
};
const COUNTER_MEANS = {
  singleUseRouted: 'single-use reads spanner-tuning sent to the channel expected to answer first',
  transactionsRouted: 'transactions whose first call spanner-tuning sent to the channel expected to answer first',
  streamEndGuardSkipped: 'cancels of already-finished streams skipped (existsById closes after one row)',
  streamEndGuardDrained: 'streams closed at their last row that then completed by themselves, no cancel sent',
  streamEndGuardDrainTimeouts: 'streams closed at their last row whose trailers did not come in time: cancelled',
  hedgingSent: 'second attempts, on another channel, of reads that had not answered within their delay',
  hedgingWon: 'hedges that answered before the read\'s first attempt',
  hedgingDenied: 'hedges that were due but not sent: the budget of extra calls was spent',
  hedgingLosersCancelled: 'losing attempts cancelled within their connection\'s reset budget',
  hedgingBudgetLeft: 'hedges the budget holds now',
  hedgingExtraCallRate: 'hedges per hedgeable read over about the last minute',
};
const EXPLAIN = {
  'single-use-distribution':
    'Single-use reads go to the channel expected to answer first (latency estimate; calls in flight near the stream limit or as a tie-break) instead of a sticky one.',
  'transaction-routing':
    'Each transaction\'s first call picks its channel the same way; the rest of the transaction follows it.',
  'stream-end-guard': 'Skips the cancel of a read whose stream had already ended (existsById, point selects).',
  'hedging':
    'A read that has not answered by a recent high percentile of its statement\'s time is sent again to another channel; the first answer wins, within a budget of 5 % extra calls. Off by default.',
  'grpc-gcp': 'The grpc-gcp channel pool, which load-aware picking needs. Chosen when channels are built.',
};
const WARM_UP_ROWS = {
  channelsWarm: ['channels warm', 'connected and primed now, of the channels watched'],
  warmUpTook: ['warm-up took', 'from the client\'s build until every channel was first connected and primed; the app reported ready after it'],
  primed: ['priming calls', 'SELECT 1 calls that answered: one per new connection of each channel'],
  coldReads: ['cold reads', 'reads sent to a channel that was not warm because no warm one had room: each waited for its connection'],
  refreshed: ['refreshed', 'connections refreshed before the server retired them, one channel at a time while the others took the reads'],
};
const SWITCHABLE = new Set(['single-use-distribution', 'transaction-routing', 'stream-end-guard', 'hedging']);
// The backends (kind in /sample/backend) that are the Cloud Spanner emulator: it never marks a
// stream's last message, so the guard has nothing to skip there and the page says why.
const EMULATOR_KINDS = new Set(['emulator-started', 'emulator-host']);

let clientName = null;
let baseline = null;      // channel -> calls when the last burst began
let featureStates = {};
let lastClient = null;
const history = [];

function $(id) { return document.getElementById(id); }

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  Object.entries(attrs || {}).forEach(([k, v]) => {
    if (k === 'class') node.className = v; else if (k.startsWith('data-')) node.setAttribute(k, v); else node[k] = v;
  });
  children.flat().forEach((c) => node.append(c instanceof Node ? c : document.createTextNode(String(c))));
  return node;
}

// A refusal stays in view until the user dismisses it or does something else: the once-a-second
// poll writes the status line, never the notice.
function refused(what, message) {
  $('notice-text').textContent = what + ' refused: ' + message;
  $('notice').hidden = false;
}

function dismiss() {
  $('notice').hidden = true;
}

// The reason in an endpoint's refusal: its body's message, else the body itself.
async function reasonOf(response) {
  const text = await response.text();
  try { return response.status + ' ' + (JSON.parse(text).message || text); } catch (ignored) { return response.status + ' ' + text; }
}

function words(key) {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}

async function loadBackend() {
  try {
    showBackend(await (await fetch('sample/backend')).json());
  } catch (e) {
    $('backend').textContent = 'backend: unknown (' + e + ')';
  }
}

function showBackend(info) {
  const box = $('backend');
  box.textContent = 'backend: ' + info.description;
  box.classList.toggle('fake', info.fake);
  box.dataset.kind = info.kind;
  $('emulator-note').hidden = !EMULATOR_KINDS.has(info.kind);
}

// Never fails: a failure is the answer, and the card says so.
async function fetchWarmUp() {
  try {
    const response = await fetch(WARM_UP, { cache: 'no-store' });
    if (!response.ok) throw new Error(WARM_UP + ' answered ' + response.status);
    return await response.json();
  } catch (e) {
    return { error: e.message };
  }
}

// Polls overlap when the endpoint answers slower than once a second (a burst on a busy machine), and
// their answers may come in any order: only an answer newer than the one shown is shown.
let requested = 0;
let shown = 0;

function newer(seq) {
  if (seq < shown) return false;
  shown = seq;
  return true;
}

async function poll() {
  const seq = ++requested;
  try {
    const warmUp = fetchWarmUp();
    const response = await fetch(ENDPOINT, { cache: 'no-store' });
    if (!response.ok) throw new Error(ENDPOINT + ' answered ' + response.status);
    const body = await response.json();
    const names = Object.keys(body.clients || {});
    if (names.length === 0) throw new Error('no tuned Spanner client in ' + ENDPOINT);
    clientName = clientName && names.includes(clientName) ? clientName : names[0];
    if (!newer(seq)) return;
    renderAdvice(body.advice || []);
    render(body.clients[clientName]);
    renderWarmUp(body.clients[clientName], await warmUp);
    $('status').textContent = 'updated ' + new Date().toLocaleTimeString() + ' from /' + ENDPOINT;
  } catch (e) {
    $('status').textContent = 'cannot read /' + ENDPOINT + ': ' + e.message;
  }
}

function render(client) {
  lastClient = client;
  $('client-name').textContent = `client '${clientName}' · ${client.pool.kind}, ${client.pool.size} channels · ` +
    `google-cloud-spanner ${client.versions.googleCloudSpanner}, grpc-gcp ${client.versions.grpcGcp || '–'}`;
  renderChannels(client);
  renderFeatures(client.features);
  renderCounters(client);
  renderOperations(client.observations);
  renderExperiment(client.experiment);
}

// Per RPC method: operations, P50, P99 and the frontend's share (the endpoint's observations).
function renderOperations(observations) {
  if (!observations) return;
  const ms = (s) => (s * 1000).toFixed(s < 0.01 ? 2 : 1) + ' ms';
  const state = el('div', { class: 'dim', id: 'operations-state' },
    `observations ${observations.state}` + (observations.reason ? ` (${observations.reason})` : '') +
    (observations.builtInMetricsExport === true ? ' · the client also exports its built-in metrics to Cloud Monitoring'
      : observations.builtInMetricsExport === false ? ' · the client exports no built-in metrics' : ''));
  if (observations.operations.length === 0) {
    $('operations').replaceChildren(state, el('div', { class: 'dim' }, 'no operation yet'));
    return;
  }
  const head = el('tr', {}, ...['method', 'operations', 'P50', 'P99', 'frontend'].map((h) => el('th', {}, h)));
  const rows = observations.operations.map((o) => el('tr', { 'data-method': o.method },
    el('td', {}, o.method), el('td', {}, o.count.toLocaleString()), el('td', {}, ms(o.p50Seconds)),
    el('td', {}, ms(o.p99Seconds)),
    el('td', {}, o.frontendShare == null ? '–' : Math.round(o.frontendShare * 100) + ' %')));
  $('operations').replaceChildren(el('table', { id: 'operations-table' }, head, ...rows), state);
}

function renderChannels(client) {
  const byIndex = new Map(client.channels.map((c) => [c.channel, c]));
  const size = Math.max(client.pool.size, ...client.channels.map((c) => c.channel + 1), 0);
  const rows = [];
  const since = [];
  for (let i = 0; i < size; i++) {
    const c = byIndex.get(i) || { channel: i, activeStreams: 0, calls: 0 };
    since.push(c.calls - ((baseline && baseline.get(i)) || 0));
  }
  const maxCalls = Math.max(1, ...since);
  const maxActive = Math.max(1, ...client.channels.map((c) => c.activeStreams));
  for (let i = 0; i < size; i++) {
    const c = byIndex.get(i) || { channel: i, activeStreams: 0, calls: 0 };
    rows.push(el('div', { class: 'channel', 'data-channel': i, 'data-calls': since[i], 'data-active': c.activeStreams },
      el('span', {}, '#' + i),
      el('div', { class: 'bars' },
        el('div', { class: 'bar calls', style: `width:${(100 * since[i]) / maxCalls}%` }),
        el('div', { class: 'bar active', style: `width:${(100 * c.activeStreams) / maxActive}%` })),
      el('span', { class: 'nums' }, `${since[i]} calls · ${c.activeStreams} active` +
        (c.latencyEstimateSeconds != null ? ` · ${(c.latencyEstimateSeconds * 1000).toFixed(1)} ms` : ''))));
  }
  $('channels').replaceChildren(...rows);
  $('imbalance').textContent = client.imbalance == null ? 'no calls in the window' : client.imbalance.toFixed(2);
  $('calls-legend').textContent = baseline ? 'calls since the last burst began' : 'calls since start';
  window.lastChannels = client.channels;
}

// Whether the client's channels are warm, what the warm-up took and sent (from /sample/warm-up), and
// each channel's connection and priming (from the endpoint's channels).
function renderWarmUp(client, answer) {
  const box = $('warm-up');
  const w = answer.clients && answer.clients[clientName];
  if (!w) {
    box.dataset.state = 'unknown';
    box.replaceChildren(el('div', { class: 'dim' },
      answer.error ? 'cannot read /' + WARM_UP + ': ' + answer.error : 'no warm-up reported for this client'));
  } else if (!w.watched) {
    box.dataset.state = 'not-watched';
    box.replaceChildren(el('div', { class: 'dim' }, 'not watched on this client: ' +
      'spanner.tuning.warm-up.enabled=false, or the client has no channel picker'));
  } else {
    const state = w.warm ? 'warm' : 'cold';
    box.dataset.state = state;
    const row = (key, value) => el('div', { class: 'counter', 'data-warm-up': key },
      el('span', {}, WARM_UP_ROWS[key][0], el('div', { class: 'hint' }, WARM_UP_ROWS[key][1])),
      el('span', { class: 'value' }, value));
    const head = el('div', { class: 'warm-head' }, el('span', { class: 'state ' + state }, w.warm ? 'warm' : 'not warm'),
      w.warm ? ' every channel connected and primed'
        : w.sessionKnown ? ' some connections are not up or not primed yet'
          : ' no session to prime with yet: the app has not asked the client for a database');
    box.replaceChildren(head,
      row('channelsWarm', `${w.warmChannels} of ${w.channels}`),
      row('warmUpTook', w.warmUpSeconds == null ? 'not yet' : `${w.warmUpSeconds.toFixed(2)} s`),
      row('primed', w.primed.toLocaleString()),
      row('coldReads', w.coldReads.toLocaleString()),
      row('refreshed', `${w.refreshed.toLocaleString()} (refresh-after ${w.refreshAfter})`));
  }
  const now = Date.now();
  const rows = [...client.channels].sort((a, b) => a.channel - b.channel).map((c) => {
    const since = c.connectedSince ? new Date(c.connectedSince) : null;
    const primed = c.primed == null ? '–' : c.primed ? 'primed' : 'cold';
    return el('tr', { 'data-channel': c.channel, 'data-primed': String(c.primed) },
      el('td', {}, '#' + c.channel),
      el('td', {}, since ? `${since.toLocaleTimeString()} (${age(now - since.getTime())} ago)` : 'not connected'),
      el('td', { class: 'primed-' + primed }, primed));
  });
  const head = el('tr', {}, ['channel', 'connected since', 'primed'].map((h) => el('th', {}, h)));
  $('warm-channels').replaceChildren(...(rows.length ? [head, ...rows] : []));
}

function age(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return s + ' s';
  const m = Math.round(s / 60);
  return m < 120 ? m + ' min' : (m / 60).toFixed(1) + ' h';
}

// One row per finding of the advice rules: the property, why, and the fix (docs/advice.md).
function renderAdvice(advice) {
  if (advice.length === 0) {
    $('advice').replaceChildren(el('div', { class: 'dim', id: 'advice-none' },
      'No advice: nothing in this configuration works against itself on this client line.'));
    return;
  }
  $('advice').replaceChildren(...advice.map((a) => el('div', { class: 'advice' },
    el('strong', {}, a.property),
    el('div', {}, a.reason),
    el('div', { class: 'fix' }, 'Fix: ' + a.fix))));
}

function renderFeatures(features) {
  featureStates = features;
  const rows = Object.entries(features).map(([id, f]) => {
    const explain = el('div', { class: 'explain' });
    if (SWITCHABLE.has(id) && (f.state === 'on' || f.state === 'off')) {
      const box = el('input', { type: 'checkbox', id: 'switch-' + id, checked: f.state === 'on' });
      box.addEventListener('change', () => switchFeature(id, box.checked, box));
      explain.append(el('label', { class: 'switch' }, box, f.state === 'on' ? 'on: switch off' : 'off: switch on'));
    }
    explain.append(el('div', {}, EXPLAIN[id] || ''));
    if (f.state === 'native') explain.append(el('div', { class: 'native-note' }, 'Native: ' + (NATIVE_MEANS[id] || f.reason || '')));
    else if (f.reason) explain.append(el('div', {}, f.reason));
    return el('div', { class: 'feature', id: 'feature-' + id, 'data-state': f.state },
      el('strong', {}, id), el('span', { class: 'state ' + f.state }, f.state), explain);
  });
  $('features').replaceChildren(...rows);
}

function renderCounters(client) {
  const rows = [];
  const add = (key, value) => {
    let shown = value.toLocaleString();
    if (key === 'singleUseRouted' && featureStates['single-use-distribution']?.state === 'native') {
      shown = 'native: the client routes these itself';
    }
    rows.push(el('div', { class: 'counter', 'data-counter': key },
      el('span', {}, words(key), el('div', { class: 'hint' }, COUNTER_MEANS[key] || '')),
      el('span', { class: 'value' }, shown)));
  };
  // Every number the endpoint reports besides the channels and the imbalance is a counter;
  // counters a newer starter adds show up without a change here.
  const walk = (obj, prefix) => Object.entries(obj).forEach(([k, v]) => {
    const key = prefix ? prefix + k.charAt(0).toUpperCase() + k.slice(1) : k;
    if (typeof v === 'number') add(key, v);
    else if (v && typeof v === 'object' && !Array.isArray(v)) walk(v, key);
  });
  const { features, versions, pool, channels, imbalance, experiment, observations, ...rest } = client;
  walk(rest, '');
  if (rows.length === 0) rows.push(el('div', { class: 'dim' }, 'no counters reported'));
  $('counters').replaceChildren(...rows);
}

async function switchFeature(feature, enabled, box) {
  dismiss();
  box.disabled = true;
  try {
    const response = await fetch(ENDPOINT + '/' + encodeURIComponent(clientName), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ feature, enabled }),
    });
    if (!response.ok) throw new Error(await reasonOf(response));
    const client = await response.json();
    if (newer(++requested)) render(client);
  } catch (e) {
    refused('switch of ' + feature, e.message);
    box.checked = !enabled;
  } finally {
    box.disabled = false;
  }
}

// The client's experiment, running or the last one, as GET /actuator/spannertuning shows it.
function renderExperiment(experiment) {
  const box = $('experiment');
  if (!experiment) {
    box.dataset.state = 'none';
    box.replaceChildren(el('div', { class: 'dim' }, 'no experiment started on this client'));
    return;
  }
  box.dataset.state = experiment.state;
  const p = experiment.progress;
  const ratio = (v) => (v == null ? '–' : v.toFixed(2));
  const pct = (v) => (v == null ? '–' : (100 * v).toFixed(2) + ' %');
  const head = `${experiment.state}` + (experiment.reason ? ` (${experiment.reason})` : '') +
    ` · ${experiment.pairs} pairs of ${experiment.slice} slices recorded · ${p.slicesDone} of ${p.slices} slices done` +
    (p.arm ? ` · now ${p.arm}${p.recording ? ', recording' : ', carry-over'}` : '') +
    ` · carry-over ${experiment.carryOver}`;
  const rows = [el('tr', {}, ...['kind', 'calls tuned / stock', 'P50 ratio', 'P99 ratio', '95 % interval',
    'failed tuned / stock', 'verdict'].map((h) => el('th', {}, h)))];
  for (const [kind, r] of Object.entries(experiment.results || {})) {
    rows.push(el('tr', { 'data-kind': kind, 'data-verdict': r.verdict },
      el('td', {}, kind),
      el('td', {}, `${r.calls.tuned} / ${r.calls.stock}`),
      el('td', {}, ratio(r.p50Ratio)),
      el('td', {}, ratio(r.p99Ratio)),
      el('td', {}, r.p99RatioLow == null ? 'needs 6 pairs' : `${ratio(r.p99RatioLow)} – ${ratio(r.p99RatioHigh)}`),
      el('td', {}, `${pct(r.failedRate.tuned)} / ${pct(r.failedRate.stock)}`),
      el('td', { class: 'verdict' }, r.verdict)));
  }
  const warnings = (experiment.warnings || []).map((w) => el('div', { class: 'hint' }, w));
  box.replaceChildren(el('div', { id: 'experiment-head' }, head), el('table', {}, ...rows),
    el('div', { class: 'hint' }, 'Ratios are tuned over stock: below 1 the tuned client is faster.'), ...warnings);
}

async function experimentRequest(method, body) {
  const options = { method, headers: { 'Content-Type': 'application/json' } };
  if (body) options.body = JSON.stringify(body);
  const response = await fetch(ENDPOINT + '/' + encodeURIComponent(clientName) + '/experiment', options);
  if (!response.ok) throw new Error(await reasonOf(response));
  await poll();
}

async function startExperiment(event) {
  event.preventDefault();
  dismiss();
  const body = { duration: $('experiment-duration').value, slice: $('experiment-slice').value };
  if ($('experiment-feature').value) body.feature = $('experiment-feature').value;
  try {
    await experimentRequest('POST', body);
  } catch (e) {
    refused('experiment', e.message);
  }
}

async function stopExperiment() {
  dismiss();
  try {
    await experimentRequest('DELETE');
  } catch (e) {
    refused('stop', e.message);
  }
}

/** The tuned client as the endpoint has it now, or null when it cannot be read. */
async function clientNow() {
  try {
    const response = await fetch(ENDPOINT, { cache: 'no-store' });
    if (!response.ok) return null;
    const body = await response.json();
    return (body.clients || {})[clientName] || null;
  } catch (e) {
    return null;
  }
}

// One row per burst, so that a burst with a feature switched off can be set beside one with it on.
function addHistory(before, after, body) {
  const state = (id) => (before && before.features[id] ? before.features[id].state : '–');
  const delta = (key) => (before && after && typeof after[key] === 'number' ? after[key] - before[key] : '–');
  history.unshift([history.length + 1, state('stream-end-guard'), state('single-use-distribution'), body.reads,
    body.p50Ms.toFixed(1), body.p99Ms.toFixed(1), delta('streamEndGuardSkipped'),
    after && after.imbalance != null ? after.imbalance.toFixed(2) : '–']);
  history.length = Math.min(history.length, 6);
  const head = el('tr', {}, ['#', 'guard', 'single-use', 'reads', 'p50 ms', 'p99 ms', 'guard skipped', 'imbalance']
    .map((h) => el('th', {}, h)));
  $('history').replaceChildren(head, ...history.map((row) => el('tr', {}, row.map((v) => el('td', {}, v)))));
}

async function burst(event) {
  event.preventDefault();
  dismiss();
  const button = $('burst');
  const result = $('burst-result');
  button.disabled = true;
  result.className = 'result';
  result.textContent = 'running…';
  result.dataset.done = 'false';
  baseline = new Map((window.lastChannels || []).map((c) => [c.channel, c.calls]));
  // The counters read as the burst starts and once it is done, not the last poll's: a poll's answer
  // may be older than the click.
  const before = await clientNow();
  try {
    const params = new URLSearchParams({ rate: $('rate').value, length: $('length').value });
    const response = await fetch('load/burst?' + params, { method: 'POST' });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.status);
    result.textContent = `${body.reads} reads in ${(body.elapsedMs / 1000).toFixed(1)} s ` +
      `(${body.achievedRate.toFixed(0)}/s): p50 ${body.p50Ms.toFixed(1)} ms, p99 ${body.p99Ms.toFixed(1)} ms, ` +
      `${body.errors} errors` + (body.firstError ? ` (${body.firstError})` : '');
    addHistory(before, await clientNow(), body);
    result.dataset.done = 'true';
    await poll();
  } catch (e) {
    result.className = 'result error';
    result.textContent = 'burst failed: ' + e.message;
  } finally {
    button.disabled = false;
    poll();
  }
}

$('burst-form').addEventListener('submit', burst);
$('experiment-form').addEventListener('submit', startExperiment);
$('experiment-stop').addEventListener('click', stopExperiment);
$('notice-dismiss').addEventListener('click', dismiss);
$('write-example').textContent = `curl -X POST '${location.origin}/singers/1/albums/1/sales?copies=10'`;
loadBackend();
poll();
setInterval(poll, 1000);
