#!/usr/bin/env python3
"""Records real programs on a pseudo-terminal for the xterm.js equivalence test.

Each recording runs one program on a fresh PTY of 80x24 with TERM=xterm-256color, sends scripted
keystrokes with small delays, and writes every byte the program printed (the PTY master's
output, untouched) to recordings/<name>.bin. The environment is minimal (no user rc files, a
scratch HOME, LANG=C.UTF-8) so that nothing machine-specific ends up in a recording.

Usage: tests/corpus/record.py [NAME ...]     (no name: all of them)
The recordings are committed; the tests never run these programs. docs: tests/corpus/README.md
"""
import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import sys
import tempfile
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
OUT = os.path.join(HERE, "recordings")
COLS, ROWS = 80, 24

NOTES = """Shopping list
=============
- apples
- bread
- coffee (the strong one)
"""


def vim_setup(work):
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write(NOTES)


def numbered_lines(work):
    with open(os.path.join(work, "lines.txt"), "w") as f:
        for i in range(400):
            f.write(f"{i:4d} the quick brown fox jumps over the lazy dog, line {i}\n")


def top_command(work):
    # Only processes this script starts: no other process names, users or command lines.
    sleepers = [os.spawnlp(os.P_NOWAIT, "sleep", "sleep", "30") for _ in range(3)]
    return ["top", "-d", "1", "-p", ",".join(str(p) for p in sleepers)], sleepers


def htop_command(work):
    # As top's: only processes this script starts, and no config file (HOME is scratch).
    sleepers = [os.spawnlp(os.P_NOWAIT, "sleep", "sleep", "30") for _ in range(3)]
    return ["htop", "-d", "10", "-p", ",".join(str(p) for p in sleepers)], sleepers


def ink_setup(work):
    # Ink and React are not Debian packages: point BACKSCROLL_INK_MODULES at a node_modules
    # folder holding them (`npm install ink@6 react@19` in any scratch folder).
    modules = os.environ.get("BACKSCROLL_INK_MODULES")
    if not modules or not os.path.isdir(os.path.join(modules, "ink")):
        sys.exit("ink_agent: set BACKSCROLL_INK_MODULES to a node_modules folder with ink and react")
    shutil.copy(os.path.join(HERE, "ink_agent.mjs"), work)
    os.symlink(os.path.abspath(modules), os.path.join(work, "node_modules"))


# name -> (command or function(work) -> (command, pids to reap), setup, keystrokes)
# keystrokes: (seconds to wait first, bytes to send); after the last one the program must exit.
RECORDINGS = {
    "ls_color": (
        ["ls", "--color=always", "/usr/bin"], None, []),
    "git_log_graph": (
        ["git", "-C", REPO, "--no-pager", "log", "--graph", "--color=always", "--oneline",
         "--all", "-n", "300"], None, []),
    "less": (
        ["less", "/usr/share/common-licenses/GPL-3"], None,
        [(0.8, b" "), (0.5, b" "), (0.5, b"/warranty\r"), (0.5, b"n"), (0.5, b"b"), (0.5, b"G"),
         (0.5, b"g"), (0.5, b"q")]),
    "vim": (
        ["vim", "-N", "-u", "DEFAULTS", "-i", "NONE", "notes.txt"], vim_setup,
        [(1.5, b"G"), (0.3, b"o"), (0.3, "- tea, \u7eff\u8336 (green) \u2615\r".encode()),
         (0.3, b"- caf\xc3\xa9 au lait\x1b"), (0.3, b"gg"), (0.3, b"/bread\r"), (0.3, b"dd"),
         (0.3, b":set number\r"), (0.3, b"u"), (0.3, b":q!\r")]),
    "top": (
        top_command, None, [(3.5, b"q")]),
    # Scrolling back a line at a time: less draws each new top line after RI on the top row.
    "less_back": (
        ["less", "lines.txt"], numbered_lines,
        [(0.8, b"G")] + [(0.02, b"k")] * 60 + [(0.3, b"q")]),
    # Two tmux panes side by side, each printing coloured lines: tmux redraws each pane's rows
    # with CUP, the text and ECH for the rest of the pane (no scroll region is as narrow as a
    # pane), and sets the cursor's blink and visibility after each update. No status line (it
    # shows the time and the host), no config file, its own socket directory.
    "tmux_panes": (
        ["tmux", "-f", "/dev/null", "new-session",
         "sh -c 'sleep 0.5; i=0; while [ $i -lt 150 ]; do echo \"left $i: the quick brown fox\";"
         " i=$((i+1)); done; sleep 1'",
         ";", "set", "-g", "status", "off",
         ";", "split-window", "-h",
         "sh -c 'sleep 0.5; i=0; while [ $i -lt 150 ]; do printf \"\\033[3%dmright %d\\033[m\\n\" $((i%8)) $i;"
         " i=$((i+1)); done; sleep 1.5'"], None, []),
    # htop's meters, process list and function-key bar, redrawn each second.
    "htop": (
        htop_command, None, [(3.5, b"q")]),
    # An Ink program: a scrolling log of finished steps above a box drawn again every 40 ms.
    "ink_agent": (
        ["node", "ink_agent.mjs"], ink_setup, []),
    "man_ls": (
        ["man", "ls"], None, [(1.5, b" "), (0.5, b" "), (0.5, b"/color\r"), (0.5, b"q")]),
}


def record(name):
    command, setup, keys = RECORDINGS[name]
    work = tempfile.mkdtemp(prefix="rec-")
    reap = []
    try:
        if setup:
            setup(work)
        if callable(command):
            command, reap = command(work)
        env = {
            "TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "HOME": work, "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LESSHISTFILE": "-", "MANPAGER": "less", "PAGER": "less",
            "COLUMNS": str(COLS), "LINES": str(ROWS),
            "GIT_CONFIG_NOSYSTEM": "1", "TMUX_TMPDIR": work,
        }
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(work)
            os.execvpe(command[0], command, env)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        os.kill(pid, signal.SIGWINCH)
        out = bytearray()
        start = time.monotonic()
        due = start
        pending = list(keys)
        done = False
        while not done:
            if pending:
                wait = max(0.0, due + pending[0][0] - time.monotonic())
            else:
                wait = 0.5
            ready, _, _ = select.select([fd], [], [], wait)
            if ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    done = True
                out += data
            elif pending:
                delay, key = pending.pop(0)
                due = time.monotonic()
                os.write(fd, key)
            else:
                # No more keys: wait for the program to end (or give up after 10 s).
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    pid = 0
                    done = True
                elif time.monotonic() - start > 30:
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() - start > 60:
                os.kill(pid, signal.SIGKILL)
                break
        # Drain what is left.
        while True:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                break
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        os.close(fd)
        if pid:
            os.waitpid(pid, 0)
        path = os.path.join(OUT, name + ".bin")
        with open(path, "wb") as f:
            f.write(out)
        print(f"{name}: {len(out)} bytes -> {os.path.relpath(path, REPO)}")
    finally:
        for p in reap:
            try:
                os.kill(p, signal.SIGTERM)
                os.waitpid(p, 0)
            except OSError:
                pass
        shutil.rmtree(work, ignore_errors=True)


def main():
    names = sys.argv[1:] or list(RECORDINGS)
    os.makedirs(OUT, exist_ok=True)
    for n in names:
        if n not in RECORDINGS:
            sys.exit(f"unknown recording {n}; known: {', '.join(RECORDINGS)}")
        record(n)


if __name__ == "__main__":
    main()
