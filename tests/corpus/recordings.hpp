// The recordings of real programs' output in tests/corpus/recordings (tests/corpus/README.md
// says how record.py made each): every test that checks the mirror on real programs reads this
// list, so a new recording reaches all of them. BACKSCROLL_CORPUS_DIR, the recordings'
// directory, is defined by CMake for each target that includes this.
#pragma once

#include <array>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#ifndef BACKSCROLL_CORPUS_DIR
#error "BACKSCROLL_CORPUS_DIR (tests/corpus/recordings) must be defined"
#endif

namespace backscroll::testing {

inline constexpr std::array<std::string_view, 10> kRecordings = {
    "ls_color", "git_log_graph", "less",       "vim",  "top",
    "man_ls",   "less_back",     "tmux_panes", "htop", "ink_agent"};

// The bytes of recording `name` (empty when it cannot be read: the callers assert it is not).
inline std::string read_recording(std::string_view name) {
  std::ifstream in(std::string(BACKSCROLL_CORPUS_DIR) + "/" + std::string(name) + ".bin",
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace backscroll::testing
