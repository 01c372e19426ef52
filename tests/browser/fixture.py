#!/usr/bin/env python3
"""Programs the browser test runs as actors (tests/browser/bridge.spec.mjs).

  fixture.py screen
      A full-screen program, like top: on the alternate screen, every row numbered and exactly
      as wide as the terminal, drawn with cursor addressing; drawn again at the new size on
      SIGWINCH. A page that shows it at another width wraps or cuts its rows.

  fixture.py record FILE [--queries]
      Records its input: the terminal in raw mode (Ctrl-C is a byte, not a signal), each read
      appended to FILE as one line of hex, and echoed as "got HEX". With --queries it first
      prints an APC string (which makes the engine's snapshots fall back to a raw replay, so a
      page attaching later replays what follows) and three terminal queries: DA1 (ESC [ c),
      DSR/CPR (ESC [ 6 n) and the background colour (OSC 11 ; ?). Input bytes it acts on:
      Q prints the three queries again, K turns on application cursor keys (DECCKM), P turns
      on bracketed paste.
"""
import os
import signal
import sys
import termios
import tty

QUERIES = b'\x1b[c\x1b[6n\x1b]11;?\x07'


def write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def screen():
    redraw = [True]
    signal.signal(signal.SIGWINCH, lambda *_: redraw.__setitem__(0, True))
    write(b'\x1b[?1049h\x1b[?25l')
    while True:
        if redraw[0]:
            redraw[0] = False
            cols, rows = os.get_terminal_size(1)
            out = ['\x1b[H\x1b[2J']
            for r in range(rows):
                label = f'row {r + 1:02d} of {rows} at {cols} columns |'
                fill = ''.join(chr(ord('a') + (r + i) % 26) for i in range(cols))
                out.append(f'\x1b[{r + 1};1H' + (label + fill)[:cols])
            out.append('\x1b[1;1H')
            write(''.join(out).encode())
        signal.pause()


def record(path, queries):
    tty.setraw(0, termios.TCSANOW)
    if queries:
        write(b'\x1b_backscroll-test\x1b\\' + QUERIES)
    write(b'recording\r\n')
    with open(path, 'a', encoding='ascii') as log:
        while True:
            data = os.read(0, 4096)
            if not data:
                return
            log.write(data.hex() + '\n')
            log.flush()
            write(f'got {data.hex()}\r\n'.encode())
            if b'Q' in data:
                write(QUERIES)
            if b'K' in data:
                write(b'\x1b[?1h')
            if b'P' in data:
                write(b'\x1b[?2004h')


if __name__ == '__main__':
    if sys.argv[1:2] == ['screen']:
        screen()
    elif sys.argv[1:2] == ['record'] and len(sys.argv) >= 3:
        record(sys.argv[2], '--queries' in sys.argv[3:])
    else:
        sys.exit(__doc__)
