// One actor's terminal in the page: an xterm.js Terminal fed by the bridge's WebSocket
// (docs/bridge.md, "Protocol"), with catch-up (snapshot or resume), acknowledgements, heartbeat
// and reconnect with backoff. The page (app.mjs) owns the DOM around it.
//
// Stream order: every change to the terminal that comes from the stream (a snapshot's reset, a
// `resized`, the end of a catch-up) is made in a write callback, so it happens after xterm.js
// parsed every byte that came before it, never while earlier bytes still wait in its write
// queue. Catch-up hygiene (docs/bridge.md, "Catch-up hygiene"): while xterm.js parses a
// catch-up's bytes, its answers to the terminal queries in them are dropped, and typing waits.

export const ACK_EVERY_BYTES = 64 * 1024;
export const HEARTBEAT_MS = 15000;
const RECONNECT_BASE_MS = 500;
const RECONNECT_MAX_MS = 10000;
const RECONNECT_JITTER = 0.2;
// Typing kept while the page is not live, at most this much (older keys are dropped first).
const MAX_QUEUED_INPUT = 64 * 1024;
// Close codes after which the page never reconnects by itself.
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_REFUSED = 4409;
export const CLOSE_GONE = 4410;

// Delay before reconnect try n (0-based): min(10 s, 0.5 s x 2^n), +-20%.
export function reconnectDelay(n, random = Math.random) {
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** n);
  return Math.round(base * (1 + RECONNECT_JITTER * (2 * random() - 1)));
}

// True when an OSC 4 / 10 / 11 / 12 payload asks for a colour (a `?` in a colour's place).
function oscAsks(ident, data) {
  const parts = data.split(';');
  // OSC 4: index;spec pairs; OSC 10-12: specs for 10, 11, 12, ... from the one named.
  const specs = ident === 4 ? parts.filter((_, i) => i % 2 === 1) : parts;
  return specs.some((spec) => spec === '?');
}

export class TerminalSession {
  // opts: {actor, controller, follow, term, fit, token, onState(state, detail),
  //        onHello(hello), onActorSize(cols, rows), onController(message), onFollowChange()}
  // follow: the terminal keeps the actor's size (the page scales it) instead of fitting the
  // page and resizing the actor (a controller's default).
  constructor(opts) {
    Object.assign(this, opts);
    this.follow = !!this.follow;
    this.state = 'connecting';
    this.tries = 0;
    // Raw cursor of the next byte: known from `resume` and `replayed` on; unknown (null) during
    // a snapshot's catch-up, whose bytes are the snapshot's, not the stream's.
    this.cursor = null;
    this.acked = 0;
    this.catchingUp = false;  // from `snapshot`/`resume` until `replayed` arrived
    // From the write callback before the catch-up's first byte to the one after its last: what
    // xterm.js parses meanwhile is catch-up, and its replies to queries are dropped.
    this.parsingCatchUp = false;
    this.dropReplies = false;  // an OSC query of a catch-up is being answered: drop the answer
    this.swallowed = 0;        // catch-up queries left unanswered (tests, the console)
    this.ended = false;
    this.socket = null;
    this.hello = null;
    this.lastError = null;    // the last `error` from the bridge (a refused attach's reason)
    this.lastCatchUp = null;  // 'snapshot' or 'resume': how the last catch-up started
    this.lastFormat = null;   // the last snapshot's format (snapshot_v1 or raw_replay)
    this.exit = null;         // the `exit` message once the session ended
    this.actorSize = null;    // {cols, rows}: the actor's size at the last byte parsed
    this.streamSize = null;   // {cols, rows}: the actor's size at the last byte received
    this.replaced = false;    // another controller took control from this page
    this.queue = [];          // input waiting for the end of a catch-up: [{data, paste}]
    this.queuedBytes = 0;
    this.installHygiene();
    this.term.onData((data) => {
      if (this.dropReplies) {  // synchronous answer of xterm.js to a catch-up's OSC query
        this.swallowed++;
        return;
      }
      this.input(this.transformInput ? this.transformInput(data) : data);
    });
    this.term.onResize(({ cols, rows }) => this.sendSize(cols, rows));
    document.addEventListener('visibilitychange', () => this.onVisibility());
  }

  // xterm.js answers DA1/DA2 (CSI c, CSI > c), DSR/CPR (CSI n, CSI ? n), DECRQM (CSI $ p,
  // CSI ? $ p) and DECRQSS (DCS $ q) from handlers that do nothing else: while a catch-up is
  // parsed, ours run first and swallow them (return true). OSC 4/10/11/12 may set colours in the
  // same sequence as they ask: xterm.js's handler runs (false), and the answer it gives
  // synchronously, inside the parse, is dropped in onData.
  installHygiene() {
    const parser = this.term.parser;
    const swallow = () => {
      if (!this.parsingCatchUp) return false;
      this.swallowed++;
      return true;
    };
    for (const id of [{ final: 'c' }, { prefix: '>', final: 'c' }, { final: 'n' }, { prefix: '?', final: 'n' },
                      { intermediates: '$', final: 'p' }, { prefix: '?', intermediates: '$', final: 'p' }]) {
      parser.registerCsiHandler(id, swallow);
    }
    parser.registerDcsHandler({ intermediates: '$', final: 'q' }, swallow);
    for (const ident of [4, 10, 11, 12]) {
      parser.registerOscHandler(ident, (data) => {
        if (this.parsingCatchUp && oscAsks(ident, data)) {
          this.dropReplies = true;
          // Cleared once this parse returns (and at the catch-up's end, which may come first
          // within the same parse pass): user input never runs inside a parse.
          queueMicrotask(() => { this.dropReplies = false; });
        }
        return false;
      });
    }
  }

