// SocketTransport's implementation, shared by the files that make it up (internal: only
// engine/transport/socket/*.cc include this). One Impl, its methods split by concern the way
// gloo splits transport/tcp:
//   socket_transport.cc    setup, the public API, helpers
//   socket_caller.cc       the caller side: send, recv, mailboxes, takeover and restart requests,
//                          flush, shutdown; a peer's failure
//   socket_connections.cc  connections: open, close, output queues, connect and accept
//   socket_handshake.cc    control frames: HELLO, the challenge-response, adoption, GOODBYE
//   socket_io.cc           framing: reading frames into messages, writing them out by stream
//   socket_loop.cc         the I/O thread's loop: commands, timers, witnesses, drain, shutdown
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/takeover.h"
#include "engine/transport/socket/auth.h"
#include "engine/transport/socket/frame.h"
#include "engine/transport/socket/socket_transport.h"

namespace geotb::engine {

namespace fr = sockframe;

struct SocketTransport::Impl {
  // ---------------------------------------------------------------- constants and helpers
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;
  static constexpr int kMaxStreams = 16;
  static constexpr uint64_t kListenId = 0;
  static constexpr uint64_t kWakeId = 1;
  static constexpr milliseconds kRetryInterval{100};
  static constexpr size_t kReadBuf = 256 * 1024;
  static constexpr size_t kDirectReadMin = 64 * 1024;   // payload remainders at least this big bypass rbuf
  static constexpr size_t kReadBudget = 8u << 20;       // bytes per readable event before serving others
  static constexpr uint64_t kMaxMsgsAhead = 1u << 20;   // msg_id window beyond the next one to deliver
  static constexpr int kMaxAnonymousConns = 64;         // accepted connections still in the handshake

  enum class Fail : uint8_t { kNone, kDead, kAuth, kFrame };
  [[noreturn]] static void throw_fail(Fail f, const std::string& why);
  static std::string errstr(int e);
  static std::string ms_text(milliseconds d);
  static bool resolve_ipv4(const std::string& host, uint16_t port, sockaddr_in* out, std::string* err);
  static size_t read_proc_max(const char* path, size_t fallback);
  static void tune_socket(int fd, size_t sockbuf);

