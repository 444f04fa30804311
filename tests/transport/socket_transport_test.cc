// SocketTransport over loopback: delivery, ordering, striping, corrupt frames, another process,
// authentication. Dead peers, timeouts and close are timed: socket_timing_test.cc (suite timing).
#include <signal.h>

#include <chrono>
#include <memory>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "engine/transport/socket/frame.h"
#include "engine/transport/socket/socket_transport.h"
#include "test_util.h"

using namespace geotb::engine;
using geotb::test::cfg_for;
using geotb::test::Pair;
using geotb::test::pattern;
using geotb::test::RawPeer;
using geotb::test::same_bytes;
using geotb::test::WithChild;
using std::chrono::milliseconds;
namespace fr = geotb::engine::sockframe;

namespace {

constexpr size_t MiB = 1 << 20;

std::vector<uint8_t> u64_bytes(uint64_t v) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

}  // namespace

// ------------------------------------------------------------------ delivery and ordering

class SocketRoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(SocketRoundTrip, SizesZeroOneOneMiB17MiBBothWaysFifoPerTagAnyTagOrder) {
  Pair p(GetParam());
  EXPECT_EQ(p.a->streams(), GetParam());
  const std::vector<size_t> sizes{0, 1, MiB, 17 * MiB, 0, 1, MiB, 12345};
  for (size_t i = 0; i < sizes.size(); ++i) {
    p.a->send(1, 10, pattern(sizes[i], i));
    p.a->send(1, 11, pattern(7, 100 + i));
    p.b->send(0, 20, pattern(sizes[i], 200 + i));
  }
  // Tag 11 first although every tag-10 message was sent before its tag-11 partner.
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_TRUE(same_bytes(p.b->recv(0, 11), pattern(7, 100 + i))) << i;
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_TRUE(same_bytes(p.b->recv(0, 10), pattern(sizes[i], i))) << i;
  for (size_t i = 0; i < sizes.size(); ++i)
    EXPECT_TRUE(same_bytes(p.a->recv(1, 20), pattern(sizes[i], 200 + i))) << i;
  const auto sa = p.a->stats(), sb = p.b->stats();
  const uint64_t payload = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0}) + 7 * sizes.size();
  EXPECT_EQ(sb.payload_bytes_received, payload);
  EXPECT_EQ(sb.messages_received, 2 * sizes.size());
  EXPECT_EQ(sa.messages_received, sizes.size());
  EXPECT_EQ(sb.corrupt_frames_rejected, 0u);
  EXPECT_EQ(sa.corrupt_frames_rejected, 0u);
}

TEST_P(SocketRoundTrip, ThousandsOfSmallMessagesKeepFifoPerTag) {
  Pair p(GetParam());
  constexpr int kN = 3000, kTags = 5;
  for (int i = 0; i < kN; ++i) p.a->send(1, i % kTags, u64_bytes(i));
  // Tags in reverse order, each strictly increasing.
  for (int t = kTags - 1; t >= 0; --t)
    for (int i = t; i < kN; i += kTags) {
      auto m = p.b->recv(0, t);
      ASSERT_EQ(m.size(), 8u);
      uint64_t v;
      std::memcpy(&v, m.data(), 8);
      ASSERT_EQ(v, static_cast<uint64_t>(i)) << "tag " << t;
    }
}

TEST(SocketOrdering, AMessageCompletedOnOneStreamWaitsForAnEarlierOneStillArrivingOnAnother) {
  SocketTransport t(cfg_for(0));  // rank 1 is played by two raw connections (streams 0 and 1)
  RawPeer s0(t.port()), s1(t.port());
  ASSERT_EQ(s0.hello(1, 0, 2), fr::FrameType::kAccept);
  fr::Hello h1;
  h1.from_rank = 1;
  h1.to_rank = 0;
  h1.world = 2;
  h1.stream = 1;
  fr::FrameHeader hh;
  hh.type = fr::FrameType::kHello;
  ASSERT_TRUE(s1.send_frame(hh, fr::encode_hello(h1)));
  ASSERT_EQ(s1.read_frame()->first.type, fr::FrameType::kAccept);
  const auto first = pattern(2000, 1), second = pattern(10, 2);
  fr::FrameHeader d;
  d.type = fr::FrameType::kData;
  d.tag = 7;
  d.msg_id = 1;  // the later message, complete at once on stream 1
  d.msg_len = second.size();
  ASSERT_TRUE(s1.send_frame(d, second));
  d.msg_id = 0;  // the earlier one: half now on stream 0, the rest later
  d.msg_len = first.size();
  ASSERT_TRUE(s0.send_frame(d, std::span(first).first(1000)));
  // Both frames are in (all their payload counted) and the complete later message is held back.
  EXPECT_TRUE(geotb::test::wait_until([&] { return t.stats().payload_bytes_received == second.size() + 1000; },
                                      milliseconds(10000)));
  EXPECT_EQ(t.stats().messages_received, 0u);
  d.offset = 1000;
  ASSERT_TRUE(s0.send_frame(d, std::span(first).subspan(1000)));
  EXPECT_TRUE(same_bytes(t.recv(1, 7), first));
  EXPECT_TRUE(same_bytes(t.recv(1, 7), second));
}

