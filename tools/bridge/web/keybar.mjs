// The key bar (docs/bridge.md, "The key bar"): keys a phone's keyboard does not have, for a
// controller on a touch device. Esc, Tab, a sticky Ctrl (the next key typed goes out as its
// control character), the arrows (as the program asked for them: application cursor mode),
// Ctrl-C and Paste. Its buttons never take the focus from the terminal, so the phone's keyboard
// stays open.

// The control character Ctrl+`ch` sends (xterm's rules), or null when there is none.
export function controlCharacter(ch) {
  const code = ch.charCodeAt(0);
  if (ch.length !== 1) return null;
  if ((code >= 0x61 && code <= 0x7a) || (code >= 0x40 && code <= 0x5f)) return String.fromCharCode(code & 0x1f);
  const other = { ' ': 0x00, '2': 0x00, '3': 0x1b, '4': 0x1c, '5': 0x1d, '6': 0x1e, '7': 0x1f, '-': 0x1f,
                  '/': 0x1f, '8': 0x7f, '?': 0x7f };
  return ch in other ? String.fromCharCode(other[ch]) : null;
}

// What a pasted text becomes: line ends as Enter (\r, as xterm.js pastes), inside
// ESC[200~ ... ESC[201~ when the program enabled bracketed paste (and never with an end marker
// of its own inside, which would end the paste early).
export function pasteBytes(text, bracketed) {
  const body = text.replace(/\r?\n/g, '\r');
  if (!bracketed) return body;
  return `\x1b[200~${body.replaceAll('\x1b[201~', '')}\x1b[201~`;
}

// A device whose main pointer is a finger (or that has touch at all).
export function isTouchDevice() {
  return matchMedia('(pointer: coarse)').matches || navigator.maxTouchPoints > 0;
}

export class KeyBar {
  // element: the bar's container; session: the TerminalSession; term: its Terminal.
  constructor(element, session, term) {
    this.element = element;
    this.session = session;
    this.term = term;
    this.ctrl = false;
    const keys = [
      ['esc', 'Esc', 'Escape', () => this.send('\x1b')],
      ['tab', 'Tab', 'Tab', () => this.send('\t')],
      ['ctrl', 'Ctrl', 'Ctrl: the next key is sent as its control character', () => this.toggleCtrl()],
      ['left', '←', 'Left', () => this.arrow('D')],
      ['up', '↑', 'Up', () => this.arrow('A')],
      ['down', '↓', 'Down', () => this.arrow('B')],
      ['right', '→', 'Right', () => this.arrow('C')],
      ['ctrl-c', '^C', 'Ctrl-C (interrupt)', () => this.send('\x03')],
      ['paste', 'Paste', 'Paste from the clipboard', () => this.paste()],
    ];
    this.buttons = {};
    element.replaceChildren(...keys.map(([name, label, title, action]) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.dataset.key = name;
      b.textContent = label;
      b.title = title;
      b.setAttribute('aria-label', title);
      b.tabIndex = -1;
      // Keep the focus (and the phone's keyboard) on the terminal.
      b.addEventListener('pointerdown', (e) => e.preventDefault());
      b.addEventListener('mousedown', (e) => e.preventDefault());
      b.addEventListener('click', (e) => {
        e.preventDefault();
        action();
      });
      this.buttons[name] = b;
      return b;
    }));
    this.buttons.ctrl.setAttribute('aria-pressed', 'false');
    // The sticky Ctrl changes the next key typed on the keyboard. xterm.js's answers to the
    // program's queries start with ESC and are left alone.
    session.transformInput = (data) => {
      if (!this.ctrl || data.startsWith('\x1b')) return data;
      this.setCtrl(false);
      const c = controlCharacter(data[0]);
      return c === null ? data : c + data.slice(1);
    };
  }

  setCtrl(on) {
    this.ctrl = on;
    this.buttons.ctrl.setAttribute('aria-pressed', String(on));
    this.buttons.ctrl.classList.toggle('armed', on);
  }

  toggleCtrl() {
    this.setCtrl(!this.ctrl);
  }

  send(data) {
    this.setCtrl(false);
    this.session.input(data);
  }

  // ESC O x in application cursor mode (DECCKM, which xterm.js tracks), ESC [ x otherwise;
  // with Ctrl, ESC [ 1 ; 5 x in both.
  arrow(final) {
    const ctrl = this.ctrl;
    this.setCtrl(false);
    if (ctrl) return this.session.input(`\x1b[1;5${final}`);
    this.session.input(this.term.modes.applicationCursorKeysMode ? `\x1bO${final}` : `\x1b[${final}`);
  }

  async paste() {
    this.setCtrl(false);
    let text = null;
    try {
      text = await navigator.clipboard.readText();
    } catch {
      // No clipboard access (a page over plain http on the LAN is not a secure context, or the
      // user said no): ask for the text instead, which the phone's own paste can fill.
      text = prompt('Text to paste');
    }
    if (!text) return;
    this.session.input(pasteBytes(text, this.term.modes.bracketedPasteMode), true);
  }

  // Shown only for a controller on a touch device; disabled while its session cannot type.
  update({ visible, enabled }) {
    this.element.hidden = !visible;
    for (const b of Object.values(this.buttons)) b.disabled = !enabled;
  }
}
