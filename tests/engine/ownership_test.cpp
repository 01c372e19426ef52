// Size ownership through a real engine (docs/protocol.md, "Size ownership"):
// - a controller's attach makes it the owner at its size; the displaced controller is told on
//   its own connection (event `controller`, reason `attached`) and the resize with the cursor
//   where it took effect (event `resized`);
// - when the owner detaches or its connection drops, the most recent remaining controller owns
//   the actor again and the actor goes back to its size (`handed_back`); with no controller
//   left the actor keeps its size;
// - `take_control` makes a displaced controller the owner at its (new) size;
// - refused requests (a viewer's take_control, unknown attachments, sizes 0, 1001 or not a
//   number) change neither the size nor the owner, and send no event.
// Each connection here holds attachments without subscribing: the events it gets are the ones
// the engine sends to an attachment's own connection. The actor prints its size on every
// SIGWINCH, so the stream shows where each resize took effect.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/engine/engine_process.hpp"

namespace backscroll::testing {
namespace {

// Prints "ROWS COLS" (stty size) after every window change.
const std::vector<std::string> kSizePrinter{
    "sh", "-c", "trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done"};

// The next event on `client`, whatever it is; throws when none comes.
Json next_event(control::ControlClient& client) {
  auto e = client.next_event(kHangGuard);
  if (!e) raise_failure("waiting for an event: " + e.error().describe());
  if (!*e) raise_failure("no event came");
  return (*e)->header;
}

// The next event must be `name`: events are checked in order, none skipped.
Json expect_event(control::ControlClient& client, std::string_view name) {
  const Json e = next_event(client);
  if (e.value("event", "") != name) {
    raise_failure("expected event '" + std::string(name) + "', got " + e.dump());
  }
  return e;
}

class AttachOwnership : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(engine_.start());
    engine_.spawn("sh", kSizePrinter);
    engine_.wait_output("sh", "ready");
  }

  // Attaches as a controller at cols x rows; its attachment id.
  std::uint64_t attach_controller(control::ControlClient& client, int cols, int rows) {
    const Frame r = expect_ok(
        client.call("attach",
                    {{"actor", "sh"}, {"role", "controller"}, {"cols", cols}, {"rows", rows}}),
        "attach");
    return r.header.at("attachment");
  }
  std::uint64_t attach_viewer(control::ControlClient& client) {
    return expect_ok(client.call("attach", {{"actor", "sh"}, {"role", "viewer"}}), "attach")
        .header.at("attachment");
  }

  // The actor's size as "COLSxROWS" and its owner's attachment (0: none).
  std::string size() {
    const Json s = engine_.status("sh");
    return std::to_string(s.at("cols").get<int>()) + "x" + std::to_string(s.at("rows").get<int>());
  }
  std::uint64_t owner() {
    const Json c = engine_.status("sh").at("controller");
    return c.is_null() ? 0 : c.get<std::uint64_t>();
  }

  // The program printed "ROWS COLS" for this size (it reacts to the SIGWINCH asynchronously).
  void wait_printed(int cols, int rows, std::uint64_t from = 0) {
    const std::string line = std::to_string(rows) + " " + std::to_string(cols);
    wait_until([&] { return engine_.history("sh", from).find(line) != std::string::npos; },
               "the program to print its size " + line);
  }

  // A `controller` event with these fields (`replaced` 0: absent).
  static void expect_controller(const Json& e, std::uint64_t attachment, std::uint64_t replaced,
                                int cols, int rows, std::string_view reason) {
    EXPECT_EQ(e.value("event", ""), "controller") << e.dump();
    EXPECT_EQ(e.value("actor", ""), "sh") << e.dump();
    EXPECT_EQ(e.value("attachment", std::uint64_t{0}), attachment) << e.dump();
    if (replaced == 0) {
      EXPECT_FALSE(e.contains("replaced")) << e.dump();
    } else {
      EXPECT_EQ(e.value("replaced", std::uint64_t{0}), replaced) << e.dump();
    }
    EXPECT_EQ(e.value("cols", 0), cols) << e.dump();
    EXPECT_EQ(e.value("rows", 0), rows) << e.dump();
    EXPECT_EQ(e.value("reason", ""), reason) << e.dump();
  }
  // A `resized` event to cols x rows; its cursor.
  static std::uint64_t expect_resized(const Json& e, int cols, int rows) {
    EXPECT_EQ(e.value("event", ""), "resized") << e.dump();
    EXPECT_EQ(e.value("actor", ""), "sh") << e.dump();
    EXPECT_EQ(e.value("cols", 0), cols) << e.dump();
    EXPECT_EQ(e.value("rows", 0), rows) << e.dump();
    EXPECT_TRUE(e.contains("cursor")) << e.dump();
    return e.value("cursor", std::uint64_t{0});
  }

