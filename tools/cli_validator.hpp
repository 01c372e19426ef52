// CLI11's validator, declared so that headers of values the CLI validates (cli_args.hpp,
// cli_time.hpp) can name it without every file that includes them compiling CLI11 (~10 s per
// file at -O2); the files that build command lines include <CLI/CLI.hpp>.
#pragma once

namespace CLI {
class Validator;
}  // namespace CLI
