#include "emulator/inproc/fibers.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cxxabi.h>

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <cstdlib>
#include <new>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define GEOTB_FIBERS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GEOTB_FIBERS_ASAN 1
#endif
#endif
#ifdef GEOTB_FIBERS_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace geotb::emu {

namespace ctx = boost::context;

// libstdc++'s per-thread exception state (cxxabi's __cxa_eh_globals, opaque in <cxxabi.h>): the
// stack of exceptions being handled and the count of those thrown and not yet caught. Outside the
// anonymous namespace: FiberCarrier::Fiber, which has linkage, holds one (GCC's -Wsubobject-linkage
// in a unity build, where this file is included).
struct EhGlobals {
  void* caught = nullptr;
  unsigned int uncaught = 0;
};

namespace {

std::vector<FiberLocal>& registry() {
  static std::vector<FiberLocal> r;
  return r;
}

void swap_eh(EhGlobals& saved) {
  auto* g = reinterpret_cast<EhGlobals*>(abi::__cxa_get_globals());
  std::swap(g->caught, saved.caught);
  std::swap(g->uncaught, saved.uncaught);
}

thread_local FiberCarrier::Fiber* tl_fiber = nullptr;        // the fiber running on this thread
thread_local const FiberCarrier* tl_fiber_owner = nullptr;   // its carrier

constexpr size_t kStackBytes = size_t{1} << 20;

}  // namespace

bool register_fiber_local(FiberLocal local) {
  registry().push_back(std::move(local));
  return true;
}

bool fibers_supported() {
#if defined(__SANITIZE_THREAD__)
  return false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return false;
#else
  return true;
#endif
#else
  return true;
#endif
}

// Stacks of kStackBytes plus a guard page below, reused once their fiber has finished.
struct FiberCarrier::StackPool {
  std::mutex mu;
  std::vector<ctx::stack_context> free;
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));

  ctx::stack_context get() {
    {
      std::lock_guard<std::mutex> lk(mu);
      if (!free.empty()) {
        ctx::stack_context s = free.back();
        free.pop_back();
        return s;
      }
    }
    const size_t total = kStackBytes + page;
    void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::mprotect(p, page, PROT_NONE);  // the guard page: an overflow faults
    ctx::stack_context s;
    s.size = total;
    s.sp = static_cast<char*>(p) + total;
    return s;
  }
  void put(ctx::stack_context s) {
#ifdef GEOTB_FIBERS_ASAN
    // A finished fiber's frames may leave poisoned redzones behind (a frame abandoned by
    // unwinding, say): the next fiber on this stack must start from clean shadow memory.
    __asan_unpoison_memory_region(static_cast<char*>(s.sp) - s.size + page, s.size - page);
#endif
    std::lock_guard<std::mutex> lk(mu);
    free.push_back(s);
  }
  ~StackPool() {
    for (const auto& s : free) ::munmap(static_cast<char*>(s.sp) - s.size, s.size);
  }
};

namespace {
// Boost.Context's StackAllocator concept over the pool (copied into each fiber's record).
struct PoolAlloc {
  FiberCarrier::StackPool* pool;
  const void** bottom;  // where the fiber keeps its stack's bounds (for AddressSanitizer)
  size_t* size;
  ctx::stack_context allocate() {
    ctx::stack_context s = pool->get();
    *bottom = static_cast<char*>(s.sp) - s.size + pool->page;
    *size = s.size - pool->page;
    return s;
  }
  void deallocate(ctx::stack_context& s) noexcept { pool->put(s); }
};
}  // namespace

struct FiberCarrier::Fiber {
  std::string name;
  std::function<void()> fn;
  ctx::fiber context;  // the fiber's own context while it is suspended (not started: its entry)
  ctx::fiber sink;     // inside the fiber: the carrier's context to switch back to
  bool queued = false, running = false, pending = false, returned = false, finished = false;
  std::vector<Fiber*> joiners;
  std::vector<void*> locals;  // one per registered FiberLocal
  EhGlobals eh;
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  // AddressSanitizer's bookkeeping for the switches (unused otherwise).
  void* asan_fake = nullptr;
  const void* carrier_bottom = nullptr;
  size_t carrier_size = 0;
  ~Fiber() {
    const auto& reg = registry();
    for (size_t i = 0; i < locals.size(); ++i) reg[i].destroy(locals[i]);
  }
};

FiberCarrier::FiberCarrier() : stacks_(std::make_unique<StackPool>()) {}

FiberCarrier::~FiberCarrier() {
  // Fibers that never finished (suspended forever: a program under test that hung and was given
  // up on) cannot be destroyed without unwinding them; their records and stacks are left as they
  // are rather than freed under them.
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& f : live_) new std::shared_ptr<Fiber>(f);
  // The pool's free stacks are unmapped with it; stacks of unfinished fibers are not in it.
}

