// The bridge's page: the token, the actor list (with agent status), and one TerminalSession for
// the actor named in the URL (?actor=NAME&role=controller|viewer). docs/bridge.md, "The page".
import { Terminal } from '/vendor/xterm.mjs';
import { FitAddon } from '/vendor/addon-fit.mjs';
import { Unicode11Addon } from '/vendor/addon-unicode11.mjs';
import { TerminalSession } from '/session.mjs';
import { KeyBar, isTouchDevice } from '/keybar.mjs';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

// Font sizes (CSS pixels) of a terminal kept at the actor's size: as large as fits the pane, at
// most MAX; below MIN it stays at MIN and the pane pans (and the page can be pinch-zoomed).
// 6 px still fits a 100-column screen on a 412-pixel-wide phone.
const MIN_FONT_PX = 6;
const MAX_FONT_PX = 16;
const FIT_FONT_PX = 15;  // a terminal that fits the page (xterm.js's default, as before)

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
    // What runs in it now (the foreground program), else what it was spawned with.
    const command = document.createElement('span');
    command.className = 'command';
    command.textContent = (a.foreground?.argv?.length ? a.foreground.argv : a.argv || []).join(' ');
    const agent = document.createElement('span');
    agent.className = `agent-${a.agent_status || 'unknown'}`;
    agent.textContent = a.agent_status && a.agent_status !== 'unknown' ? `${a.agent || 'agent'}: ${a.agent_status}` : '';
    link.append(name, state, command, agent);
    li.append(link);
    return li;
  }));
}

// The header's words for a session state, its colour class, and the notice under the screen
// (null: none).
function describe(state, detail) {
  switch (state) {
    case 'live': return { text: 'live', cls: '' };
    case 'connecting': return { text: 'connecting', cls: 'warn' };
    case 'catching-up': return { text: 'catching up', cls: 'warn' };
    case 'reconnecting': return { text: detail ? `reconnecting (${detail})` : 'reconnecting', cls: 'warn' };
    case 'ended': return { text: `ended (${detail})`, cls: 'bad', notice: `The program ended (${detail}).` };
    case 'no-such-actor': return { text: detail, cls: 'bad', notice: detail };
    case 'gone': return { text: 'gone', cls: 'bad', notice: detail };
    case 'refused': return { text: `refused: ${detail}`, cls: 'bad', notice: detail };
    case 'unauthorized': return { text: 'unauthorized', cls: 'bad', notice: detail };
    default: return { text: detail ? `${state}: ${detail}` : state, cls: 'bad' };
  }
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

  // A controller fits the page and sizes the actor, unless it chose "fit the actor" (kept in
  // this browser; ?fit=actor or ?fit=page in the URL overrides it).
  const fitChoice = params.get('fit') || localStorage.getItem('backscroll.fit') || 'page';
  const term = new Terminal({ allowProposedApi: true, scrollback: 10000, fontFamily: 'monospace',
                              fontSize: FIT_FONT_PX, disableStdin: !controller, cursorBlink: controller });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.loadAddon(new Unicode11Addon());
  term.unicode.activeVersion = '11';  // the widths libvterm and programs use (docs/snapshot.md)
  term.open($('terminal'));

  const terminalBox = $('terminal');
  let session = null;
  const following = () => !session || session.following();

  // Kept at the actor's size: the font that makes its columns (and rows) fit the pane.
  const scaleToActor = () => {
    const screen = term.element?.querySelector('.xterm-screen');
    if (!screen) return;
    const style = getComputedStyle(terminalBox);
    const width = terminalBox.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const height = terminalBox.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    const measure = () => screen.getBoundingClientRect();
    let size = term.options.fontSize;
    const now = measure();
    if (now.width > 0 && now.height > 0 && width > 0 && height > 0) {
      // The cell grows with the font (nearly linearly): one estimate, then down until it fits.
      size = Math.min(MAX_FONT_PX, size * width / now.width, size * height / now.height);
      size = Math.max(MIN_FONT_PX, Math.floor(size * 4) / 4);
      term.options.fontSize = size;
      for (let i = 0; i < 12 && size > MIN_FONT_PX; i++) {
        const r = measure();
        if (r.width <= width && r.height <= height) break;
        size = Math.max(MIN_FONT_PX, size - 0.25);
        term.options.fontSize = size;
      }
    }
    terminalBox.classList.toggle('pan', measure().width > width + 0.5);
  };
  const layout = () => {
    terminalBox.classList.toggle('follow', following());
    if (following()) {
      scaleToActor();
    } else {
      if (term.options.fontSize !== FIT_FONT_PX) term.options.fontSize = FIT_FONT_PX;
      terminalBox.classList.remove('pan');
      fit.fit();
    }
  };

  const status = $('status');
  const keys = $('keys');
  let bar = null;
  const updateControls = () => {
    const live = session && !session.ended;
    $('fit-box').hidden = !controller;
    $('take-control').hidden = !(controller && live && session?.replaced);
    $('fit-actor').checked = controller && session?.follow;
    $('fit-actor').disabled = !live;
    bar?.update({ visible: controller && live && isTouchDevice(), enabled: controller && live });
  };
  let noteTimer = null;
  session = new TerminalSession({
    actor, controller, term, fit, token, follow: controller && fitChoice === 'actor',
    onState(state, detail) {
      const d = describe(state, detail);
      status.textContent = d.text;
      status.className = d.cls;
      status.dataset.state = state;
      if (d.notice) {
        $('ended').hidden = false;
        $('ended-text').textContent = d.notice;
      }
      updateControls();
    },
    onError(error) {
      // A refused request while attached (read_only, stale_controller, ...): shown for a while.
      // A refused attach's reason is the header's own (onState).
      if (session.state !== 'live') return;
      $('note').textContent = `${error.code}: ${error.message}`;
      clearTimeout(noteTimer);
      noteTimer = setTimeout(() => { $('note').textContent = ''; }, 6000);
    },
    onActorSize(cols, rows) {
      $('size').textContent = `${cols}×${rows}`;
      if (following()) scaleToActor();
    },
    onController(m) {
      if (controller && session.hello && m.replaced === session.hello.attachment) {
        $('note').textContent = 'another client took control';
      } else if (controller && session.hello && m.attachment === session.hello.attachment) {
        $('note').textContent = '';
      }
      setTimeout(updateControls);  // after the session took it in
    },
    onFollowChange() {
      layout();
      updateControls();
    },
  });
  window.backscroll = { session, term };  // for tests and the console
  window.__term = term;
  if (controller) {
    bar = new KeyBar(keys, session, term);
  }
  $('fit-actor').onchange = () => {
    const choice = $('fit-actor').checked ? 'actor' : 'page';
    localStorage.setItem('backscroll.fit', choice);
    session.setFollow(choice === 'actor');
  };
  $('take-control').onclick = () => session.takeControl();
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
  // The terminal follows the pane: refitted (a controller's new size goes to the actor once it
  // settles), or rescaled when it keeps the actor's size.
  let fitTimer = null;
  new ResizeObserver(() => {
    clearTimeout(fitTimer);
    fitTimer = setTimeout(() => { if (!session.catchingUp) layout(); }, 100);
  }).observe($('pane'));
  layout();
  updateControls();
  if (controller) term.focus();
  session.connect();
}

main();