  // ---------------------------------------------------------------- types
  struct OutMsg {
    uint64_t id = 0, tag = 0;
    std::shared_ptr<const std::vector<uint8_t>> data;
    size_t next_off = 0;
  };
  struct OutFrame {
    std::array<uint8_t, fr::kHeaderBytes> hdr{};
    std::shared_ptr<const std::vector<uint8_t>> owner;  // DATA payload
    size_t owner_off = 0;
    std::vector<uint8_t> ctrl;                          // control payload
    size_t len = 0;                                     // payload bytes
    size_t done = 0;                                    // of header + payload written
    uint64_t flush_units = 0;                           // DATA: payload + 1 for a message's last byte
    bool heartbeat = false, data = false, last_of_msg = false;
    const uint8_t* payload() const { return owner ? owner->data() + owner_off : ctrl.data(); }
  };
  enum class St { kConnecting, kHelloSent, kResponseSent, kAwaitHello, kChallengeSent, kOpen, kClosing };
  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    bool outgoing = false;
    int peer = -1;  // -1 until an incoming connection's HELLO is accepted (its proof, with a secret)
    int claimed = -1;  // incoming, with a secret: the rank its HELLO claims, until it proves it
    uint64_t incarnation = 0;  // the peer's incarnation it belongs to (restarts: revive)
    uint32_t stream = 0;
    St st = St::kAwaitHello;
    Clock::time_point deadline{};  // handshake / closing deadline
    fr::Nonce nonce_mine{}, nonce_theirs{};
    uint64_t send_seq = 0, recv_seq = 0;
    std::deque<OutFrame> outq;
    size_t outq_bytes = 0;
    Clock::time_point last_send{};
    uint32_t mask = 0;
    bool wr_shut = false, goodbye_rx = false, dead = false;
    bool counted_open = false;  // outgoing, counted in Peer::open_out
    std::string remote_ip;
    // input state
    std::vector<uint8_t> rbuf;
    size_t rpos = 0, rend = 0;
    bool in_frame = false;
    fr::FrameHeader h{};
    uint8_t* pdst = nullptr;
    size_t premain = 0;
    std::vector<uint8_t> ctrl;
  };
  struct Partial {
    uint64_t tag = 0, len = 0, got = 0;
    std::vector<uint8_t> buf;
  };
  struct Peer {
    // guarded by mu
    std::deque<OutMsg> sendq;
    uint64_t next_msg_id = 0;
    uint64_t unflushed = 0;
    std::map<uint64_t, std::deque<std::vector<uint8_t>>> mailbox;
    Fail fail = Fail::kNone;
    std::string why;
    bool have_addr = false;
    sockaddr_in addr{};
    std::string addr_text;
    bool want_connect = false;
    std::string remote_ip;
    int open_out = 0;  // outgoing streams past the handshake
    // I/O thread only
    bool connect_started = false;
    Clock::time_point connect_deadline{};
    std::vector<uint64_t> out;  // conn id per stream slot, 0 = none
    std::vector<Clock::time_point> retry_at;
    std::string last_connect_error;
    Clock::time_point last_heard{};
    // Indirect probes (cfg.witnesses): while silent past peer_timeout, since when; whether a
    // witness could not reach it either; when to ask the witnesses again.
    std::optional<Clock::time_point> suspected_at;
    bool not_reached = false;
    Clock::time_point next_ask{};
    std::map<uint64_t, Partial> partial;
    uint64_t next_deliver = 0;
    bool goodbye_seen = false;
    bool failed_io = false;  // I/O thread has torn down this peer's connections
    bool reported = false;   // on_peer_failed called (guarded by mu)
    // guarded by mu: a successor may take over this peer's address (expect_successors, take_over;
    // who did, and the messages kept for it: Impl::takeover)
    bool expect_successor = false;
    size_t keep_n = 0;  // how many of the last messages to this peer are kept
    // guarded by mu: restarts (expect_restarts, revive)
    bool restartable = false;
    uint64_t incarnation = 0;  // bumped when a failed peer is revived
    // I/O thread only
    uint64_t io_incarnation = 0;  // the incarnation the I/O state above belongs to
  };

  // ---------------------------------------------------------------- state
  SocketTransportConfig cfg;
  int nstreams = 1;
  size_t sockbuf_eff = 0;
  uint16_t bound_port = 0;
  int lfd = -1, ep = -1, evfd = -1;
  milliseconds tick{50};
  size_t low_water = 0;

  mutable std::mutex mu;
  std::condition_variable cv;        // recv waiters, flush waiters
  std::vector<Peer> peers;
  // Taken-over addresses and the messages kept for successors (common/takeover.h): (tag, message).
  TakeoverTable<std::pair<uint64_t, std::shared_ptr<const std::vector<uint8_t>>>> takeover;
  bool started = false;
  bool closing = false;              // close() called
  bool want_outq = false;            // drain(): the I/O thread measures the kernel's send queues
  int64_t kernel_outq = -1;          // their bytes (unsent + unacknowledged) at its last measure
  bool interrupted = false;          // interrupt_recvs(): recv() from `interrupt_from` throws
  std::vector<int> interrupt_from;   // empty: every rank
  bool io_exited = false;
  std::vector<int> dirty;            // peers with new sends / connect requests
  std::string fatal;                 // I/O thread died with this

  std::thread io;
  std::once_flag close_once;

  // I/O thread only
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_conn_id = 2;
  size_t rr = 0;  // round-robin start among equally loaded streams
  bool linger_phase = false, goodbye_phase = false;
  Clock::time_point linger_deadline{}, final_deadline{};

  struct AtomicStats {
    std::atomic<uint64_t> frames_sent{0}, frames_received{0}, bytes_sent{0}, bytes_received{0},
        corrupt{0}, heartbeats{0}, messages_sent{0}, messages_received{0}, payload_sent{0},
        payload_received{0}, auth_failures{0}, connections_opened{0}, refused{0};
    std::array<std::atomic<uint64_t>, kMaxStreams> by_stream{};
  } st;