  // Every byte before `cursor` was written at the old size and the program's reaction to the
  // new one comes after it: the last size it printed before is `before`, the first after is
  // `after` ("ROWS COLS").
  void expect_resize_at(std::uint64_t cursor, std::string_view before, std::string_view after) {
    const std::string after_line(after);
    wait_until([&] { return engine_.history("sh", cursor).find(after_line) != std::string::npos; },
               "the program to print " + after_line + " after the resize's cursor");
    const std::string all = engine_.history("sh");
    ASSERT_LE(cursor, all.size());
    const std::string head = all.substr(0, cursor);
    const std::string tail = all.substr(cursor);
    const auto old_at = head.rfind(std::string(before));
    const auto new_at = head.rfind(after_line);
    ASSERT_NE(old_at, std::string::npos) << "no " << before << " before cursor " << cursor;
    EXPECT_TRUE(new_at == std::string::npos || new_at < old_at)
        << "the last size printed before cursor " << cursor << " is not " << before;
    EXPECT_LT(tail.find(after_line), tail.find(std::string(before)))
        << "the first size printed after cursor " << cursor << " is not " << after;
  }

  EngineProcess engine_;
};

TEST_F(AttachOwnership, ANewControllerOwnsTheSizeAndTheDisplacedOneIsToldOnItsConnection) {
  auto a = engine_.connect();
  auto b = engine_.connect();
  auto v = engine_.connect();
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  EXPECT_EQ(size(), "100x20");
  EXPECT_EQ(owner(), a_id);
  expect_controller(expect_event(a, "controller"), a_id, 0, 100, 20, "attached");
  expect_resized(expect_event(a, "resized"), 100, 20);
  wait_printed(100, 20);
  attach_viewer(v);

  const std::uint64_t b_id = attach_controller(b, 50, 10);
  EXPECT_EQ(size(), "50x10");
  EXPECT_EQ(owner(), b_id);
  // The displaced controller, the new one and the viewer are each told, in this order.
  for (control::ControlClient* c : {&a, &b, &v}) {
    expect_controller(expect_event(*c, "controller"), b_id, a_id, 50, 10, "attached");
    const std::uint64_t at = expect_resized(expect_event(*c, "resized"), 50, 10);
    if (c == &a) expect_resize_at(at, "20 100", "10 50");
  }
  // The displaced one may no longer resize.
  const auto stale =
      a.call("resize", {{"actor", "sh"}, {"cols", 70}, {"rows", 15}, {"attachment", a_id}});
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Errc::stale_controller);
}

TEST_F(AttachOwnership, WhenTheOwnerDetachesTheLatestOtherControllerGetsItsSizeBack) {
  auto a = engine_.connect();
  auto b = engine_.connect();
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  wait_printed(100, 20);
  const std::uint64_t b_id = attach_controller(b, 50, 10);
  wait_printed(50, 10);
  expect_event(a, "controller");
  expect_event(a, "resized");
  expect_event(a, "controller");
  expect_event(a, "resized");

  expect_ok(b.call("detach", {{"attachment", b_id}}), "detach");
  EXPECT_EQ(size(), "100x20");
  EXPECT_EQ(owner(), a_id);
  expect_controller(expect_event(a, "controller"), a_id, b_id, 100, 20, "handed_back");
  expect_resize_at(expect_resized(expect_event(a, "resized"), 100, 20), "10 50", "20 100");
  // The owner again: its resizes are accepted.
  EXPECT_TRUE(
      a.call("resize", {{"actor", "sh"}, {"cols", 90}, {"rows", 25}, {"attachment", a_id}}));
}

TEST_F(AttachOwnership, WhenTheOwnersConnectionDropsTheLatestOtherControllerGetsItsSizeBack) {
  auto a = engine_.connect();
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  wait_printed(100, 20);
  std::uint64_t b_id = 0;
  {
    auto b = engine_.connect();
    b_id = attach_controller(b, 50, 10);
    wait_printed(50, 10);
  }  // b's socket closes
  expect_event(a, "controller");
  expect_event(a, "resized");
  expect_event(a, "controller");
  expect_event(a, "resized");
  expect_controller(expect_event(a, "controller"), a_id, b_id, 100, 20, "handed_back");
  expect_resize_at(expect_resized(expect_event(a, "resized"), 100, 20), "10 50", "20 100");
  EXPECT_EQ(size(), "100x20");
  EXPECT_EQ(owner(), a_id);
}

