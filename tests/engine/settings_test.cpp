// settings.yaml (engine/settings.hpp, docs/settings.md): defaults, 0 means the default, the cap,
// and clear errors naming the key and line for everything malformed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/settings.hpp"

namespace backscroll::testing {
namespace {

using engine::Settings;

Settings parsed(const std::string& yaml) {
  auto s = engine::parse_settings(yaml, "settings.yaml");
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return s ? *s : Settings{};
}

std::string error_of(const std::string& yaml) {
  auto s = engine::parse_settings(yaml, "settings.yaml");
  EXPECT_FALSE(s) << "accepted: " << yaml;
  if (s) return "";
  EXPECT_EQ(s.error().code, Errc::bad_request);
  return s.error().message;
}

TEST(Settings, DefaultsAreDesignSectionEight) {
  const Settings d;
  EXPECT_TRUE(d.transcript_enabled);
  EXPECT_FALSE(d.persist);
  EXPECT_EQ(d.per_actor_bytes, 10'485'760u);
  EXPECT_EQ(d.snapshot_scrollback_lines, 512u);
  EXPECT_EQ(d.retention_days, 7u);
  EXPECT_EQ(parsed(""), d);
  EXPECT_EQ(parsed("# only a comment\n"), d);
}

TEST(Settings, ReadsEveryKey) {
  const Settings s = parsed(
      "terminal_transcript:\n"
      "  enabled: true\n"
      "  persist: true\n"
      "  per_actor_bytes: 4194304\n"
      "snapshot:\n"
      "  scrollback_lines: 2000\n"
      "retention_days: 30\n"
      "memory_budget: 3GiB\n");
  EXPECT_TRUE(s.persist);
  EXPECT_EQ(s.memory_budget, 3ull << 30);
  EXPECT_EQ(s.per_actor_bytes, 4'194'304u);
  EXPECT_EQ(s.snapshot_scrollback_lines, 2000u);
  EXPECT_EQ(s.retention_days, 30u);
}

TEST(Settings, ZeroMeansTheDefaultAndBigNumbersAreCapped) {
  const Settings s = parsed(
      "terminal_transcript: {per_actor_bytes: 0}\n"
      "snapshot: {scrollback_lines: 50000001}\n"
      "retention_days: 99999999999999999999999\n");
  EXPECT_EQ(s.per_actor_bytes, Settings{}.per_actor_bytes);
  EXPECT_EQ(s.snapshot_scrollback_lines, Settings::kMaxNumber);
  EXPECT_EQ(s.retention_days, Settings::kMaxNumber);
  EXPECT_EQ(parsed("retention_days: 0000000000000\n").retention_days, 7u);
  EXPECT_EQ(parsed("retention_days: 50000000\n").retention_days, 50'000'000u);
}

TEST(Settings, MalformedFilesNameTheKeyAndTheLine) {
  EXPECT_EQ(error_of("terminal_transcript:\n  persist: maybe\n"),
            "settings.yaml line 2: terminal_transcript.persist: expected true or false");
  EXPECT_EQ(error_of("snapshot:\n  scrollback_lines: -5\n"),
            "settings.yaml line 2: snapshot.scrollback_lines: expected a whole number (0 means "
            "the default)");
  EXPECT_EQ(error_of("retention_days: [1, 2]\n"),
            "settings.yaml line 1: retention_days: expected a whole number (0 means the default)");
  // A typo must not silently leave persistence off.
  EXPECT_EQ(error_of("terminal_transcript:\n  persit: true\n"),
            "settings.yaml line 2: terminal_transcript.persit: not a setting this engine knows");
  EXPECT_EQ(error_of("snapshot: 5\n"), "settings.yaml line 1: snapshot: expected a mapping");
  EXPECT_EQ(error_of("- a list\n"), "settings.yaml line 1: the file: expected a mapping");
  EXPECT_NE(error_of("terminal_transcript:\n  persist: [true\n").find("settings.yaml line "),
            std::string::npos);
  EXPECT_NE(error_of("a: b: c\n").find("not valid YAML"), std::string::npos);
}

// Ambiguity is refused, never resolved silently: yaml-cpp alone would let the last of two
// `persist` keys win and read `yes` as true.
TEST(Settings, AKeyGivenTwiceAtAnyLevelNamesTheKeyAndBothLines) {
  EXPECT_EQ(error_of("terminal_transcript:\n  persist: true\n  per_actor_bytes: 65536\n"
                     "  persist: false\n"),
            "settings.yaml line 4: key 'persist' given twice (lines 2 and 4)");
  EXPECT_EQ(error_of("retention_days: 3\nsnapshot: {}\nretention_days: 4\n"),
            "settings.yaml line 3: key 'retention_days' given twice (lines 1 and 3)");
  EXPECT_EQ(error_of("snapshot: {scrollback_lines: 1, scrollback_lines: 2}\n"),
            "settings.yaml line 1: key 'scrollback_lines' given twice (lines 1 and 1)");
  // The same key in two different mappings is no duplicate.
  EXPECT_TRUE(
      parsed("terminal_transcript: {persist: true}\nsnapshot: {scrollback_lines: 9}\n").persist);
}

TEST(Settings, BooleansAreExactlyTrueOrFalse) {
  for (const char* word :
       {"yes", "no", "on", "off", "y", "n", "True", "FALSE", "1", "0", "\"true\""}) {
    SCOPED_TRACE(word);
    EXPECT_EQ(error_of(std::string("terminal_transcript:\n  persist: ") + word + "\n"),
              "settings.yaml line 2: terminal_transcript.persist: expected true or false");
  }
  EXPECT_TRUE(parsed("terminal_transcript: {persist: true}\n").persist);
  EXPECT_FALSE(parsed("terminal_transcript: {persist: false}\n").persist);
}

TEST(Settings, TheMemoryBudgetIsASizeInBytesOrWithAUnit) {
  EXPECT_EQ(Settings{}.memory_budget, 0u);  // an eighth of the RAM, resolved by the engine
  EXPECT_EQ(parsed("memory_budget: 2GiB\n").memory_budget, 2ull << 30);
  EXPECT_EQ(parsed("memory_budget: 512MiB\n").memory_budget, 512ull << 20);
  EXPECT_EQ(parsed("memory_budget: 65536KiB\n").memory_budget, 64ull << 20);
  EXPECT_EQ(parsed("memory_budget: 1TiB\n").memory_budget, 1ull << 40);
  EXPECT_EQ(parsed("memory_budget: 100000000\n").memory_budget, 100'000'000u);
  EXPECT_EQ(parsed("memory_budget: 0\n").memory_budget, 0u);
  EXPECT_EQ(parsed("memory_budget: 0GiB\n").memory_budget, 0u);
  // Past the cap (1 PiB), in digits or through the unit: capped, never wrapped around.
  EXPECT_EQ(parsed("memory_budget: 99999999999999999999999\n").memory_budget,
            Settings::kMaxMemoryBudget);
  EXPECT_EQ(parsed("memory_budget: 4000000TiB\n").memory_budget, Settings::kMaxMemoryBudget);
  EXPECT_EQ(parsed("memory_budget: 17592186044416KiB\n").memory_budget, Settings::kMaxMemoryBudget);
  const std::string expected =
      "settings.yaml line 1: memory_budget: expected a size: a whole number of bytes, or with "
      "KiB, MiB, GiB or TiB (0 means the default)";
  for (const char* bad : {"2GB", "2 GiB", "1.5GiB", "-1", "GiB", "lots", "2gib", "[1]", "''"}) {
    EXPECT_EQ(error_of(std::string("memory_budget: ") + bad + "\n"), expected) << bad;
  }
  EXPECT_EQ(error_of("memory_budget: 1MiB\n"),
            "settings.yaml line 1: memory_budget: expected at least 64 MiB (or 0 for the "
            "default), got 1MiB");
}

TEST(Settings, CloseIdleAfterIsADurationAndOffByDefault) {
  EXPECT_EQ(Settings{}.close_idle_after_s, 0u);
  EXPECT_EQ(parsed("close_idle_after: 90\n").close_idle_after_s, 90u);
  EXPECT_EQ(parsed("close_idle_after: 45s\n").close_idle_after_s, 45u);
  EXPECT_EQ(parsed("close_idle_after: 30m\n").close_idle_after_s, 1800u);
  EXPECT_EQ(parsed("close_idle_after: 2h\n").close_idle_after_s, 7200u);
  EXPECT_EQ(parsed("close_idle_after: 7d\n").close_idle_after_s, 7u * 86400);
  EXPECT_EQ(parsed("close_idle_after: 0\n").close_idle_after_s, 0u);
  // Past ten years: capped, never wrapped around.
  EXPECT_EQ(parsed("close_idle_after: 99999999999999999999d\n").close_idle_after_s,
            10ull * 365 * 86400);
  const std::string expected =
      "settings.yaml line 1: close_idle_after: expected a duration: whole seconds, or with s, m, "
      "h or d (0 means never)";
  for (const char* bad : {"1.5h", "-1", "h", "soon", "2 h", "2H", "[1]", "''"}) {
    EXPECT_EQ(error_of(std::string("close_idle_after: ") + bad + "\n"), expected) << bad;
  }
}

TEST(Settings, AValueBelowItsMinimumNamesTheMinimum) {
  EXPECT_EQ(error_of("terminal_transcript:\n  per_actor_bytes: 1\n"),
            "settings.yaml line 2: terminal_transcript.per_actor_bytes: expected at least 65536 "
            "(or 0 for the default), got 1");
  EXPECT_EQ(error_of("terminal_transcript: {per_actor_bytes: 65535}\n"),
            "settings.yaml line 1: terminal_transcript.per_actor_bytes: expected at least 65536 "
            "(or 0 for the default), got 65535");
  EXPECT_EQ(parsed("terminal_transcript: {per_actor_bytes: 65536}\n").per_actor_bytes, 65'536u);
  EXPECT_EQ(parsed("snapshot: {scrollback_lines: 1}\n").snapshot_scrollback_lines, 1u);
}

TEST(Settings, AnchorsAliasesDeepNestingAndSeveralDocumentsNameTheLine) {
  EXPECT_EQ(error_of("terminal_transcript: &t {persist: true}\nsnapshot: *t\n"),
            "settings.yaml line 1: anchors (&name) are not allowed in settings");
  EXPECT_EQ(error_of("a: [1]\nb: *x\n").substr(0, 20), "settings.yaml line 2");
  // An alias bomb: refused at its first anchor, long before anything expands.
  std::string bomb = "a: &a [x, x]\n";
  for (char c = 'b'; c <= 'k'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [*" + static_cast<char>(c - 1) + ", *" +
            static_cast<char>(c - 1) + "]\n";
  }
  EXPECT_EQ(error_of(bomb), "settings.yaml line 1: anchors (&name) are not allowed in settings");
  // Deep nesting: refused at the level past the limit, without recursing through the rest.
  std::string deep = "snapshot:\n  x: ";
  for (int i = 0; i < 100'000; ++i) deep += "{a: ";
  deep += "1" + std::string(100'000, '}') + "\n";
  EXPECT_EQ(error_of(deep), "settings.yaml line 2: nested deeper than 8 levels");
  const std::string unbalanced = "snapshot:\n  x: " + std::string(100'000, '[') + "\n";
  EXPECT_EQ(error_of(unbalanced).substr(0, 21), "settings.yaml line 2:");
  EXPECT_EQ(error_of("retention_days: 1\n---\nretention_days: 2\n"),
            "settings.yaml line 2: more than one YAML document");
  EXPECT_EQ(error_of("? [a, b]\n: 1\n"), "settings.yaml line 1: a key must be a plain name");
}

TEST(Settings, AMissingFileIsEveryDefaultAndAnUnreadableOneAnError) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("settings_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto missing = engine::load_settings(dir / "settings.yaml");
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, Settings{});

  std::ofstream(dir / "settings.yaml") << "retention_days: 3\n";
  auto read = engine::load_settings(dir / "settings.yaml");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->retention_days, 3u);

  std::filesystem::create_directories(dir / "dir.yaml");  // exists, cannot be read as a file
  auto unreadable = engine::load_settings(dir / "dir.yaml");
  EXPECT_FALSE(unreadable);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace backscroll::testing
