#include "tools/cli_usage.hpp"

#include <algorithm>
#include <numeric>
#include <set>

namespace backscroll::cli {
namespace {

// The deepest command CLI11 had recognised when it failed (the app itself when none).
const CLI::App* chosen_command(const CLI::App& app, std::string& where) {
  where = "backscroll";
  const CLI::App* command = &app;
  for (;;) {
    const auto chosen = command->get_subcommands();
    if (chosen.empty()) return command;
    command = chosen.front();
    where += " " + command->get_name();
  }
}

std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The first argument CLI11 could not place, in the order the user typed them.
std::optional<std::string> first_extra(const CLI::App& app, std::span<const std::string> args) {
  const auto left = app.remaining(true);
  const std::set<std::string> extras(left.begin(), left.end());
  for (const auto& arg : args) {
    if (extras.count(arg) != 0) return arg;
  }
  if (!left.empty()) return left.front();
  return std::nullopt;
}

// An argument `command` does not take, and what to do instead.
std::string explain_extra(const CLI::App& command, const std::string& where,
                          const std::string& extra) {
  const std::string name = command.get_name();
  const std::string see = " (see '" + where + " --help')";
  const bool dashed = extra.size() > 1 && extra.front() == '-';
  if (!dashed) {
    if (name == "tail" && all_digits(extra)) {
      return "unexpected argument " + in_quotes(extra) + " (did you mean '-n " + extra + "'?)";
    }
    return "unexpected argument " + in_quotes(extra) + see;
  }
  const std::string unknown = "unknown option " + in_quotes(extra);
  if (name == "tail" && all_digits(std::string_view(extra).substr(1))) {
    return unknown + " (did you mean '-n " + extra.substr(1) + "'?)";
  }
  // A long option typed with one letter off (--at-tim) is likelier than a program's flag.
  const std::string bare = extra.substr(0, extra.find('='));
  if (bare.rfind("--", 0) == 0) {
    if (const auto guess = nearest(bare, option_names(command))) {
      return unknown + " (did you mean " + in_quotes(*guess) + "?)";
    }
  }
  if (name == "spawn" || name == "attach") {
    return unknown + " (put `--` before the program's arguments: " + where +
           " NAME -- PROGRAM ARGS...)";
  }
  if (name == "send") return unknown + " (put `--` before text that starts with '-')";
  return unknown + see;
}

// "--lines: 1 required N missing" and the like: an option given without its value.
std::string explain_mismatch(const CLI::ParseError& error) {
  const std::string what = error.what();
  const auto colon = what.find(':');
  if (colon != std::string::npos && what.find("missing", colon) != std::string::npos) {
    return what.substr(0, colon) + ": expected a value, got nothing";
  }
  return what;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: the distance between a's first i bytes and b's first j; three rows suffice.
  const std::size_t width = b.size() + 1;
  std::vector<std::size_t> two_back(width), previous(width), current(width);
  std::iota(previous.begin(), previous.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j < width; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], two_back[j - 2] + 1);  // a swap of neighbours
      }
    }
    std::swap(two_back, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> nearest(std::string_view typed, const std::vector<std::string>& names) {
  if (typed.empty()) return std::nullopt;
  const std::size_t limit = typed.size() <= 4 ? 1 : 2;
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  bool tie = false;
  for (const auto& name : names) {
    const std::size_t d = edit_distance(typed, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
      tie = false;
    } else if (d == best_distance) {
      tie = true;
    }
  }
  if (best && !tie) return best;
  // No close spelling: a prefix of exactly one name ("rest" is not enough: restart, restore).
  std::optional<std::string> prefixed;
  for (const auto& name : names) {
    if (name.size() > typed.size() && name.compare(0, typed.size(), typed) == 0) {
      if (prefixed) return std::nullopt;
      prefixed = name;
    }
  }
  return prefixed;
}

std::vector<std::string> visible_commands(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* command :
       app.get_subcommands([](const CLI::App* c) { return !c->get_group().empty(); })) {
    names.push_back(command->get_name());
  }
  return names;
}

std::string usage_message(const CLI::App& app, const CLI::ParseError& error,
                          std::span<const std::string> args) {
  std::string where;
  const CLI::App* command = chosen_command(app, where);
  const std::string see = " (see '" + where + " --help')";
  if (command == &app) {
    // CLI11 says "A subcommand is required" for a misspelt one: name it instead.
    for (const auto& arg : args) {
      if (arg == "--no-autostart") continue;
      if (!arg.empty() && arg.front() == '-') {
        if (const auto guess = nearest(arg, option_names(app))) {
          return "unknown option " + in_quotes(arg) + " (did you mean " + in_quotes(*guess) + "?)";
        }
        return "unknown option " + in_quotes(arg) + see;
      }
      if (const auto guess = nearest(arg, visible_commands(app))) {
        return "unknown command " + in_quotes(arg) + " (did you mean " + in_quotes(*guess) + "?)";
      }
      return "unknown command " + in_quotes(arg) + see;
    }
    return "a command is required" + see;
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    if (const auto extra = first_extra(app, args)) return explain_extra(*command, where, *extra);
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    return explain_mismatch(error) + see;
  }
  return std::string(error.what()) + see;
}

}  // namespace backscroll::cli