  // ---------------------------------------------------------------- setup  (socket_transport.cc)
  explicit Impl(const SocketTransportConfig& c);
  ~Impl();
  void wake();
  std::string who(int r) const { return "rank " + std::to_string(r); }
  std::string me() const { return "socket transport rank " + std::to_string(cfg.rank) + ": "; }

  // ---------------------------------------------------------------- caller side  (socket_caller.cc)
  void check_rank(int r, const char* what) const;
  void start(std::vector<SocketEndpoint> eps);
  void send(int dst, uint64_t tag, std::vector<uint8_t> bytes);
  void queue_locked(int dst, uint64_t tag, std::shared_ptr<const std::vector<uint8_t>> msg);
  void expect_successors(const std::vector<int>& ranks, size_t last_n);
  void expect_restarts(const std::vector<int>& ranks);
  void reset_locked(Peer& p);
  bool stale(const Conn* c);
  void sync_io(int r);
  void revive(int r, const SocketEndpoint& at);
  void taken_over(int dead, int successor);
  void take_over(int dead, const std::vector<int>& tell);
  std::vector<uint8_t> recv(int src, uint64_t tag);
  bool await_streams(int r, milliseconds timeout);
  void interrupt(std::vector<int> from, bool on);
  bool flush(milliseconds timeout);
  void shutdown();

  // ---------------------------------------------------------------- failure  (socket_caller.cc)
  void fail_peer(int r, Fail kind, const std::string& why, std::optional<milliseconds> silent = std::nullopt,
                 bool goodbye = false, const std::string& how = "");

  // ---------------------------------------------------------------- connections  (socket_connections.cc)
  Conn* find(uint64_t id);
  Conn* add_conn(int fd, bool outgoing);
  void close_conn(Conn* c);
  void begin_closing(Conn* c, Clock::time_point deadline);
  void update_mask(Conn* c);
  void push_ctrl(Conn* c, fr::FrameType t, std::vector<uint8_t> payload);
  void reject(Conn* c, const std::string& reason);
  bool flush_conn(Conn* c);
  void conn_broken(Conn* c, const std::string& why);
  void frame_error(Conn* c, const std::string& why);

  // ---------------------------------------------------------------- connect / accept  (socket_connections.cc)
  void ensure_connect(int r);
  bool closing_snapshot();
  void on_connected(Conn* c);
  void accept_all();
  void conn_opened(Conn* c);

  // ---------------------------------------------------------------- handshake  (socket_handshake.cc)
  void on_control(Conn* c, const fr::FrameHeader& h, std::span<const uint8_t> pl);
  void adopt(Conn* c, int from);
  void handshake_violation(Conn* c, const fr::FrameHeader& h);

  // ---------------------------------------------------------------- input  (socket_io.cc)
  bool on_header(Conn* c);
  bool on_frame(Conn* c);
  void deliver_ready(int r);
  void on_readable(Conn* c);

  // ---------------------------------------------------------------- output  (socket_io.cc)
  void dispatch(int r);
  void on_writable(Conn* c);

  // ---------------------------------------------------------------- timers and commands  (socket_loop.cc)
  void process_commands();
  void timers();

  // ---------------------------------------------------------------- witnesses  (socket_loop.cc)
  // The messages on reserved_tags::kWitness: [kind u8][suspect i32][asked at: ns since the
  // asker's suspicion began, i64: the asker's own clock, echoed back].
  enum WitnessKind : uint8_t { kAsk = 1, kAlive = 2, kNotReached = 3 };
  static std::vector<uint8_t> witness_bytes(WitnessKind k, int suspect, int64_t asked_at);
  static int64_t suspicion_stamp(Clock::time_point t);
  void ask_witnesses(int r, const std::vector<int>& w, Clock::time_point suspected_at);
  void witness_message(int src, const std::vector<uint8_t>& b);
  bool all_flushed();
  bool shutdown_step();
  void measure_outq();
  bool drain(milliseconds timeout);
  void reap();
  void io_main();
};

}  // namespace geotb::engine
