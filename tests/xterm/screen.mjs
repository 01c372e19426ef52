// Batch driver: @xterm/headless (the emulator browser clients use) as the second emulator of the
// snapshot_v1 contract (tests/engine/term/xterm_equivalence_test.cpp, docs/snapshot.md, "Equivalence
// with xterm.js").
//
// Input (stdin): one JSON object per line
//   {"id": any, "cols": n, "rows": n, "writes": [base64, ...],
//    "history": n (optional, default 0), "probe": base64 (optional),
//    "unicode": "6" | "11" (optional, default "11": character widths; see below),
//    "scrollback": n (optional, default 100000: the scrollback limit)}
// Each write is the decoded bytes (a Uint8Array: xterm.js decodes UTF-8 itself, keeping a
// character split across writes) written in full before the next one: through the write
// buffer's synchronous path where this xterm.js has it (the parser and handlers term.write()
// runs, without its timer: ~3 ms of waiting per write), else term.write() awaited.
// scrollback: xterm.js allocates the whole limit for every terminal (~3 ms at 100000), so a
// caller that knows a bound on the history passes it.
// unicode: xterm.js measures characters with Unicode 6 tables unless the unicode11 addon is
// loaded and activated; browser clients must do that, or every emoji (U+1F300..., U+2615, ...)
// takes one cell where libvterm, glibc's wcwidth and so the programs count two. "11" loads
// @xterm/addon-unicode11 (pinned in package.json) and activates it.
// Output (stdout): one JSON line per case, in input order:
//   {"id": ..., "state": STATE, "probed": STATE (only with "probe": the state after the probe
//    bytes were written on top of the first state)}
// or {"id": ..., "error": "..."}.
//
// STATE:
//   cols, rows
//   alt            the alternate buffer is active
//   x, y           cursor, from the internal buffer: x == cols means a pending wrap (xterm.js
//                  keeps the cursor one past the last column until the next print); with
//                  autowrap off that position is reported as cols - 1 (see below); rawX as is
//   hidden         cursor hidden (DECTCEM): private CoreService.isCursorHidden
//                  (term._core.coreService), the only place xterm.js keeps it
//   cursorStyle, cursorBlink   the cursor as xterm.js draws it: DECSCUSR's style and blink
//                  (private decPrivateModes), else the options (?12 sets options.cursorBlink)
//   title          the last title set (onTitleChange: OSC 0 and 2)
//   modes          term.modes (public), plus mouseEncoding (private CoreMouseService)
//   scrollTop, scrollBottom    the active buffer's scroll region (0-based, inclusive)
//   charset        {gl: glevel, g0, g1, current}: names of the designated sets ("B" for none,
//                  "0" DEC special graphics, "A" UK, "?" other), from the private CharsetService
//   lines          the viewport's rows (the active buffer from ybase): each an array of cells;
//                  a default erased cell is 0, a narrow glyph in the default pen its text, any
//                  other cell is
//                  [chars, width, fgMode, fg, bgMode, bg, flags, underlineStyle, ulMode, ul]
//                  with fgMode/bgMode 0 default, 1 16-colour palette (SGR 30-37, 90-97),
//                  2 256-colour palette (38;5;n), 3 RGB; flags: bold 1, dim 2, italic 4,
//                  underline 8, blink 16, inverse 32, invisible 64, strikethrough 128,
//                  overline 256; underlineStyle 0 none, 1 single, 2 double, 3 curly, 4 dotted,
//                  5 dashed; ulMode/ul: an underline colour of its own (SGR 58), else 0
//   wrapped        per viewport row: xterm.js's isWrapped flag (informational)
//   history        the last `history` scrollback lines above the viewport (oldest first),
//                  cells as above; historyLength: how many scrollback lines exist
//   saved          informational: the active buffer's DECSC slot {x, y (viewport-relative),
//                  fg, bg}
import { createRequire } from 'node:module';
import readline from 'node:readline';

const require = createRequire(import.meta.url);
const { Terminal } = require('@xterm/headless');
const { Unicode11Addon } = require('@xterm/addon-unicode11');

const CM_MASK = 0x3000000;
const HAS_EXTENDED = 0x10000000;
const MODE = { 0: 0, 0x1000000: 1, 0x2000000: 2, 0x3000000: 3 };

function charsetName(cs) {
  if (!cs) return 'B';
  if (cs['q'] === '\u2500') return '0';
  if (cs['#'] === '\u00a3') return 'A';
  return '?';
}

