// The load threads of RunBench (runner_internal.h): Worker, one per event-loop thread, and
// Flight, one per request in flight. Everything here runs on the worker's thread but the
// constructor, the destructor and TakeRun(); Done() and WarmupDone(), which post to the
// coordinator, are in runner_threads.cc.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/strings.h"
#include "http/sse_decoder.h"
#include "loadgen/runner.h"
#include "loadgen/runner_internal.h"

namespace latdoc::loadgen::runner_internal {
namespace {

// A bound that keeps times within the int64 nanosecond clock: an arrival gap of at most 1e7 s.
constexpr double kMaxArrivalGapS = 1e7;

}  // namespace

// One request in flight: decodes its SSE stream into its record.
class Flight final : public http::ExchangeObserver {
 public:
  Flight(Worker* worker, RequestRecord* rec, ChunkParser* parser, uint64_t* events)
      : worker_(worker), rec_(rec), parser_(parser), events_(events), acct_(rec) {}

  void OnHeaders(int status, std::string_view content_type, int64_t now) override {
    rec_->http_status = status;
    rec_->headers_ns = now;
    if (status != 200) {
      rec_->outcome = Outcome::kHttpStatus;
    } else if (ToLower(content_type).find("text/event-stream") == std::string::npos) {  // any case
      rec_->outcome = Outcome::kProtocol;
      rec_->error = fmt::format("expected text/event-stream, got '{}'", content_type);
    }
  }

  // Defined below, out of the class: not an inline function, so that its SseDecoder::Feed
  // instantiation is this file's own and inlined into it (the per-read path).
  void OnBody(std::string_view data, int64_t now) override;

  void OnComplete(const http::ExchangeResult& r) override;

