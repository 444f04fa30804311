// engine/errors.h: the classification of every exception type a worker can end with, the names
// rank files carry and the exit codes.
#include "engine/errors.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "engine/collectives/intra_dc.h"
#include "engine/collectives/store.h"
#include "engine/data/fashion_mnist.h"
#include "engine/transport/socket/socket_transport.h"
#include "engine/transport/tags.h"
#include "engine/transport/transport.h"

using namespace geotb::engine;

namespace {

TEST(ErrorKind, ClassifiesEachExceptionTypeByItsMostDerivedKnownType) {
  EXPECT_EQ(error_kind(PeerDeadError("x")), ErrorKind::kPeerDead);
  EXPECT_EQ(error_kind(AuthError("x")), ErrorKind::kAuth);
  EXPECT_EQ(error_kind(FrameError("x")), ErrorKind::kFrame);
  EXPECT_EQ(error_kind(TransportError("x")), ErrorKind::kTransport);
  EXPECT_EQ(error_kind(TransportClosed("x")), ErrorKind::kTransport);
  EXPECT_EQ(error_kind(CollectiveError("x")), ErrorKind::kCollective);
  EXPECT_EQ(error_kind(StoreError("x")), ErrorKind::kStore);
  EXPECT_EQ(error_kind(ConfigError("x")), ErrorKind::kConfig);
  EXPECT_EQ(error_kind(std::invalid_argument("x")), ErrorKind::kConfig);
  EXPECT_EQ(error_kind(DataError("x")), ErrorKind::kConfig);
  EXPECT_EQ(error_kind(std::runtime_error("x")), ErrorKind::kOther);
  EXPECT_EQ(error_kind(TagError("x")), ErrorKind::kOther);
  EXPECT_EQ(error_kind(std::bad_alloc()), ErrorKind::kOther);
  // Through a base reference, as a catch (const std::exception&) sees it.
  const PeerDeadError dead("gone");
  const std::exception& base = dead;
  EXPECT_EQ(error_kind(base), ErrorKind::kPeerDead);
}

TEST(ErrorKind, NamesAreTheRankFilesStringsAndParseBack) {
  const std::pair<ErrorKind, const char*> expected[] = {
      {ErrorKind::kPeerDead, "PeerDeadError"},     {ErrorKind::kAuth, "AuthError"},
      {ErrorKind::kFrame, "FrameError"},           {ErrorKind::kTransport, "TransportError"},
      {ErrorKind::kCollective, "CollectiveError"}, {ErrorKind::kStore, "StoreError"},
      {ErrorKind::kConfig, "ConfigError"},         {ErrorKind::kOther, "Error"},
  };
  for (const auto& [kind, name] : expected) {
    EXPECT_EQ(error_kind_name(kind), name);
    EXPECT_EQ(parse_error_kind(name), kind) << name;
  }
  EXPECT_EQ(parse_error_kind("PeerDead"), std::nullopt);
  EXPECT_EQ(parse_error_kind(""), std::nullopt);
  EXPECT_EQ(parse_error_kind("peerdeaderror"), std::nullopt);
}

TEST(ErrorKind, ExitCodesTwoForConfigOneForOtherThreeForTheNetwork) {
  EXPECT_EQ(exit_code(ErrorKind::kConfig), 2);
  EXPECT_EQ(exit_code(ErrorKind::kOther), 1);
  for (ErrorKind k : {ErrorKind::kPeerDead, ErrorKind::kAuth, ErrorKind::kFrame, ErrorKind::kTransport,
                      ErrorKind::kCollective, ErrorKind::kStore})
    EXPECT_EQ(exit_code(k), 3) << error_kind_name(k);
}

}  // namespace