  setState(state, detail = '') {
    if (this.ended) return;  // an ended session's state is final (a late write callback)
    this.state = state;
    this.onState?.(state, detail);
  }

  async connect() {
    if (this.ended) return;
    this.setState(this.tries ? 'reconnecting' : 'connecting', this.tries ? `try ${this.tries + 1}` : '');
    let ticket;
    try {
      const r = await fetch('/api/ticket', { method: 'POST', headers: { Authorization: `Bearer ${this.token}` } });
      if (r.status === 401) return this.end('unauthorized', 'The token was refused.');
      if (!r.ok) throw new Error(`ticket: HTTP ${r.status}`);
      ticket = (await r.json()).ticket;
    } catch (e) {
      return this.retry();
    }
    const q = new URLSearchParams({ ticket, actor: this.actor, role: this.controller ? 'controller' : 'viewer',
                                    visible: document.hidden ? '0' : '1', follow: this.following() ? '1' : '0' });
    if (this.hello && this.cursor !== null) {
      // A resume from the last byte it received (received bytes are written, in order, even
      // when xterm.js has not parsed them yet), at the size it had there.
      q.set('epoch', this.hello.epoch);
      q.set('session', String(this.hello.session));
      q.set('cursor', String(this.cursor));
      if (this.streamSize) {
        q.set('have_cols', String(this.streamSize.cols));
        q.set('have_rows', String(this.streamSize.rows));
      }
    } else if (this.controller && !this.following()) {
      this.fit.fit();
      q.set('cols', String(this.term.cols));
      q.set('rows', String(this.term.rows));
    }
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${proto}//${location.host}/ws?${q}`);
    socket.binaryType = 'arraybuffer';
    this.socket = socket;
    this.lastError = null;
    socket.onmessage = (event) => { if (this.socket === socket) this.onMessage(event.data); };
    socket.onclose = (event) => { if (this.socket === socket) this.onClose(event); };
  }

  // Whether the terminal keeps the actor's size: a viewer always, a controller that chose it,
  // and a controller another one replaced (it no longer sets the size).
  following() {
    return !this.controller || this.follow || this.replaced;
  }

  setFollow(follow) {
    const before = this.following();
    this.follow = follow;
    this.followChanged(before);
  }

  followChanged(before) {
    const now = this.following();
    if (now === before) return;
    // On: the bridge starts the view over with a snapshot at the actor's size. Off: the page
    // fits itself and its size goes to the actor (onResize, or sent here when it already fits).
    this.send({ type: 'follow', follow: now });
    this.onFollowChange?.();
    if (!now && this.state === 'live') {
      this.fit.fit();
      this.sendSize(this.term.cols, this.term.rows);
    }
  }

  // A displaced controller takes the actor's size back: at the page's fitted size when it fits
  // itself, at the size it recorded when it keeps the actor's (docs/protocol.md, "Size ownership").
  takeControl() {
    const message = { type: 'take_control' };
    if (!this.follow) {
      const d = this.fit.proposeDimensions();
      if (d && d.cols >= 1 && d.rows >= 1) Object.assign(message, { cols: d.cols, rows: d.rows });
    }
    this.send(message);
  }

  // Runs `fn` once xterm.js has parsed everything written before this call.
  inOrder(fn) {
    this.term.write('', fn);
  }