 private:
  Worker* worker_;
  RequestRecord* rec_;
  ChunkParser* parser_;
  uint64_t* events_;
  StreamAccountant acct_;
  http::SseDecoder sse_;
  std::string snippet_;
};

Worker::Worker(const BenchOptions& o, int thread, int threads, const http::Url& url,
               const std::string& model, Coordinator* coord)
    : o_(o),
      thread_(thread),
      threads_(threads),
      model_(model),
      coord_(coord),
      client_(loop_, url, LoadClientOptions(o)),
      dispatch_timer_(loop_),
      stop_timer_(loop_),
      drain_timer_(loop_),
      rng_(o.seed ^ 0x5bd1e995) {
  const bool open = o.request_rate > 0;
  concurrency_ = int(
      DealtCount(uint64_t(open ? std::max(0, o.max_concurrency) : o.concurrency), threads, thread));
  num_requests_ = DealtCount(uint64_t(std::max(0, o.num_requests)), threads, thread);
  // The warm-up runs closed loop at the run's concurrency (open loop: its cap, at least 1),
  // dealt to the threads that have a warm-up stream.
  const int streams = open ? std::max(1, o.max_concurrency) : o.concurrency;
  warmup_threads_ = std::min(streams, threads);
  warmup_streams_ = int(DealtCount(uint64_t(streams), threads, thread));
  warmup_ = thread < warmup_threads_
                ? DealtCount(uint64_t(std::max(0, o.warmup)), warmup_threads_, thread)
                : 0;
}

void Worker::StartWarmup() {
  phase_ = Phase::kWarmup;
  for (int i = 0; i < warmup_streams_ && warmup_sent_ < warmup_; ++i) DispatchWarmup();
  if (in_flight_ == 0) WarmupDone();
}

void Worker::Begin(int64_t start_ns) {
  if (stopping_ || phase_ == Phase::kDone) return;
  phase_ = Phase::kMeasured;
  start_ns_ = start_ns;
  cpu0_ns_ = ThreadCpuNs();
  wall0_ns_ = MonoNowNs();
  events0_ = events_;
  reads0_ = client_.reads();
  late0_ = client_.late_reads();
  connections0_ = client_.connections_opened();
  if (o_.duration_s > 0) {
    stop_timer_.ExpireAtNs(start_ns_ + SecToNs(o_.duration_s), [this] {
      if (in_flight_ == 0 && queue_.empty()) Done();
    });
  }
  if (open_loop()) {
    next_due_ns_ = start_ns_;
    ScheduleNext();
  } else {
    for (int i = 0; i < concurrency_ && MoreToSend(); ++i) DispatchMeasured();
    if (in_flight_ == 0) Done();
  }
}

void Worker::Stop(const std::string& why) {
  if (stopping_ || phase_ == Phase::kDone) return;
  stopping_ = true;
  dispatch_timer_.Cancel();
  stop_timer_.Cancel();
  // Requests queued on the client side were never sent: they end as cancelled.
  while (!queue_.empty()) {
    RequestRecord& r = records_[queue_.front()];
    queue_.pop_front();
    r.outcome = Outcome::kCancelled;
    r.error = "never sent: " + why;
    r.end_ns = MonoNowNs();
  }
  if (in_flight_ == 0) {
    Done();
    return;
  }
  drain_timer_.ExpireAfterNs(o_.drain_timeout_ns, [this] { client_.Shutdown(); });
}

void Worker::StopNow() {
  if (phase_ == Phase::kDone || in_flight_ == 0) return;
  drain_timer_.Cancel();
  client_.Shutdown();
}

void Worker::Finished(Flight* f, RequestRecord* rec) {
  --in_flight_;
  counters_.in_flight.store(in_flight_, std::memory_order_relaxed);
  counters_.done.fetch_add(1, std::memory_order_relaxed);
  if (rec->outcome != Outcome::kOk) counters_.failed.fetch_add(1, std::memory_order_relaxed);
  flights_.erase(f);
  if (stopping_) {
    if (in_flight_ == 0) Done();
    return;
  }
  if (phase_ == Phase::kWarmup) {
    if (warmup_sent_ < warmup_)
      DispatchWarmup();
    else if (in_flight_ == 0)
      WarmupDone();
    return;
  }
  if (!open_loop()) {
    if (MoreToSend())
      DispatchMeasured();
    else if (in_flight_ == 0)
      Done();
  } else {
    if (!queue_.empty()) SendQueued();
    if (!MoreToSend() && queue_.empty() && in_flight_ == 0) Done();
  }
}

BenchRun Worker::TakeRun() {
  BenchRun part;
  part.start_ns = start_ns_;
  part.end_ns = done_ns_;
  for (RequestRecord& r : records_)
    if (!r.warmup) part.records.push_back(std::move(r));
  part.warmup_requests = warmup_sent_;
  part.max_in_flight = max_in_flight_;
  part.connections_opened =
      phase_ == Phase::kIdle ? 0 : client_.connections_opened() - connections0_;
  for (const auto& [id, t] : tcp_last_) http::AddConnection(part.tcp, t);
  part.thread_load.push_back(load_);
  return part;
}

http::ClientOptions Worker::LoadClientOptions(const BenchOptions& o) {
  // TCP_INFO as each request ends (two system calls a request, none per read): the load's
  // retransmits and RTT.
  http::ClientOptions c = o.client;
  c.capture_tcp_info = true;
  return c;
}

bool Worker::MoreToSend() const {
  if (stopping_) return false;
  if (open_loop()) {
    if (o_.num_requests > 0 && next_k_ >= uint64_t(o_.num_requests)) return false;
  } else if (o_.num_requests > 0 && measured_sent_ >= num_requests_) {
    return false;
  }
  if (o_.duration_s > 0 && MonoNowNs() >= start_ns_ + SecToNs(o_.duration_s)) return false;
  return true;
}

void Worker::AdvanceSchedule() {
  if (!o_.arrival_offsets_ns.empty()) {  // a replayed trace: its own times
    ++next_k_;
    next_due_ns_ =
        start_ns_ +
        o_.arrival_offsets_ns[std::min<size_t>(size_t(next_k_), o_.arrival_offsets_ns.size() - 1)];
    return;
  }
  // An infinite rate sends every request at once (vLLM's default); a gap is capped so that a
  // tiny rate (or a gamma draw far in its tail) cannot overflow the clock.
  double gap_s = 0;
  if (std::isfinite(o_.request_rate)) {
    const double shape = o_.burstiness;
    gap_s = std::gamma_distribution<double>(shape, 1.0 / (o_.request_rate * shape))(rng_);
  }
  next_due_ns_ += SecToNs(std::min(gap_s, kMaxArrivalGapS));
  ++next_k_;
}

void Worker::ScheduleNext() {
  while (next_k_ % uint64_t(threads_) != uint64_t(thread_)) AdvanceSchedule();
  if (!MoreToSend()) {
    if (in_flight_ == 0 && queue_.empty()) Done();
    return;
  }
  // An arrival due after --duration is not sent; the stop timer, or the last request to
  // finish, ends the thread's part.
  if (o_.duration_s > 0 && next_due_ns_ >= start_ns_ + SecToNs(o_.duration_s)) return;
  dispatch_timer_.ExpireAtNs(next_due_ns_, [this] {
    Arrive(next_due_ns_, next_k_);
    AdvanceSchedule();
    ScheduleNext();
  });
}

void Worker::Arrive(int64_t due, uint64_t k) {
  RequestRecord* rec = NewRecord(false, due, uint64_t(std::max(0, o_.warmup)) + k);
  if (o_.max_concurrency > 0 && in_flight_ >= concurrency_) {
    queue_.push_back(records_.size() - 1);
    return;
  }
  Send(rec);
}

void Worker::SendQueued() {
  while (!queue_.empty() && in_flight_ < concurrency_) {
    size_t pos = queue_.front();
    queue_.pop_front();
    Send(&records_[pos]);
  }
}

RequestRecord* Worker::NewRecord(bool warmup, int64_t scheduled, uint64_t number) {
  records_.emplace_back();  // a deque: pointers to earlier records stay valid
  RequestRecord* rec = &records_.back();
  rec->index = number;
  rec->warmup = warmup;
  rec->scheduled_ns = scheduled;
  return rec;
}

void Worker::DispatchWarmup() {
  uint64_t number = warmup_sent_++ * uint64_t(warmup_threads_) + uint64_t(thread_);
  Send(NewRecord(true, MonoNowNs(), number));
}

void Worker::DispatchMeasured() {
  uint64_t number =
      uint64_t(std::max(0, o_.warmup)) + measured_sent_++ * uint64_t(threads_) + uint64_t(thread_);
  Send(NewRecord(false, MonoNowNs(), number));
}

void Worker::Send(RequestRecord* rec) {
  // Prompts cycle in the order of the run's request numbers, whatever thread sends them.
  const Prompt& p = o_.prompts[(o_.first_prompt + rec->index) % o_.prompts.size()];
  rec->prompt_tokens = p.input_tokens;
  rec->requested_output_tokens = p.output_tokens;
  rec->chunks.reserve(size_t(std::clamp(p.output_tokens, 1, 4096)));  // one allocation
  rec->sent_ns = MonoNowNs();
  http::ClientRequest req;
  req.method = "POST";
  req.target = o_.endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
  req.body = RequestBody(o_, model_, p);
  req.headers.emplace_back("Content-Type", "application/json");
  req.headers.emplace_back("x-request-id", fmt::format("latdoc-bench-{}", rec->index));
  if (!o_.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + o_.api_key);
  auto f = std::make_unique<Flight>(this, rec, &parser_, &events_);
  Flight* raw = f.get();
  flights_.emplace(raw, std::move(f));
  ++in_flight_;
  counters_.in_flight.store(in_flight_, std::memory_order_relaxed);
  max_in_flight_ = std::max(max_in_flight_, in_flight_);
  client_.Send(std::move(req), raw);
}

Worker::~Worker() = default;

void Flight::OnBody(std::string_view data, int64_t now) {
  if (rec_->outcome != Outcome::kPending) {
    if (snippet_.size() < 300) snippet_.append(data.substr(0, 300 - snippet_.size()));
    return;
  }
  Status st = sse_.Feed(data, [&](const http::SseEvent& ev) {
    ++*events_;
    acct_.OnPayload(parser_->Parse(ev.data), now);
  });
  if (!st.ok() && rec_->outcome == Outcome::kPending) {
    rec_->outcome = Outcome::kStreamError;
    rec_->error = st.message();
  }
}

void Flight::OnComplete(const http::ExchangeResult& r) {
  int64_t now = r.times.end_ns > 0 ? r.times.end_ns : MonoNowNs();
  rec_->connect_ns = r.times.connect_ns;
  rec_->tls_ns = r.times.tls_ns;
  rec_->reused_connection = r.times.reused;
  if (r.tcp) worker_->OnTcp(r.connection_id, *r.tcp);
  if (rec_->outcome == Outcome::kPending && r.failure != http::FailureKind::kNone) {
    switch (r.failure) {
      case http::FailureKind::kConnect:
        rec_->outcome = Outcome::kConnect;
        break;
      case http::FailureKind::kTimeout:
        rec_->outcome = Outcome::kTimeout;
        break;
      case http::FailureKind::kProtocol:
        rec_->outcome = Outcome::kProtocol;
        break;
      default:
        rec_->outcome = r.status ? Outcome::kCutShort : Outcome::kReset;
        if (r.error == "cancelled") rec_->outcome = Outcome::kCancelled;
        break;
    }
    rec_->error = r.error;
  }
  if (rec_->outcome == Outcome::kHttpStatus) {
    rec_->error = fmt::format("HTTP {}: {}", r.status, snippet_);
  }
  acct_.Finish(r.body_complete, now);
  RequestRecord* rec = rec_;
  worker_->Finished(this, rec);  // deletes this
}

}  // namespace latdoc::loadgen::runner_internal
