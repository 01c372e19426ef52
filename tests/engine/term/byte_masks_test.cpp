// ByteMasks (engine/term/byte_masks.hpp): the one-step classification the look ahead's blocks
// read must be the byte-by-byte one, for every byte value at every position of a block.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <cstdint>

#include "engine/term/byte_masks.hpp"

namespace backscroll::testing {
namespace {

using term::ByteMasks;

TEST(ByteMasks, EachByteIsInTheClassesTheBlocksRead) {
  const ByteMasks esc = term::classify_byte(0x1b);
  EXPECT_EQ(esc.esc, 1u);
  EXPECT_EQ(esc.stop | esc.text, 0u);  // an ESC is the blocks' to read
  EXPECT_EQ(term::classify_byte(';').separator & term::classify_byte(':').separator, 1u);
  EXPECT_EQ(term::classify_byte('9').param & term::classify_byte(';').param, 1u);
  EXPECT_EQ(term::classify_byte('<').param | term::classify_byte('/').param, 0u);
  EXPECT_EQ(term::classify_byte('\t').text, 1u);  // TAB moves the cursor off column 0
  EXPECT_EQ(term::classify_byte('\b').text | term::classify_byte('\b').stop, 0u);
  EXPECT_EQ(term::classify_byte(0xe4).text, 1u);  // a UTF-8 byte
  for (const int stop : {0x00, 0x07, 0x0e, 0x18, 0x7f})
    EXPECT_EQ(term::classify_byte(static_cast<std::uint8_t>(stop)).stop, 1u) << stop;
}

RC_GTEST_PROP(ByteMasks, TheWideStepIsTheBytewiseOne, ()) {
  if (!term::wide_masks_available()) RC_SUCCEED("no AVX-512BW on this CPU");
  const auto bytes =
      *rc::gen::container<std::array<std::uint8_t, 64>>(rc::gen::weightedOneOf<std::uint8_t>(
          {{3, rc::gen::arbitrary<std::uint8_t>()},
           {2, rc::gen::element<std::uint8_t>(0x1b, '[', ';', ':', '0', '9', 'm', 'K', '\r', '\n',
                                              '\t', '\b', 0x7f, 0x1f, 0x20)}}));
  RC_ASSERT(term::classify_64_wide(bytes.data()) == term::classify_64_bytewise(bytes.data()));
}

}  // namespace
}  // namespace backscroll::testing