TEST_F(AttachOwnership, HandBackGoesToTheControllerThatTookControlLast) {
  auto a = engine_.connect();
  auto b = engine_.connect();
  auto c = engine_.connect();
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  const std::uint64_t b_id = attach_controller(b, 50, 10);
  const std::uint64_t c_id = attach_controller(c, 60, 12);
  // a takes control back, then leaves: c attached after b, so c owns it next.
  expect_ok(a.call("take_control", {{"attachment", a_id}}), "take_control");
  EXPECT_EQ(size(), "100x20");
  expect_ok(a.call("detach", {{"attachment", a_id}}), "detach");
  EXPECT_EQ(owner(), c_id);
  EXPECT_EQ(size(), "60x12");
  expect_ok(c.call("detach", {{"attachment", c_id}}), "detach");
  EXPECT_EQ(owner(), b_id);
  EXPECT_EQ(size(), "50x10");
}

TEST_F(AttachOwnership, WithNoControllerLeftTheActorKeepsItsSize) {
  auto a = engine_.connect();
  auto b = engine_.connect();
  auto v = engine_.connect();
  attach_viewer(v);
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  const std::uint64_t b_id = attach_controller(b, 50, 10);
  for (int i = 0; i < 2; ++i) {
    expect_event(v, "controller");
    expect_event(v, "resized");
  }
  // The displaced one leaves first (the owner stays), then the owner: nobody is left.
  expect_ok(a.call("detach", {{"attachment", a_id}}), "detach");
  EXPECT_EQ(owner(), b_id);
  expect_ok(b.call("detach", {{"attachment", b_id}}), "detach");
  EXPECT_EQ(size(), "50x10");
  EXPECT_EQ(owner(), 0u);
  // Anyone may resize again; and it is the next thing the viewer hears of: the two detaches
  // neither resized the actor nor changed an owner.
  expect_ok(engine_.try_call("resize", {{"actor", "sh"}, {"cols", 61}, {"rows", 13}}), "resize");
  expect_resized(expect_event(v, "resized"), 61, 13);
}

TEST_F(AttachOwnership, TakeControlMakesADisplacedControllerTheOwnerAtItsSize) {
  auto a = engine_.connect();
  auto b = engine_.connect();
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  const std::uint64_t b_id = attach_controller(b, 50, 10);
  wait_printed(50, 10);
  expect_event(b, "controller");  // its own attach
  expect_event(b, "resized");

  const Frame took = expect_ok(a.call("take_control", {{"attachment", a_id}}), "take_control");
  EXPECT_EQ(took.header.at("attachment"), a_id);
  EXPECT_EQ(took.header.at("cols"), 100);
  EXPECT_EQ(took.header.at("rows"), 20);
  EXPECT_EQ(size(), "100x20");
  EXPECT_EQ(owner(), a_id);
  expect_controller(expect_event(b, "controller"), a_id, b_id, 100, 20, "took_control");
  expect_resize_at(expect_resized(expect_event(b, "resized"), 100, 20), "10 50", "20 100");
  const auto stale =
      b.call("resize", {{"actor", "sh"}, {"cols", 70}, {"rows", 15}, {"attachment", b_id}});
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, Errc::stale_controller);

  // From the owner: accepted, nothing changes (a size there is not a resize).
  const Frame again = expect_ok(
      a.call("take_control", {{"attachment", a_id}, {"cols", 70}, {"rows", 15}}), "take_control");
  EXPECT_EQ(again.header.at("cols"), 100);
  EXPECT_EQ(size(), "100x20");

  // With a size: recorded first, then the actor takes it.
  const Frame sized = expect_ok(
      b.call("take_control", {{"attachment", b_id}, {"cols", 60}, {"rows", 12}}), "take_control");
  EXPECT_EQ(sized.header.at("cols"), 60);
  EXPECT_EQ(sized.header.at("rows"), 12);
  EXPECT_EQ(size(), "60x12");
  EXPECT_EQ(owner(), b_id);
  // The owner's own resize is recorded too: a hand-back returns to it.
  expect_ok(b.call("resize", {{"actor", "sh"}, {"cols", 64}, {"rows", 14}, {"attachment", b_id}}),
            "resize");
  expect_ok(a.call("take_control", {{"attachment", a_id}}), "take_control");
  EXPECT_EQ(size(), "100x20");
  expect_ok(a.call("detach", {{"attachment", a_id}}), "detach");
  EXPECT_EQ(owner(), b_id);
  EXPECT_EQ(size(), "64x14");
}

