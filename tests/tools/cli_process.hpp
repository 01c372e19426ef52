// The `backscroll` CLI as the tests run it: the real binary (BACKSCROLL_BIN_DIR/backscroll) in a
// child process with BACKSCROLL_RUNTIME_DIR set to a directory of the test's, its stdout, stderr
// and exit status captured (CliProcess, run_cli), or on a pseudo-terminal of the test's for
// `attach` (PtyCli). CliTest adds a backscrolld of its own (EngineProcess) to talk to.
//
// As in EngineProcess, every wait has a generous bound (kHangGuard) so a hung CLI fails the test
// instead of hanging it; the bounds are hang guards, never timing assertions. Unexpected
// failures throw std::runtime_error (GoogleTest reports them as failures of the test).
#pragma once

#include <sys/types.h>
#include <termios.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "engine/term/mirror_screen.hpp"
#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {

std::string cli_binary();

// What a finished command left: its wait status and everything it wrote.
struct CliResult {
  int wait_status = 0;
  std::string out;
  std::string err;

  // The exit status, or -1 when the command did not exit normally (killed by a signal).
  int exit_code() const;
  std::vector<std::string> err_lines() const;
};
// "exit 1, stdout '...', stderr '...'": what the assertions print when a command misbehaves.
void PrintTo(const CliResult& result, std::ostream* os);

struct CliOptions {
  std::filesystem::path runtime_dir;      // BACKSCROLL_RUNTIME_DIR of the command
  std::optional<std::string> stdin_data;  // nullopt: stdin is /dev/null
  std::filesystem::path cwd;              // empty: the test's working directory
};

// One `backscroll` process with pipes on stdin (when CliOptions::stdin_data is given; it is
// written at start, before any output is read, and the pipe closed: keep it small, or give it
// to a command that reads stdin before it writes), stdout and stderr.
class CliProcess {
 public:
  CliProcess(const std::vector<std::string>& args, const CliOptions& options);
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;
  ~CliProcess();  // a command still running is killed (SIGKILL) and reaped

  pid_t pid() const noexcept { return pid_; }
  // Reads until stdout holds `needle`; throws when the command ends first or on the hang guard.
  void wait_stdout(std::string_view needle);
  // Reads to the end of both pipes and reaps the command.
  CliResult finish();

 private:
  // Reads what the pipes hold (waits up to `timeout` for something); false once both are closed.
  bool pump(int timeout_ms);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  CliResult result_;
};

// Runs one command to its end.
CliResult run_cli(const std::vector<std::string>& args, const CliOptions& options);

// `backscroll ARGS` with a pseudo-terminal as its controlling terminal and stdin, stdout and
// stderr (what a user's terminal emulator provides). The test holds the master side and keeps
// a descriptor of the slave side open, so the terminal's mode can be read after the CLI ended.
// Like a terminal emulator, it answers the queries the CLI writes (read while waiting): status
// (`CSI 5 n`: `CSI 0 n`), cursor position (`CSI 6 n`: `CSI row ; col R`) and device attributes
// (`CSI c`: `CSI ? 62 ; 22 c`); answers() lists what it answered.
class PtyCli {
 public:
  PtyCli(const std::vector<std::string>& args, const std::filesystem::path& runtime_dir,
         unsigned short cols = 100, unsigned short rows = 30);
  PtyCli(const PtyCli&) = delete;
  PtyCli& operator=(const PtyCli&) = delete;
  ~PtyCli();

  pid_t pid() const noexcept { return pid_; }
  // Types bytes, as the user would.
  void type(std::string_view bytes);
  // Changes the window size, as the user's emulator does (the kernel sends SIGWINCH).
  void resize(unsigned short cols, unsigned short rows);
  // Reads the terminal until everything it showed holds `needle` `count` times; throws on the
  // hang guard or when the terminal closed first.
  void wait_for(std::string_view needle, std::size_t count = 1);
  // Reads the terminal until its rendered screen (an emulator the test keeps, fed everything
  // shown) holds `needle` `count` times within its rows. For text a snapshot may draw: it
  // reaches the terminal as cells, not as the bytes the program wrote.
  void wait_for_screen(std::string_view needle, std::size_t count = 1);
  // The rendered screen's rows, each `cols` characters, joined with '\n'.
  std::string screen_text() const;
  // Everything the terminal showed so far.
  const std::string& screen() const noexcept { return transcript_; }
  // Waits for the CLI to end; its wait status (throws on the hang guard).
  int wait_exit();
  // The terminal's mode now (after the CLI ended: what it restored).
  termios mode() const;
  // The mode the terminal had before the CLI started.
  const termios& original_mode() const noexcept { return original_; }
  // The terminal's screen as the test's emulator shows it.
  const term::MirrorScreen& emulator() const noexcept { return *emulator_; }
  // Every answer to a query it wrote, in order.
  const std::vector<std::string>& answers() const noexcept { return answers_; }
  // Reads what the terminal shows for `how_long` (answering queries meanwhile).
  void read_for(std::chrono::milliseconds how_long);

 private:
  bool read_some(int timeout_ms);
  void answer_queries();

  pid_t pid_ = -1;
  int master_ = -1;
  int slave_ = -1;
  termios original_{};
  std::string transcript_;
  std::size_t query_scan_ = 0;  // transcript_ before this holds no query left to answer
  std::vector<std::string> answers_;
  std::unique_ptr<term::MirrorScreen> emulator_;
};

// A terminal's visible rows, each `cols` characters, joined with '\n'.
std::string screen_rows_text(const term::MirrorScreen& screen);
// Its scrollback lines (oldest first), then its visible rows, each ended by '\n' but the last.
std::string terminal_text(const term::MirrorScreen& screen);

// How often `needle` occurs in `haystack` (occurrences may not overlap).
std::size_t count_of(std::string_view haystack, std::string_view needle);

// The command failed as docs/cli.md says failures look: exit `code`, nothing on stdout, and
// exactly one line on stderr that starts with `prefix` (e.g. "backscroll: usage: ").
::testing::AssertionResult FailsWithOneLine(const CliResult& result, int code,
                                            std::string_view prefix);
// Exit 0 and nothing on stderr.
::testing::AssertionResult Succeeds(const CliResult& result);

// A test with its own engine (started in SetUp, shut down and checked by EngineProcess at the
// end). `cli` runs commands against it with --no-autostart, so a broken connection can never
// start a second, unsupervised engine.
class CliTest : public ::testing::Test {
 protected:
  // The engine's arguments (see EngineConfig); override to change them.
  virtual EngineConfig engine_config() { return {}; }
  void SetUp() override;

  CliResult cli(std::vector<std::string> args, std::optional<std::string> stdin_data = {});
  const std::filesystem::path& runtime_dir() const { return engine_.places().runtime_dir; }

  EngineProcess engine_;
  TempDir scratch_;  // files the test writes (history -o, files its programs write)
};

}  // namespace backscroll::testing