  onMessage(data) {
    if (typeof data !== 'string') {
      const bytes = new Uint8Array(data);
      if (this.cursor !== null) this.cursor += bytes.length;
      if (this.catchingUp) {
        this.term.write(bytes);
      } else {
        const at = this.cursor;
        this.term.write(bytes, () => { if (at - this.acked >= ACK_EVERY_BYTES) this.ack(at); });
      }
      return;
    }
    const m = JSON.parse(data);
    switch (m.type) {
      case 'hello':
        this.hello = m;
        this.tries = 0;
        this.onHello?.(m);
        this.heartbeat();
        break;
      case 'snapshot':
        this.lastCatchUp = 'snapshot';
        this.lastFormat = m.format;
        this.cursor = null;  // a drop before `replayed` starts over with a fresh attach
        this.catchingUp = true;
        this.streamSize = { cols: m.cols, rows: m.rows };
        this.setState('catching-up');
        this.inOrder(() => {
          this.parsingCatchUp = true;
          this.term.reset();
          // The snapshot's size; a page that fits itself comes back to its own after it.
          this.setActorSize(m.cols, m.rows, /*resizeTerm=*/true);
        });
        break;
      case 'resume':
        this.lastCatchUp = 'resume';
        this.cursor = m.cursor;
        this.catchingUp = true;
        this.setState('catching-up');
        this.inOrder(() => { this.parsingCatchUp = true; });
        break;
      case 'resized':
        // Every byte before it was written at the old size, every one after at this one.
        this.streamSize = { cols: m.cols, rows: m.rows };
        this.inOrder(() => this.setActorSize(m.cols, m.rows, this.following()));
        break;
      case 'replayed': {
        this.cursor = m.cursor;
        this.catchingUp = false;
        this.inOrder(() => {
          this.parsingCatchUp = false;
          this.dropReplies = false;
          if (this.ended) return;
          this.acked = 0;
          this.ack(m.cursor);
          this.setState('live');
          // A page that fits itself goes back to the pane's size (a controller's new size goes to
          // the actor: onResize); one that follows keeps the actor's.
          if (!this.following()) this.fit.fit();
          this.term.scrollToBottom();
          this.flushInput();
        });
        break;
      }
      case 'exit':
        this.exit = m;
        this.end('ended', m.term_signal ? `signal ${m.term_signal}` : `exit ${m.exit_code}`);
        break;
      case 'error':
        this.lastError = m;
        this.onError?.(m);
        break;
      case 'controller': {
        const mine = this.hello?.attachment;
        this.onController?.(m);
        if (!this.controller || mine === undefined) break;
        const before = this.following();
        if (m.replaced === mine) this.replaced = true;      // it no longer sets the size
        else if (m.attachment === mine) this.replaced = false;  // control came back to it
        this.followChanged(before);
        break;
      }
      case 'pong':
        this.pongDue = 0;
        break;
    }
  }

  // The actor's size as the stream is at it (called in stream order).
  setActorSize(cols, rows, resizeTerm) {
    this.actorSize = { cols, rows };
    if (resizeTerm && (this.term.cols !== cols || this.term.rows !== rows)) this.term.resize(cols, rows);
    this.onActorSize?.(cols, rows);
  }

  ack(cursor) {
    this.acked = cursor;
    this.send({ type: 'ack', cursor });
  }

  send(message) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  // Typing (xterm.js's onData, the key bar): a controller's only. Until the page is live (a
  // catch-up, a reconnect) it waits, in order, and goes out once the catch-up ended.
  input(data, paste = false) {
    if (!this.controller || this.ended || !data) return;
    if (this.state !== 'live' || this.parsingCatchUp || this.catchingUp) {
      this.queue.push({ data, paste });
      this.queuedBytes += data.length;
      while (this.queuedBytes > MAX_QUEUED_INPUT && this.queue.length > 1) {
        this.queuedBytes -= this.queue.shift().data.length;
      }
      return;
    }
    this.send(paste ? { type: 'input', data, paste: true } : { type: 'input', data });
  }

  flushInput() {
    const queue = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    for (const { data, paste } of queue) this.input(data, paste);
  }

  sendSize(cols, rows) {
    if (this.controller && !this.following() && !this.catchingUp && this.state === 'live') {
      this.send({ type: 'resize', cols, rows });
    }
  }

  onVisibility() {
    this.send({ type: 'visible', visible: !document.hidden });
    if (!document.hidden && this.state === 'reconnecting' && !this.timer) this.connect();
  }

  heartbeat() {
    clearInterval(this.pinger);
    this.pinger = setInterval(() => {
      if (this.pongDue && Date.now() > this.pongDue) return this.socket?.close();  // stale: onclose reconnects
      if (!this.pongDue) this.pongDue = Date.now() + 2 * HEARTBEAT_MS;
      this.send({ type: 'ping' });
    }, HEARTBEAT_MS);
  }

  onClose(event) {
    clearInterval(this.pinger);
    this.socket = null;
    this.pongDue = 0;
    if (this.ended) return;
    if (event.code === CLOSE_GONE) {
      this.cursor = null;
      return this.end('gone', 'This session is gone (the actor was restarted, deleted, or the engine restarted).');
    }
    if (event.code === CLOSE_UNAUTHORIZED) return this.end('unauthorized', 'The bridge refused the ticket.');
    if (event.code === CLOSE_REFUSED) {
      // The engine's reason (no_such_actor: "no actor named 'x'"), sent just before the close.
      const why = this.lastError;
      return this.end(why?.code === 'no_such_actor' ? 'no-such-actor' : 'refused',
                      why?.message || event.reason || 'The bridge could not attach.');
    }
    if (event.code === 1000 && event.reason === 'exit') return;
    this.retry();
  }

  retry() {
    if (this.ended) return;
    this.setState('reconnecting', `try ${this.tries + 1}`);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { this.timer = null; this.connect(); }, reconnectDelay(this.tries++));
  }

  end(state, text) {
    this.setState(state, text);
    this.ended = true;
    this.queue = [];
    clearTimeout(this.timer);
    clearInterval(this.pinger);
  }

  close() {
    this.ended = true;
    clearTimeout(this.timer);
    clearInterval(this.pinger);
    this.socket?.close();
  }
}