TEST_F(AttachOwnership, RefusedRequestsChangeNeitherSizeNorOwnerAndSendNoEvent) {
  auto a = engine_.connect();
  auto b = engine_.connect();
  auto v = engine_.connect();
  const std::uint64_t v_id = attach_viewer(v);
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  const std::uint64_t b_id = attach_controller(b, 50, 10);
  for (int i = 0; i < 2; ++i) {
    expect_event(v, "controller");
    expect_event(v, "resized");
  }

  auto refused = [&](control::ControlClient& client, std::string_view op, Json fields, Errc code,
                     std::string_view message = {}) {
    SCOPED_TRACE(std::string(op) + " " + fields.dump());
    const auto r = client.call(op, fields);
    ASSERT_FALSE(r) << r->header.dump();
    EXPECT_EQ(r.error().code, code) << r.error().describe();
    if (!message.empty()) {
      EXPECT_EQ(r.error().message, message);
    }
    EXPECT_EQ(size(), "50x10");
    EXPECT_EQ(owner(), b_id);
  };
  refused(v, "take_control", {{"attachment", v_id}}, Errc::bad_request,
          "a viewer cannot take control: attach as a controller");
  refused(a, "take_control", {{"attachment", 99999}}, Errc::bad_request,
          "no attachment 99999 on this connection");
  refused(v, "take_control", {{"attachment", a_id}}, Errc::bad_request,
          "no attachment " + std::to_string(a_id) + " on this connection");
  refused(a, "take_control", {}, Errc::bad_request);
  refused(a, "take_control", {{"attachment", "one"}}, Errc::bad_request);
  refused(a, "take_control", {{"attachment", a_id}, {"cols", 0}, {"rows", 10}}, Errc::bad_request);
  refused(a, "take_control", {{"attachment", a_id}, {"cols", 1001}, {"rows", 10}}, Errc::too_large);
  refused(a, "take_control", {{"attachment", a_id}, {"cols", "wide"}, {"rows", 10}},
          Errc::bad_request);
  refused(a, "take_control", {{"attachment", a_id}, {"cols", 90}}, Errc::bad_request);
  refused(a, "attach", {{"actor", "sh"}, {"role", "controller"}, {"cols", 0}, {"rows", 10}},
          Errc::bad_request);
  refused(a, "attach", {{"actor", "sh"}, {"role", "controller"}, {"cols", 80}, {"rows", 1001}},
          Errc::too_large);
  refused(a, "attach", {{"actor", "sh"}, {"role", "controller"}, {"cols", "80"}, {"rows", 24}},
          Errc::bad_request);
  refused(a, "attach", {{"actor", "sh"}, {"role", "controller"}, {"rows", 24}}, Errc::bad_request);
  refused(
      a, "attach",
      {{"actor", "sh"}, {"role", "controller"}, {"cols", 80}, {"rows", 24}, {"scrollback", 10001}},
      Errc::too_large);
  refused(a, "detach", {{"attachment", 99999}}, Errc::bad_request,
          "no attachment 99999 on this connection");
  refused(v, "detach", {{"attachment", b_id}}, Errc::bad_request,
          "no attachment " + std::to_string(b_id) + " on this connection");
  refused(a, "resize", {{"actor", "sh"}, {"cols", 70}, {"rows", 15}, {"attachment", a_id}},
          Errc::stale_controller);

  // The next thing the viewer hears of is the owner's resize: nothing above sent an event.
  expect_ok(b.call("resize", {{"actor", "sh"}, {"cols", 51}, {"rows", 11}, {"attachment", b_id}}),
            "resize");
  expect_resized(expect_event(v, "resized"), 51, 11);
  // And the refused attaches left no controller behind: b's leaving hands control to a.
  expect_ok(b.call("detach", {{"attachment", b_id}}), "detach");
  EXPECT_EQ(owner(), a_id);
  EXPECT_EQ(size(), "100x20");
}

TEST_F(AttachOwnership, ASubscribedConnectionHearsEachEventOnce) {
  EventStream events(engine_.places());
  expect_ok(events.client().call("attach", {{"actor", "sh"}, {"role", "viewer"}}), "attach");
  auto a = engine_.connect();
  const std::uint64_t a_id = attach_controller(a, 100, 20);
  expect_controller(events.wait_for("controller", "sh"), a_id, 0, 100, 20, "attached");
  expect_resized(events.wait_for("resized", "sh"), 100, 20);
  expect_ok(a.call("resize", {{"actor", "sh"}, {"cols", 62}, {"rows", 14}, {"attachment", a_id}}),
            "resize");
  expect_resized(events.wait_for("resized", "sh"), 62, 14);
  int controllers = 0;
  int resizes = 0;
  for (const Json& e : events.seen()) {
    controllers += e.value("event", "") == "controller";
    resizes += e.value("event", "") == "resized";
  }
  EXPECT_EQ(controllers, 1);
  EXPECT_EQ(resizes, 2);
}

}  // namespace
}  // namespace backscroll::testing