function encodeCell(c) {
  const chars = c.getChars();
  const width = c.getWidth();
  const fgMode = MODE[c.getFgColorMode() & CM_MASK];
  const bgMode = MODE[c.getBgColorMode() & CM_MASK];
  const flags = (c.isBold() ? 1 : 0) | (c.isDim() ? 2 : 0) | (c.isItalic() ? 4 : 0) |
    (c.isUnderline() ? 8 : 0) | (c.isBlink() ? 16 : 0) | (c.isInverse() ? 32 : 0) |
    (c.isInvisible() ? 64 : 0) | (c.isStrikethrough() ? 128 : 0) | (c.isOverline() ? 256 : 0);
  const ulStyle = c.isUnderline() ? c.getUnderlineStyle() : 0;
  // An underline colour of its own (SGR 58) only; getUnderlineColor() falls back to the fg.
  const ownUl = (c.bg & HAS_EXTENDED) !== 0 && c.extended && ~c.extended.underlineColor;
  const ulMode = ownUl ? MODE[c.getUnderlineColorMode() & CM_MASK] : 0;
  const ul = ulMode ? c.getUnderlineColor() : 0;
  if (fgMode === 0 && bgMode === 0 && flags === 0 && ulMode === 0 && width === 1) {
    if (chars === '') return 0;
    return chars;
  }
  return [chars, width, fgMode, fgMode ? c.getFgColor() : 0, bgMode, bgMode ? c.getBgColor() : 0,
    flags, ulStyle, ulMode, ul];
}

function encodeLine(line, cols, cell) {
  const out = new Array(cols);
  for (let x = 0; x < cols; x++) {
    out[x] = line ? encodeCell(line.getCell(x, cell)) : 0;
  }
  return out;
}

function observe(term, title, history) {
  const core = term._core;
  const buf = term.buffer.active;
  const ibuf = core._bufferService.buffer;
  const cols = term.cols;
  const rows = term.rows;
  const cell = buf.getNullCell();
  const lines = [];
  const wrapped = [];
  for (let y = 0; y < rows; y++) {
    const line = buf.getLine(buf.baseY + y);
    lines.push(encodeLine(line, cols, cell));
    wrapped.push(line ? line.isWrapped : false);
  }
  const hist = [];
  const n = Math.min(history, buf.baseY);
  for (let i = buf.baseY - n; i < buf.baseY; i++) hist.push(encodeLine(buf.getLine(i), cols, cell));
  const cs = core._charsetService;
  const dpm = core.coreService.decPrivateModes;
  return {
    cols, rows,
    alt: buf.type === 'alternate',
    // With autowrap off xterm.js also leaves x == cols after printing in the last column; the
    // next character overwrites that column as in libvterm, so that is column cols - 1.
    x: !dpm.wraparound && ibuf.x >= cols ? cols - 1 : ibuf.x,
    rawX: ibuf.x,
    y: ibuf.y,
    hidden: core.coreService.isCursorHidden,
    // What the renderer uses: DECSCUSR's values, else the options (which ?12 sets).
    cursorStyle: dpm.cursorStyle ?? core.optionsService.rawOptions.cursorStyle,
    cursorBlink: dpm.cursorBlink ?? core.optionsService.rawOptions.cursorBlink,
    title,
    modes: { ...term.modes, mouseEncoding: core.coreMouseService.activeEncoding },
    scrollTop: ibuf.scrollTop,
    scrollBottom: ibuf.scrollBottom,
    charset: {
      gl: cs.glevel,
      g0: charsetName(cs._charsets[0]),
      g1: charsetName(cs._charsets[1]),
      current: charsetName(cs.charset),
    },
    lines,
    wrapped,
    history: hist,
    historyLength: buf.baseY,
    saved: {
      x: ibuf.savedX, y: ibuf.savedY - ibuf.ybase,
      fg: ibuf.savedCurAttrData.fg, bg: ibuf.savedCurAttrData.bg,
    },
  };
}

function write(term, data) {
  const buffer = term._core?._writeBuffer;
  if (typeof buffer?.writeSync === 'function') return buffer.writeSync(data);
  return new Promise((resolve) => term.write(data, resolve));
}

async function run(c) {
  const term = new Terminal({
    cols: c.cols, rows: c.rows, scrollback: c.scrollback ?? 100000, allowProposedApi: true,
  });
  if ((c.unicode ?? '11') === '11') {
    term.loadAddon(new Unicode11Addon());
    term.unicode.activeVersion = '11';
  }
  let title = '';
  term.onTitleChange((t) => { title = t; });
  for (const w of c.writes) await write(term, Buffer.from(w, 'base64'));
  const out = { id: c.id, state: observe(term, title, c.history ?? 0) };
  if (c.probe !== undefined) {
    await write(term, Buffer.from(c.probe, 'base64'));
    out.probed = observe(term, title, c.history ?? 0);
  }
  term.dispose();
  return out;
}

// An exception thrown inside xterm.js's write queue is not the awaiting case's: report it short
// (node would print the minified line) and end, so the test sees the process end.
process.on('uncaughtException', (e) => {
  process.stderr.write(`screen.mjs: uncaught exception: ${String(e && e.stack || e).slice(0, 4000)}\n`);
  process.exit(70);
});

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let out;
  try {
    const c = JSON.parse(line);
    out = await run(c);
  } catch (e) {
    let id = null;
    try { id = JSON.parse(line).id; } catch { /* not JSON */ }
    out = { id, error: String(e && e.stack || e) };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}
