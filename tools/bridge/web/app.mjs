// The bridge's page: the token, the actor list (with agent status), and one TerminalSession for
// the actor named in the URL (?actor=NAME&role=controller|viewer). docs/bridge.md, "The page".
import { Terminal } from '/vendor/xterm.mjs';
import { FitAddon } from '/vendor/addon-fit.mjs';
import { Unicode11Addon } from '/vendor/addon-unicode11.mjs';
import { TerminalSession } from '/session.mjs';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

// The token: from a #token= link (then kept in this browser and removed from the address bar),
// else the one kept earlier, else asked for.
function takeToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get('token')) {
    localStorage.setItem('backscroll.token', hash.get('token'));
    history.replaceState(null, '', location.pathname + location.search);
  }
  return localStorage.getItem('backscroll.token');
}

function askToken() {
  $('login').hidden = false;
  $('login').onsubmit = (e) => {
    e.preventDefault();
    localStorage.setItem('backscroll.token', $('token').value.trim());
    location.reload();
  };
}

async function api(path, token) {
  const r = await fetch(path, { headers: { Authorization: `Bearer ${token}` } });
  if (r.status === 401) throw Object.assign(new Error('unauthorized'), { unauthorized: true });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error?.message || `HTTP ${r.status}`);
  return body;
}

function showActors(actors, current) {
  const list = $('actor-list');
  list.replaceChildren(...actors.map((a) => {
    const li = document.createElement('li');
    const link = document.createElement('a');
    const q = new URLSearchParams({ actor: a.name, role: params.get('role') || 'viewer' });
    link.href = `/?${q}`;
    const name = document.createElement('span');
    name.textContent = a.name + (a.name === current ? ' •' : '');
    const state = document.createElement('span');
    state.textContent = a.state;
    const agent = document.createElement('span');
    agent.className = `agent-${a.agent_status || 'unknown'}`;
    agent.textContent = a.agent_status && a.agent_status !== 'unknown' ? `${a.agent || 'agent'}: ${a.agent_status}` : '';
    link.append(name, state, agent);
    li.append(link);
    return li;
  }));
}

async function main() {
  const token = takeToken();
  if (!token) return askToken();
  const actor = params.get('actor');
  const controller = params.get('role') === 'controller';
  $('controller').checked = controller;
  $('controller').onchange = () => {
    const q = new URLSearchParams(location.search);
    q.set('role', $('controller').checked ? 'controller' : 'viewer');
    location.search = q.toString();
  };
  $('actors-toggle').onclick = () => {
    const nav = $('actors');
    nav.hidden = !nav.hidden;
    $('actors-toggle').setAttribute('aria-expanded', String(!nav.hidden));
  };
  const refreshActors = async () => {
    try {
      const { actors } = await api('/api/actors', token);
      showActors(actors, actor);
      return actors;
    } catch (e) {
      if (e.unauthorized) {
        localStorage.removeItem('backscroll.token');
        askToken();
      }
      return [];
    }
  };
  const actors = await refreshActors();
  setInterval(refreshActors, 3000);
  if (!actor) {
    $('actors').hidden = false;
    $('status').textContent = actors.length ? 'choose an actor' : 'no actors (backscroll spawn NAME -- CMD)';
    return;
  }
  $('actor-name').textContent = actor;

  const term = new Terminal({ allowProposedApi: true, scrollback: 10000, fontFamily: 'monospace',
                              disableStdin: !controller, cursorBlink: controller });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.loadAddon(new Unicode11Addon());
  term.unicode.activeVersion = '11';  // the widths libvterm and programs use (docs/snapshot.md)
  term.open($('terminal'));
  fit.fit();

  const status = $('status');
  const session = new TerminalSession({
    actor, controller, term, fit, token,
    onState(state, detail) {
      status.textContent = detail ? `${state}: ${detail}` : state;
      status.className = state === 'live' ? '' : ['reconnecting', 'catching-up', 'connecting'].includes(state) ? 'warn' : 'bad';
      if (['exited', 'gone', 'refused', 'unauthorized'].includes(state)) {
        $('ended').hidden = false;
        $('ended-text').textContent = detail || state;
      }
    },
  });
  $('reattach').onclick = () => location.reload();
  // Jump to latest: shown while the view is scrolled up into the history.
  const latest = $('latest');
  const updateLatest = () => {
    const b = term.buffer.active;
    latest.hidden = b.viewportY >= b.baseY;
  };
  term.onScroll(updateLatest);
  term.onWriteParsed(updateLatest);
  latest.onclick = () => { term.scrollToBottom(); updateLatest(); };
  // Fit the terminal to the pane; a controller's new size goes to the actor once it settles.
  let fitTimer = null;
  new ResizeObserver(() => {
    clearTimeout(fitTimer);
    fitTimer = setTimeout(() => { if (!session.catchingUp) fit.fit(); }, 100);
  }).observe($('pane'));
  window.backscroll = { session, term };  // for tests and the console
  if (controller) term.focus();
  session.connect();
}

main();
