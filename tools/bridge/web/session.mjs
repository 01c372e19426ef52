// One actor's terminal in the page: an xterm.js Terminal fed by the bridge's WebSocket
// (docs/bridge.md, "Protocol"), with catch-up (snapshot or resume), acknowledgements, heartbeat
// and reconnect with backoff. The page (app.mjs) owns the DOM around it.

export const ACK_EVERY_BYTES = 64 * 1024;
export const HEARTBEAT_MS = 15000;
const RECONNECT_BASE_MS = 500;
const RECONNECT_MAX_MS = 10000;
const RECONNECT_JITTER = 0.2;
// Close codes after which the page never reconnects by itself.
export const CLOSE_UNAUTHORIZED = 4401;
export const CLOSE_REFUSED = 4409;
export const CLOSE_GONE = 4410;

// Delay before reconnect try n (0-based): min(10 s, 0.5 s x 2^n), +-20%.
export function reconnectDelay(n, random = Math.random) {
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** n);
  return Math.round(base * (1 + RECONNECT_JITTER * (2 * random() - 1)));
}

export class TerminalSession {
  // opts: {actor, controller, term, fit, token, onState(state, detail), onHello(hello)}
  constructor(opts) {
    Object.assign(this, opts);
    this.state = 'connecting';
    this.tries = 0;
    // Raw cursor of the next byte: known from `resume` and `replayed` on; unknown (null) during
    // a snapshot's catch-up, whose bytes are the snapshot's, not the stream's.
    this.cursor = null;
    this.acked = 0;
    this.catchingUp = false;
    this.ended = false;
    this.socket = null;
    this.hello = null;
    this.lastCatchUp = null;  // 'snapshot' or 'resume': how the last catch-up started
    this.term.onData((data) => this.send({ type: 'input', data }));
    this.term.onResize(({ cols, rows }) => this.sendSize(cols, rows));
    document.addEventListener('visibilitychange', () => this.onVisibility());
  }

  setState(state, detail = '') {
    this.state = state;
    this.onState?.(state, detail);
  }

  async connect() {
    if (this.ended) return;
    this.setState(this.tries ? 'reconnecting' : 'connecting');
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
                                    visible: document.hidden ? '0' : '1' });
    if (this.hello && this.cursor !== null) {
      // A resume from the last byte it received (received bytes are written, in order, even
      // when xterm.js has not parsed them yet).
      q.set('epoch', this.hello.epoch);
      q.set('session', String(this.hello.session));
      q.set('cursor', String(this.cursor));
    } else if (this.controller) {
      this.fit.fit();
      q.set('cols', String(this.term.cols));
      q.set('rows', String(this.term.rows));
    }
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${proto}//${location.host}/ws?${q}`);
    socket.binaryType = 'arraybuffer';
    this.socket = socket;
    socket.onmessage = (event) => { if (this.socket === socket) this.onMessage(event.data); };
    socket.onclose = (event) => { if (this.socket === socket) this.onClose(event); };
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
        this.cursor = null;  // a drop before `replayed` starts over with a fresh attach
        this.catchingUp = true;
        this.setState('catching-up');
        this.term.reset();
        this.term.resize(m.cols, m.rows);  // the snapshot's size; the pane's comes back after
        break;
      case 'resume':
        this.lastCatchUp = 'resume';
        this.cursor = m.cursor;
        this.catchingUp = true;
        this.setState('catching-up');
        break;
      case 'replayed': {
        this.cursor = m.cursor;
        this.catchingUp = false;
        this.term.write('', () => {
          this.acked = 0;
          this.ack(m.cursor);
          this.setState('live');
          // Back to the pane's size (a controller's new size goes to the actor: onResize).
          this.fit.fit();
          this.term.scrollToBottom();
        });
        break;
      }
      case 'exit':
        this.end('exited', `The program ended (exit code ${m.exit_code}${m.term_signal ? `, signal ${m.term_signal}` : ''}).`);
        break;
      case 'error':
        this.onState?.(this.state, `${m.code}: ${m.message}`);
        break;
      case 'controller':
        if (this.hello && m.replaced === this.hello.attachment) this.onState?.(this.state, 'another client took control');
        break;
      case 'pong':
        this.pongDue = 0;
        break;
    }
  }

  ack(cursor) {
    this.acked = cursor;
    this.send({ type: 'ack', cursor });
  }

  send(message) {
    if (message.type === 'input' && !this.controller) return;
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  sendSize(cols, rows) {
    if (this.controller && !this.catchingUp && this.state === 'live') this.send({ type: 'resize', cols, rows });
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
    if (event.code === CLOSE_REFUSED) return this.end('refused', event.reason || 'The bridge could not attach.');
    if (event.code === 1000 && event.reason === 'exit') return;
    this.retry();
  }

  retry() {
    if (this.ended) return;
    this.setState('reconnecting');
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { this.timer = null; this.connect(); }, reconnectDelay(this.tries++));
  }

  end(state, text) {
    this.ended = true;
    clearTimeout(this.timer);
    clearInterval(this.pinger);
    this.setState(state, text);
  }

  close() {
    this.ended = true;
    clearTimeout(this.timer);
    clearInterval(this.pinger);
    this.socket?.close();
  }
}
