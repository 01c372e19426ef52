// Attachments on their own (engine/attachments.hpp): the size-ownership rules of
// docs/protocol.md, "Size ownership", without an engine. The owner is the controller that took
// control last; an owner leaving hands control to the most recent remaining controller; only
// the owner resizes (anyone while there is no controller); viewers never do; a connection sees
// only its own attachments. ownership_test.cpp checks the same rules through the real engine.
#include <gtest/gtest.h>

#include "engine/attachments.hpp"

namespace backscroll::engine {
namespace {

constexpr ConnectionId kPhone = 1;
constexpr ConnectionId kDesk = 2;

Attachment controller(ConnectionId connection, std::uint16_t cols, std::uint16_t rows) {
  return {"agent", connection, true, {cols, rows}};
}

TEST(Attachments, TheControllerThatTookControlLastOwnsTheActor) {
  Attachments table;
  table.add(1, controller(kDesk, 200, 50));
  table.add(2, controller(kPhone, 40, 20));
  EXPECT_EQ(table.owner_of("agent"), std::nullopt) << "attaching alone takes nothing";
  EXPECT_EQ(table.take_control(1), std::nullopt);
  EXPECT_EQ(table.take_control(2), 1u) << "the phone replaced the desk";
  EXPECT_EQ(table.owner_of("agent"), 2u);
  EXPECT_EQ(table.owner_size("agent")->cols, 40);
  EXPECT_EQ(table.take_control(1), 2u) << "the desk took it back";
  EXPECT_EQ(table.owner_size("agent")->cols, 200);
  EXPECT_EQ(table.take_control(1), std::nullopt) << "the owner again: nobody is replaced";
}

TEST(Attachments, AnOwnerLeavingHandsControlToTheMostRecentRemainingController) {
  Attachments table;
  for (std::uint64_t id = 1; id <= 3; ++id) {
    table.add(id, controller(kDesk, static_cast<std::uint16_t>(80 + id), 24));
    table.take_control(id);
  }
  table.take_control(1);  // order of taking control: 2, 3, 1
  const auto ended = table.end(1);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->actor, "agent");
  EXPECT_EQ(ended->new_owner, 3u);
  EXPECT_EQ(table.owner_size("agent")->cols, 83);
  // A controller that does not own the actor leaves without a hand-back.
  EXPECT_EQ(table.end(2)->new_owner, std::nullopt);
  EXPECT_EQ(table.owner_of("agent"), 3u);
  // The last controller leaves: nobody owns the actor, which keeps its size.
  EXPECT_EQ(table.end(3)->new_owner, std::nullopt);
  EXPECT_EQ(table.owner_of("agent"), std::nullopt);
  EXPECT_EQ(table.end(3), std::nullopt) << "ending twice is harmless";
}

TEST(Attachments, OnlyTheOwnerResizesAndAnyoneWhileThereIsNoController) {
  Attachments table;
  EXPECT_TRUE(table.check_resize("agent", std::nullopt));
  table.add(1, controller(kDesk, 80, 24));
  table.add(2, controller(kPhone, 40, 20));
  table.add(3, {"agent", kPhone, false, {}});
  table.add(4, {"other", kPhone, true, {}});
  EXPECT_TRUE(table.check_resize("agent", std::nullopt)) << "controllers that own nothing";
  table.take_control(1);
  table.take_control(2);
  EXPECT_TRUE(table.check_resize("agent", 2u));
  EXPECT_EQ(table.check_resize("agent", 1u).error().code, Errc::stale_controller);
  EXPECT_EQ(table.check_resize("agent", std::nullopt).error().code, Errc::stale_controller);
  EXPECT_EQ(table.check_resize("agent", 3u).error().code, Errc::bad_request) << "a viewer";
  EXPECT_EQ(table.check_resize("agent", 4u).error().code, Errc::stale_controller)
      << "another actor's attachment";
  EXPECT_EQ(table.check_resize("agent", 99u).error().code, Errc::stale_controller);
}

TEST(Attachments, AConnectionReachesOnlyItsOwnAttachments) {
  Attachments table;
  table.add(1, controller(kDesk, 80, 24));
  table.add(2, controller(kPhone, 40, 20));
  table.add(3, {"agent", kPhone, false, {}});
  EXPECT_EQ(table.own(kPhone, 2).value(), 2u);
  EXPECT_EQ(table.own(kPhone, 1).error().code, Errc::bad_request);
  EXPECT_EQ(table.own(kPhone, 9).error().code, Errc::bad_request);
  EXPECT_EQ(table.of_connection(kPhone), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(table.connections_of("agent"), (std::vector<ConnectionId>{kPhone, kDesk}))
      << "each connection once, in order";
  EXPECT_TRUE(table.connections_of("other").empty());
}

TEST(Attachments, ADeletedActorLeavesNoAttachmentAndNoOwner) {
  Attachments table;
  table.add(1, controller(kDesk, 80, 24));
  table.add(2, {"other", kDesk, true, {}});
  table.take_control(1);
  table.take_control(2);
  table.drop_actor("agent");
  EXPECT_EQ(table.find(1), nullptr);
  EXPECT_EQ(table.owner_of("agent"), std::nullopt);
  EXPECT_EQ(table.owner_of("other"), 2u) << "other actors keep theirs";
  EXPECT_EQ(table.of_connection(kDesk), (std::vector<std::uint64_t>{2}));
}

TEST(Attachments, AResizeOrTakeControlWithASizeUpdatesTheOwnersRecordedSize) {
  Attachments table;
  table.add(1, controller(kDesk, 80, 24));
  table.take_control(1);
  table.set_size(1, {132, 43});
  EXPECT_EQ(table.owner_size("agent")->cols, 132);
  EXPECT_EQ(table.owner_size("agent")->rows, 43);
  table.set_size(7, {1, 1});  // unknown: ignored
  EXPECT_EQ(table.find(7), nullptr);
}

}  // namespace
}  // namespace backscroll::engine
