// Actor names: [A-Za-z0-9][A-Za-z0-9._-]{0,63} (docs/design.md, "Actors"). Every valid name is safe
// in a file name and a memfd label, so anything else (empty, too long, a leading
// punctuation mark, a slash, a space, a NUL, non-ASCII bytes) must be refused.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "shm/actor_name.hpp"

namespace backscroll {
namespace {

using namespace std::string_literals;

TEST(ActorName, AcceptsLettersDigitsAndInnerPunctuation) {
  for (const std::string_view name : {"a", "Z", "7", "build", "web-1", "db_main", "v1.2.3", "A-._z",
                                      "0-", "x.", "claude_code-2"}) {
    EXPECT_TRUE(is_valid_actor_name(name)) << name;
  }
}

TEST(ActorName, AcceptsSixtyFourCharactersAndNoMore) {
  EXPECT_TRUE(is_valid_actor_name(std::string(kActorNameMax, 'a')));
  EXPECT_TRUE(is_valid_actor_name("a" + std::string(kActorNameMax - 1, '-')));
  EXPECT_FALSE(is_valid_actor_name(std::string(kActorNameMax + 1, 'a')));
}

TEST(ActorName, RefusesTheEmptyName) { EXPECT_FALSE(is_valid_actor_name("")); }

TEST(ActorName, RefusesALeadingPunctuationMark) {
  for (const std::string_view name : {".", "..", ".hidden", "-rf", "_x"}) {
    EXPECT_FALSE(is_valid_actor_name(name)) << name;
  }
}

TEST(ActorName, RefusesSlashesSpacesAndControlCharacters) {
  for (const std::string& name : {"a/b"s, "/a"s, "a/"s, "a b"s, " a"s, "a\tb"s, "a\nb"s, "a\\b"s,
                                  "a:b"s, "a*"s, "a\0b"s, "a\0"s}) {
    EXPECT_FALSE(is_valid_actor_name(name)) << name;
  }
}

TEST(ActorName, RefusesNonAsciiBytes) {
  for (const std::string_view name : {"caf\xc3\xa9", "\xc3\xa9t\xc3\xa9", "a\x80", "a\xff",
                                      "\xe2\x80\x8b"
                                      "a"}) {
    EXPECT_FALSE(is_valid_actor_name(name)) << name;
  }
}

TEST(ActorName, IsUsableAtCompileTime) {
  static_assert(is_valid_actor_name("compile-time"));
  static_assert(!is_valid_actor_name("-compile-time"));
  SUCCEED();
}

}  // namespace
}  // namespace backscroll
