// Terminal output workloads shared by the benchmarks: what coding agents, builds and TUIs print.
// Each generator returns about `bytes` bytes (whole lines or frames).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace backscroll::bench {

// A service log: ~75-column plain ASCII lines, CR LF as a cooked PTY delivers them.
inline std::string log_lines(std::size_t bytes) {
  std::string out;
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    out += "2026-11-30T06:00:00.000Z INFO worker[" + std::to_string(i % 16) +
           "] processed request " + std::to_string(i) + " in 3 ms, status ok\r\n";
  }
  return out;
}
// Build output with SGR colours (bold, green, magenta warnings), as ninja and g++ print it.
inline std::string build_output(std::size_t bytes) {
  std::string out;
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    out += "\x1b[1m[" + std::to_string(i % 100) +
           "%]\x1b[0m \x1b[32mBuilding CXX object\x1b[0m "
           "engine/CMakeFiles/unit" +
           std::to_string(i) + ".dir/file.cpp.o\r\n";
    if (i % 7 == 0) {
      out += "\x1b[1mfile.cpp:" + std::to_string(i) +
             ":5: \x1b[35mwarning: \x1b[0munused "
             "variable \x1b[1m'x'\x1b[0m [\x1b[35m-Wunused\x1b[0m]\r\n";
    }
  }
  return out;
}
// Colored build output as compilers, ls and highlighters print it (issue 20): gcc diagnostics
// (bold locations, `ESC [ K` after every SGR, UTF-8 quotes, the option linked to gcc's manual
// with OSC 8 since 2026-12-05, the source line with its caret),
// `ls --color` listings, and source code highlighted with 256-colour and truecolor SGR (bat,
// delta: a colour per token kind, many distinct colours over a file).
inline std::string colored_build(std::size_t bytes) {
  static constexpr const char* kTokens[] = {"fn",   "let", "match",  "return", "self", "Some",
                                            "impl", "pub", "struct", "u64",    "Vec",  "String"};
  std::string out;
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    const std::string n = std::to_string(i);
    switch (i % 6) {
      case 0:  // a gcc warning (its option linked to the manual, as gcc 12 prints it on a
               // terminal), its source line and caret
        out += "\x1b[01m\x1b[Ksrc/module" + n + ".cpp:" + std::to_string(i % 900 + 1) +
               ":17:\x1b[m\x1b[K \x1b[01;35m\x1b[Kwarning: \x1b[m\x1b[Kunused variable "
               "\u2018\x1b[01m\x1b[Kcount" +
               n +
               "\x1b[m\x1b[K\u2019 [\x1b[01;35m\x1b[K"
               "\x1b]8;;https://gcc.gnu.org/onlinedocs/gcc/Warning-Options.html"
               "#index-Wunused-variable\x07-Wunused-variable\x1b]8;;\x07\x1b[m\x1b[K]\r\n";
        out += "  " + std::to_string(i % 900 + 1) + " |     int \x1b[01;35m\x1b[Kcount" + n +
               "\x1b[m\x1b[K = compute(" + n +
               ");\r\n      |         \x1b[01;35m\x1b[K^~~~~\x1b[m"
               "\x1b[K\r\n";
        break;
      case 1:  // ls --color
        out += "\x1b[0m\x1b[01;34mbuild" + n +
               "\x1b[0m  \x1b[01;32mrun.sh\x1b[0m  "
               "\x1b[01;36mlink" +
               n + "\x1b[0m  notes.txt  \x1b[01;31marchive.tar.gz\x1b[0m\r\n";
        break;
      default: {  // a highlighted source line: truecolor per token, 256-colour comments
        const unsigned r = static_cast<unsigned>(i * 37 % 256);
        const unsigned g = static_cast<unsigned>(i * 91 % 256);
        const unsigned b = static_cast<unsigned>(i * 53 % 256);
        out += "\x1b[38;5;242m" + std::to_string(i % 9000 + 1) + "\x1b[0m \x1b[38;2;" +
               std::to_string(r) + ";" + std::to_string(g) + ";" + std::to_string(b) + "m" +
               kTokens[i % 12] + "\x1b[0m \x1b[38;2;166;226;46mvalue_" + n +
               "\x1b[0m(\x1b[38;2;253;151;31m" + n + "\x1b[0m) \x1b[38;5;" +
               std::to_string(i % 216 + 16) + "m// note " + n + "\x1b[0m\r\n";
        break;
      }
    }
  }
  return out;
}

// A top-like TUI on the alternate screen: full redraws with cursor addressing, no scrolling.
inline std::string tui_redraws(std::size_t bytes, int rows) {
  std::string out = "\x1b[?1049h";
  for (std::size_t frame = 0; out.size() < bytes; ++frame) {
    out += "\x1b[H\x1b[7m top - frame " + std::to_string(frame) + "\x1b[K\x1b[0m";
    for (int r = 2; r <= rows; ++r) {
      out += "\x1b[" + std::to_string(r) + ";1H";
      out += "\x1b[3" + std::to_string(r % 8) + "m" + std::to_string(1000 + r) + " user  20   0 " +
             std::to_string(frame * 7 % 100000) + " S  1.0  0.3 process-" + std::to_string(r);
      out += "\x1b[0m\x1b[K";
    }
  }
  return out;
}