INSTANTIATE_TEST_SUITE_P(Streams, SocketRoundTrip, ::testing::Values(1, 4),
                         [](const auto& i) { return std::to_string(i.param) + "streams"; });

TEST(SocketStriping, A17MiBMessageIsSpreadOverAllStreamsAndReassembledExactly) {
  auto ca = Pair::with_streams(0, 4), cb = Pair::with_streams(1, 4);
  ca.chunk_bytes = 64 * 1024;
  Pair p(ca, cb);
  ASSERT_TRUE(p.a->await_streams(1, milliseconds(3000)));
  const auto msg = pattern(17 * MiB + 3, 42);  // last chunk partial
  p.a->send(1, 1, msg);
  EXPECT_TRUE(same_bytes(p.b->recv(0, 1), msg));
  const auto s = p.a->stats();
  const uint64_t chunks = (msg.size() + ca.chunk_bytes - 1) / ca.chunk_bytes;  // 273
  uint64_t total = 0;
  for (int i = 0; i < 16; ++i) {
    if (i < 4) EXPECT_GT(s.data_frames_by_stream[i], 0u) << "stream " << i << " carried nothing";
    else EXPECT_EQ(s.data_frames_by_stream[i], 0u);
    total += s.data_frames_by_stream[i];
  }
  EXPECT_EQ(total, chunks);
  EXPECT_EQ(p.b->stats().payload_bytes_received, msg.size());
}

TEST(SocketTransportBasics, SelfSendAndConfigValidation) {
  SocketTransport t(cfg_for(0, 1));
  t.start({{"", 0}});
  t.send(0, 3, {1, 2, 3});
  EXPECT_EQ(t.recv(0, 3), (std::vector<uint8_t>{1, 2, 3}));
  auto bad = cfg_for(0);
  bad.streams = 17;
  EXPECT_THROW(SocketTransport{bad}, TransportError);
  bad = cfg_for(2);
  EXPECT_THROW(SocketTransport{bad}, TransportError);
  bad = cfg_for(0);
  bad.peer_timeout = bad.heartbeat;
  EXPECT_THROW(SocketTransport{bad}, TransportError);
  SocketTransport u(cfg_for(0));
  EXPECT_THROW(u.send(1, 0, {1}), TransportError);  // before start()
  EXPECT_THROW(u.start({{"127.0.0.1", 1}}), TransportError);  // wrong count
  EXPECT_THROW(u.start({{"", 0}, {"no-such-host.invalid", 5}}), TransportError);
}

// A DC leader's successor (node faults): rank 0 (the "leader") takes tag 5 of rank 2's tags 5 and
// 6, then goes away; rank 2 expects a successor for it, so its receive from rank 0 waits and its
// send to rank 0 is kept. Rank 1 takes over rank 0's address: rank 2 then receives rank 1's tag 7
// as rank 0's, sends rank 1 again what it had sent rank 0 (5, 6 and 9: rank 1 takes each by tag),
// and its later sends to rank 0 reach rank 1.
TEST(SocketTakeOver, ASuccessorGetsTheDeadRanksAddressAndWhatWasSentToIt) {
  std::vector<std::unique_ptr<SocketTransport>> t;
  std::vector<SocketEndpoint> eps;
  for (int r = 0; r < 3; ++r) {
    t.push_back(std::make_unique<SocketTransport>(cfg_for(r, 3)));
    eps.push_back({"127.0.0.1", t.back()->port()});
  }
  for (auto& x : t) x->start(eps);
  t[2]->expect_successors({0, 1}, 4);
  t[2]->send(0, 5, {5});
  t[2]->send(0, 6, {6});
  EXPECT_EQ(t[0]->recv(2, 5), (std::vector<uint8_t>{5}));
  t[0]->close();
  EXPECT_NO_THROW(t[2]->send(0, 9, {9}));  // kept for the successor (or still delivered to rank 0)
  t[1]->take_over(0, {2});
  t[1]->send(2, 7, {7});
  EXPECT_EQ(t[2]->recv(0, 7), (std::vector<uint8_t>{7}));
  t[2]->send(0, 8, {8});
  EXPECT_EQ(t[1]->recv(2, 6), (std::vector<uint8_t>{6}));
  EXPECT_EQ(t[1]->recv(2, 5), (std::vector<uint8_t>{5}));  // taken by rank 0 already: a duplicate
  EXPECT_EQ(t[1]->recv(2, 9), (std::vector<uint8_t>{9}));
  EXPECT_EQ(t[1]->recv(2, 8), (std::vector<uint8_t>{8}));
  // Without a successor expected, the dead rank's failure is the receiver's error as before.
  EXPECT_THROW(t[1]->recv(0, 11), TransportError);
}