std::shared_ptr<FiberCarrier::Fiber> FiberCarrier::spawn(std::string name, std::function<void()> fn) {
  auto f = std::make_shared<Fiber>();
  f->name = std::move(name);
  f->fn = std::move(fn);
  for (const auto& l : registry()) f->locals.push_back(l.make());
  Fiber* raw = f.get();
  PoolAlloc alloc{stacks_.get(), &f->stack_bottom, &f->stack_size};
  f->context = ctx::fiber(std::allocator_arg, alloc, [raw](ctx::fiber&& sink) {
    raw->sink = std::move(sink);
#ifdef GEOTB_FIBERS_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &raw->carrier_bottom, &raw->carrier_size);
#endif
    try {
      raw->fn();
    } catch (...) {
      std::terminate();  // as an exception escaping a std::thread's function
    }
    raw->fn = nullptr;  // its captures are destroyed here, on the fiber
    raw->returned = true;
#ifdef GEOTB_FIBERS_ASAN
    __sanitizer_start_switch_fiber(nullptr, raw->carrier_bottom, raw->carrier_size);  // never back
#endif
    return std::move(raw->sink);
  });
  {
    std::lock_guard<std::mutex> lk(mu_);
    live_.push_back(f);
    ++spawned_;
    f->queued = true;
    ready_.push_back(raw);
  }
  cv_.notify_all();
  return f;
}

FiberCarrier::Fiber* FiberCarrier::current() const { return tl_fiber_owner == this ? tl_fiber : nullptr; }

uint64_t FiberCarrier::spawned() const {
  std::lock_guard<std::mutex> lk(mu_);
  return spawned_;
}

bool FiberCarrier::finished(const std::shared_ptr<Fiber>& f) const {
  std::lock_guard<std::mutex> lk(mu_);
  return f->finished;
}

void FiberCarrier::wake(Fiber* f) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (f->finished) return;
    if (f->running) {  // it has not switched out yet: its next suspend() returns at once
      f->pending = true;
      return;
    }
    if (f->queued) return;
    f->queued = true;
    ready_.push_back(f);
  }
  cv_.notify_all();
}

void FiberCarrier::suspend() {
  Fiber* f = current();
  if (!f) std::abort();  // a programming error: only a fiber of this carrier suspends
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (f->pending) {
      f->pending = false;
      return;
    }
  }
#ifdef GEOTB_FIBERS_ASAN
  __sanitizer_start_switch_fiber(&f->asan_fake, f->carrier_bottom, f->carrier_size);
#endif
  f->sink = std::move(f->sink).resume();
#ifdef GEOTB_FIBERS_ASAN
  __sanitizer_finish_switch_fiber(f->asan_fake, &f->carrier_bottom, &f->carrier_size);
#endif
}

void FiberCarrier::resume(Fiber* f) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    f->running = true;
    f->pending = false;
  }
  const auto& reg = registry();
  for (size_t i = 0; i < f->locals.size(); ++i) reg[i].swap(f->locals[i]);
  swap_eh(f->eh);
  Fiber* const outer_fiber = tl_fiber;
  const FiberCarrier* const outer_owner = tl_fiber_owner;
  tl_fiber = f;
  tl_fiber_owner = this;
#ifdef GEOTB_FIBERS_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f->stack_bottom, f->stack_size);
#endif
  f->context = std::move(f->context).resume();
#ifdef GEOTB_FIBERS_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  tl_fiber = outer_fiber;
  tl_fiber_owner = outer_owner;
  swap_eh(f->eh);
  for (size_t i = 0; i < f->locals.size(); ++i) reg[i].swap(f->locals[i]);
  std::shared_ptr<Fiber> done;
  {
    std::lock_guard<std::mutex> lk(mu_);
    f->running = false;
    if (f->returned) {
      f->finished = true;
      for (Fiber* j : f->joiners) {
        if (j->running) {
          j->pending = true;
        } else if (!j->queued) {
          j->queued = true;
          ready_.push_back(j);
        }
      }
      f->joiners.clear();
      for (auto it = live_.begin(); it != live_.end(); ++it)
        if (it->get() == f) {
          done = std::move(*it);
          *it = std::move(live_.back());
          live_.pop_back();
          break;
        }
    } else if (f->pending) {  // woken between its last check and its switch
      f->pending = false;
      f->queued = true;
      ready_.push_back(f);
    }
  }
  if (done) cv_.notify_all();
}

void FiberCarrier::join(const std::shared_ptr<Fiber>& f) {
  if (Fiber* me = current()) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (f->finished) return;
        f->joiners.push_back(me);
      }
      suspend();
    }
  }
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (f->finished) return;
    if (driving_) {  // another thread runs the fibers
      cv_.wait(lk);
      continue;
    }
    driving_ = true;
    while (!f->finished) {
      if (ready_.empty()) {
        cv_.wait(lk);  // only another thread can wake a fiber now
        continue;
      }
      Fiber* g = ready_.front();
      ready_.pop_front();
      g->queued = false;
      lk.unlock();
      resume(g);
      lk.lock();
    }
    driving_ = false;
    cv_.notify_all();
    return;
  }
}

void ActorThread::join() {
  if (thread_.joinable()) {
    thread_.join();
    return;
  }
  if (!fiber_) throw std::logic_error("ActorThread::join: not joinable");
  carrier_->join(fiber_);
  fiber_.reset();
}

}  // namespace geotb::emu