// A full-screen monitor as ncurses draws it for TERM=xterm-256color (top, htop, btop-like): the
// setup once, then per frame the cursor hidden and shown again, `ESC ( B ESC [ m` (sgr0: G0
// designated US-ASCII, then the reset) after every coloured span, bold and 256-colour SGRs,
// cursor addressing, `ESC [ K`, and UTF-8 meters and box drawing.
inline std::string ncurses_redraws(std::size_t bytes, int rows) {
  const std::string sgr0 = "\x1b(B\x1b[m";
  std::string out = "\x1b[?1049h\x1b[1;" + std::to_string(rows) + "r" + sgr0 +
                    "\x1b[4l\x1b[?7h\x1b[?1h\x1b=\x1b[H\x1b[2J";
  for (std::size_t frame = 0; out.size() < bytes; ++frame) {
    const std::string f = std::to_string(frame);
    out += "\x1b[?25l\x1b[H" + sgr0 + "top - 10:" + std::to_string(frame % 60) +
           " up 3 days,  load average: \x1b[1m0." + std::to_string(frame % 100) + sgr0 +
           "\x1b[K\r\n";
    out += "Cpu [\x1b[38;5;46m" + std::string(frame % 17 + 1, '|') + sgr0 + "\u2588\u258c" +
           std::string(16 - frame % 17, ' ') + "] " + f + "%\x1b[K\r\n";
    out += "\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500" + sgr0 +
           "\x1b[K\r\n";
    out += "\x1b[7m  PID USER      PR  NI    VIRT    RES  %CPU  COMMAND" + sgr0 + "\x1b[K\r\n";
    for (int r = 5; r <= rows; ++r) {
      out += "\x1b[" + std::to_string(r) + ";1H\x1b[1m" + std::to_string(1000 + r) + sgr0 +
             " user      20   0 " + std::to_string((frame * 7 + r) % 100000) + "  \x1b[38;5;" +
             std::to_string(r * 3 % 216 + 16) + "m" + std::to_string(r % 10) + ".0" + sgr0 +
             "  process-" + std::to_string(r) + "\x1b[K";
    }
    out += "\x1b[" + std::to_string(rows) + ";1H\x1b[?25h";
  }
  return out;
}

// Log lines with non-ASCII text: accented letters, CJK (wide) and an emoji per line.
inline std::string utf8_lines(std::size_t bytes) {
  std::string out;
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    out += "r\u00e9sum\u00e9 " + std::to_string(i) +
           " \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 "
           "na\u00efve caf\u00e9 \u00fcber \u2713 \U0001f680 \u03b1\u03b2\u03b3 done\r\n";
  }
  return out;
}

// A shell with integration running many short commands (an agent's tool calls): each prompt
// sets the window title (OSC 0) and marks the prompt, the command and its end (OSC 133 A-D,
// as bash-preexec, kitty and VS Code's shell integration send them); each command prints a few
// lines, some a progress line redrawn with CR while the cursor is hidden. Until 2026-12-07
// each title, mark and mode ended the look ahead's run, so the mirror parsed all of it; they
// are settings the jump replays now (docs/plain-scroll-skip.md).
inline std::string shell_prompts(std::size_t bytes) {
  std::string out;
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    const std::string n = std::to_string(i);
    out += "\x1b]0;dev@build-host: ~/src/project (" + n + ")\x07\x1b]133;A\x07" +
           "\x1b[1;32mdev@build-host\x1b[0m:\x1b[1;34m~/src/project\x1b[0m$ \x1b]133;B\x07" +
           "make test SHARD=" + n + "\r\n\x1b]133;C\x07";
    for (std::size_t k = 0; k < 3 + i % 12; ++k) {
      out += "cc -O2 -Wall -c src/module" + std::to_string(k) + ".c -o build/module" +
             std::to_string(k) + ".o\r\n";
    }
    if (i % 4 == 0) {
      out += "\x1b[?25l";
      for (int p = 0; p <= 100; p += 25) out += "\rtesting [" + std::to_string(p) + "%]";
      out += "\r\n\x1b[?25h";
    }
    out += "\x1b]133;D;" + std::to_string(i % 3 == 0 ? 1 : 0) + "\x07";
  }
  return out;
}

// A workload as a file `cat` prints on a cooked PTY: "\r\n" line ends become "\n" (the PTY's
// ONLCR adds the CR back).
inline std::string as_printed_file(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    out += text[i];
  }
  return out;
}

// A named workload ("log", "build", "color", "utf8", "tui", "ncurses", "prompts") of about
// `bytes`; nullopt
// for another name.
inline std::optional<std::string> workload_named(const std::string& name, std::size_t bytes) {
  if (name == "log") return log_lines(bytes);
  if (name == "build") return build_output(bytes);
  if (name == "color") return colored_build(bytes);
  if (name == "utf8") return utf8_lines(bytes);
  if (name == "tui") return tui_redraws(bytes, 24);
  if (name == "ncurses") return ncurses_redraws(bytes, 24);
  if (name == "prompts") return shell_prompts(bytes);
  return std::nullopt;
}

}  // namespace backscroll::bench