// Restarts: rank 0 goes away (its transport closed: rank 1 fails it once it needs it) and comes
// back as a new transport at a new port. Rank 1 revives it: both directions work again, message
// order starts afresh. A later incarnation that connects before rank 1 knows its address is
// accepted at once (its message arrives); revive then gives rank 1 its address. A rank not
// expected to restart cannot be revived.
TEST(SocketRestart, ARevivedRankIsANewIncarnation) {
  auto b = std::make_unique<SocketTransport>(cfg_for(1));
  auto a = std::make_unique<SocketTransport>(cfg_for(0));
  a->start({{"127.0.0.1", a->port()}, {"127.0.0.1", b->port()}});
  b->start({{"127.0.0.1", a->port()}, {"127.0.0.1", b->port()}});
  auto incarnation = [&b] {  // rank 0 again, as a new process would be
    auto t = std::make_unique<SocketTransport>(cfg_for(0));
    t->start({{"127.0.0.1", t->port()}, {"127.0.0.1", b->port()}});
    return t;
  };
  EXPECT_THROW(b->revive(0, {"127.0.0.1", a->port()}), TransportError);  // not expected to restart
  b->expect_restarts({0});
  a->send(1, 1, {1});
  EXPECT_EQ(b->recv(0, 1), (std::vector<uint8_t>{1}));
  b->send(0, 2, {2});
  EXPECT_EQ(a->recv(1, 2), (std::vector<uint8_t>{2}));
  a->close();
  EXPECT_THROW(b->recv(0, 4), PeerDeadError);
  // Incarnation 2, revived by rank 1 first.
  auto a2 = incarnation();
  b->revive(0, {"127.0.0.1", a2->port()});
  b->send(0, 5, {5});
  EXPECT_EQ(a2->recv(1, 5), (std::vector<uint8_t>{5}));
  a2->send(1, 6, {6});
  EXPECT_EQ(b->recv(0, 6), (std::vector<uint8_t>{6}));
  a2->close();
  EXPECT_THROW(b->recv(0, 7), PeerDeadError);
  // Incarnation 3 connects before rank 1 revives it.
  auto a3 = incarnation();
  ASSERT_TRUE(a3->await_streams(1, std::chrono::milliseconds(3000)));  // rank 1 accepted it
  a3->send(1, 8, {8});
  EXPECT_EQ(b->recv(0, 8), (std::vector<uint8_t>{8}));
  b->revive(0, {"127.0.0.1", a3->port()});
  b->send(0, 9, {9});
  EXPECT_EQ(a3->recv(1, 9), (std::vector<uint8_t>{9}));
}

// ------------------------------------------------------------------ corrupt frames

enum class Corruption { kPayloadByte, kHeaderByte, kSequenceGap, kChunkPastEnd };

class SocketCorruptFrame : public ::testing::TestWithParam<Corruption> {};

TEST_P(SocketCorruptFrame, RejectedCountedNeverDeliveredAndRecvThrowsFrameError) {
  // Rank 0; the raw socket plays rank 1 without a secret. recv never times out here: the frame
  // error itself must end it (a recv left asleep hangs the binary into meson's test timeout).
  auto c = cfg_for(0);
  c.recv_timeout = std::chrono::hours(1);
  SocketTransport t(c);
  RawPeer raw(t.port());
  ASSERT_TRUE(raw.ok());
  ASSERT_EQ(raw.hello(1, 0, 2), fr::FrameType::kAccept);
  const std::vector<uint8_t> good{'g', 'o', 'o', 'd'};
  fr::FrameHeader h;
  h.type = fr::FrameType::kData;
  h.tag = 7;
  h.msg_id = 0;
  h.msg_len = good.size();
  ASSERT_TRUE(raw.send_frame(h, good));
  EXPECT_EQ(t.recv(1, 7), good);

  // Message 1: two chunks; the first is fine, the second is damaged.
  const auto bad = pattern(1000, 9);
  h.msg_id = 1;
  h.msg_len = bad.size();
  h.offset = 0;
  ASSERT_TRUE(raw.send_frame(h, std::span(bad).first(500)));
  h.offset = 500;
  auto frame = fr::make_frame(h, std::span(bad).subspan(500));
  switch (GetParam()) {
    case Corruption::kPayloadByte: {
      fr::FrameHeader hh = h;
      hh.seq = raw.next_seq();
      frame = fr::make_frame(hh, std::span(bad).subspan(500));
      frame[fr::kHeaderBytes + 17] ^= 0x01;
      break;
    }
    case Corruption::kHeaderByte: {
      fr::FrameHeader hh = h;
      hh.seq = raw.next_seq();
      frame = fr::make_frame(hh, std::span(bad).subspan(500));
      frame[30] ^= 0x80;  // inside tag
      break;
    }
    case Corruption::kSequenceGap: {
      fr::FrameHeader hh = h;
      hh.seq = raw.next_seq() + 1;
      frame = fr::make_frame(hh, std::span(bad).subspan(500));
      break;
    }
    case Corruption::kChunkPastEnd: {
      fr::FrameHeader hh = h;
      hh.seq = raw.next_seq();
      hh.offset = 501;  // 501 + 500 > 1000, checksums valid
      frame = fr::make_frame(hh, std::span(bad).subspan(500));
      break;
    }
  }
  ASSERT_TRUE(raw.write_all(frame));
  EXPECT_THROW(t.recv(1, 7), FrameError);
  const auto s = t.stats();
  EXPECT_EQ(s.corrupt_frames_rejected, 1u);
  EXPECT_EQ(s.messages_received, 1u);  // "good" only
  EXPECT_THROW(t.recv(1, 7), FrameError);  // stays failed; nothing of message 1 appears
}

INSTANTIATE_TEST_SUITE_P(Kinds, SocketCorruptFrame,
                         ::testing::Values(Corruption::kPayloadByte, Corruption::kHeaderByte,
                                           Corruption::kSequenceGap, Corruption::kChunkPastEnd),
                         [](const auto& i) {
                           switch (i.param) {
                             case Corruption::kPayloadByte: return std::string("PayloadByte");
                             case Corruption::kHeaderByte: return std::string("HeaderByte");
                             case Corruption::kSequenceGap: return std::string("SequenceGap");
                             default: return std::string("ChunkPastEnd");
                           }
                         });

// ------------------------------------------------------------------ another process
// (dead peers and timeouts: socket_timing_test.cc, suite timing)

TEST(SocketCrossProcess, EchoThroughAnotherProcess) {
  WithChild w("echo");
  ASSERT_NE(w.child.port, 0);
  const std::vector<size_t> sizes{0, 1, MiB, 17 * MiB};
  w.t->send(1, 1, u64_bytes(sizes.size()));
  for (size_t i = 0; i < sizes.size(); ++i) w.t->send(1, 2, pattern(sizes[i], i));
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_TRUE(same_bytes(w.t->recv(1, 3), pattern(sizes[i], i))) << i;
  w.t->send(1, 4, {});
  EXPECT_EQ(w.child.wait(), 0);
}

// ------------------------------------------------------------------ authentication

TEST(SocketAuth, RightSecretAccepted) {
  auto ca = cfg_for(0), cb = cfg_for(1);
  ca.secret = cb.secret = "correct horse";
  ca.streams = cb.streams = 2;
  Pair p(ca, cb);
  p.a->send(1, 1, pattern(MiB, 1));
  EXPECT_TRUE(same_bytes(p.b->recv(0, 1), pattern(MiB, 1)));
  p.b->send(0, 1, {9});
  EXPECT_EQ(p.a->recv(1, 1), std::vector<uint8_t>{9});
  EXPECT_EQ(p.a->stats().auth_failures, 0u);
  EXPECT_EQ(p.b->stats().auth_failures, 0u);
  EXPECT_GE(p.a->stats().connections_opened, 3u);  // 2 out + at least 1 in
}

class SocketAuthRefused : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(SocketAuthRefused, BothSidesGetAuthErrorAndNothingIsDelivered) {
  auto ca = cfg_for(0), cb = cfg_for(1);
  ca.secret = GetParam().first;
  cb.secret = GetParam().second;
  // recv never times out here: the refusal itself must end it (a recv left asleep hangs the
  // binary into meson's test timeout).
  ca.recv_timeout = cb.recv_timeout = std::chrono::hours(1);
  Pair p(ca, cb);
  p.a->send(1, 1, {1, 2, 3});  // queued; the handshake it triggers is refused
  EXPECT_THROW(p.b->recv(0, 1), AuthError);
  EXPECT_THROW(p.a->recv(1, 1), AuthError);
  EXPECT_THROW(p.a->send(1, 1, {4}), AuthError);
  EXPECT_EQ(p.b->stats().messages_received, 0u);
  EXPECT_EQ(p.b->stats().payload_bytes_received, 0u);
  EXPECT_GE(p.a->stats().auth_failures + p.b->stats().auth_failures, 1u);
}

INSTANTIATE_TEST_SUITE_P(Secrets, SocketAuthRefused,
                         ::testing::Values(std::make_pair("alpha", "beta"), std::make_pair("alpha", ""),
                                           std::make_pair("", "beta")),
                         [](const auto& i) {
                           return std::string(*i.param.first ? "A" : "none") + "_vs_" + (*i.param.second ? "B" : "none");
                         });

// A stranger who reaches a rank's port: a wrong secret, no secret, garbage. Each connection is
// refused and counted by the rank it reached; the rank it claims to be is not failed, and the
// pair goes on exchanging as if nothing had happened.
TEST(SocketAuth, StrangersAreRefusedCountedAndTheRunGoesOn) {
  auto ca = cfg_for(0), cb = cfg_for(1);
  ca.secret = cb.secret = "correct horse";
  Pair p(ca, cb);
  p.a->send(1, 1, pattern(MiB, 1));
  EXPECT_TRUE(same_bytes(p.b->recv(0, 1), pattern(MiB, 1)));
  {
    RawPeer raw(p.b->port());
    auto [challenge, verdict] = raw.wrong_secret(0, 1, 2);
    EXPECT_EQ(challenge, fr::FrameType::kChallenge);
    EXPECT_EQ(verdict, fr::FrameType::kReject);
  }
  {
    RawPeer raw(p.b->port());
    EXPECT_EQ(raw.hello(0, 1, 2), fr::FrameType::kReject);  // claims rank 0, without the secret
  }
  {
    RawPeer raw(p.b->port());
    std::vector<uint8_t> junk(200);
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 37 + 11);
    ASSERT_TRUE(raw.write_all(junk));
    EXPECT_FALSE(raw.read_frame().has_value());  // closed without a word
  }
  EXPECT_EQ(p.b->stats().incoming_refused, 3u);
  p.a->send(1, 2, pattern(MiB, 2));
  EXPECT_TRUE(same_bytes(p.b->recv(0, 2), pattern(MiB, 2)));
  p.b->send(0, 3, {7});
  EXPECT_EQ(p.a->recv(1, 3), std::vector<uint8_t>{7});
  EXPECT_EQ(p.a->stats().incoming_refused, 0u);
}

TEST(SocketAuth, UnexpectedRankOrEarlyDataIsRefused) {
  SocketTransport t(cfg_for(0));
  {
    RawPeer raw(t.port());
    EXPECT_EQ(raw.hello(5, 0, 2), fr::FrameType::kReject);  // rank 5 in a world of 2
  }
  {
    RawPeer raw(t.port());
    EXPECT_EQ(raw.hello(0, 0, 2), fr::FrameType::kReject);  // claims to be the acceptor itself
  }
  {
    RawPeer raw(t.port());  // DATA without a handshake
    fr::FrameHeader h;
    h.type = fr::FrameType::kData;
    h.msg_len = 1;
    const uint8_t one = 1;
    ASSERT_TRUE(raw.send_frame(h, std::span(&one, 1)));
    auto r = raw.read_frame();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->first.type, fr::FrameType::kReject);
  }
  EXPECT_EQ(t.stats().auth_failures, 3u);
  EXPECT_EQ(t.stats().incoming_refused, 3u);
  EXPECT_EQ(t.stats().messages_received, 0u);
}

