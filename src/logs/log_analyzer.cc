#include "logs/log_analyzer.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/secrets.h"
#include "logs/log_analyzer_internal.h"
#include "logs/vllm_startup.h"

namespace latdoc::logs {
using namespace log_analyzer_internal;  // the analyzer's own types

std::string LogFacts::Label(int64_t t) const {
  if (!relative_time) {
    for (int64_t skip : day_skips) t += t >= skip ? 86400 * kSecNs : 0;
  }
  return TimeLabel(t, relative_time);
}

std::string TimeLabel(int64_t ts_ns, bool relative) {
  return relative ? RelativeLabel(ts_ns) : WallLabel(ts_ns);
}

namespace {

// The kind of a line by its event, or by its level when it has none.
LineKind KindOf(const ParsedLine& pl) {
  LineKind kind = LineKind::kOther;
  switch (pl.event) {
    case Event::kStats:
    case Event::kPrefixCacheV0:
    case Event::kOtherStats:
    case Event::kSglangDecode:
    case Event::kSglangPrefill:
      kind = LineKind::kStats;
      break;
    case Event::kTgiSuccess:
      kind = LineKind::kRequestLog;
      break;
    case Event::kReceivedRequest:
    case Event::kAddedRequest:
    case Event::kFinishedRequest:
    case Event::kAbortedRequest:
    case Event::kGeneratedResponse:
    case Event::kRequestDetails:
      kind = LineKind::kRequestLog;
      break;
    case Event::kAccess:
      kind = LineKind::kAccess;
      break;
    default:
      switch (pl.level) {
        case Level::kDebug: kind = LineKind::kDebug; break;
        case Level::kWarning: kind = LineKind::kWarning; break;
        case Level::kError:
        case Level::kCritical: kind = LineKind::kError; break;
        default: break;
      }
  }
  return kind;
}

}  // namespace

void LogAnalyzer::State::AddVolume(LineKind kind, uint64_t bytes) {
  auto k = static_cast<size_t>(kind);
  ++f.volume[k].lines;
  f.volume[k].bytes += bytes;
  if (!cur_ts) return;
  int64_t t = *cur_ts;
  int64_t sec = t / kSecNs;
  if (sec != cur_sec) {
    for (size_t i = 0; i < kLineKinds; ++i) {
      f.volume[i].peak_lines_per_s = std::max(f.volume[i].peak_lines_per_s, cur_second[i]);
      cur_second[i] = 0;
    }
    cur_sec = sec;
  }
  ++cur_second[k];
  // Volume series: buckets from first_ns, doubling their width when they run out.
  int64_t rel = std::max<int64_t>(0, t - *f.first_ns);
  if (f.volume_bucket_ns == 0) f.volume_bucket_ns = kSecNs;
  auto idx = static_cast<size_t>(rel / f.volume_bucket_ns);
  while (idx >= kMaxVolumeBuckets) {
    auto& vs = f.volume_series;
    size_t n = (vs.size() + 1) / 2;
    for (size_t i = 0; i < n; ++i) {
      std::array<uint64_t, kLineKinds> m = vs[2 * i];
      if (2 * i + 1 < vs.size()) {
        for (size_t j = 0; j < kLineKinds; ++j) m[j] += vs[2 * i + 1][j];
      }
      vs[i] = m;
    }
    vs.resize(n);
    f.volume_bucket_ns *= 2;
    idx = static_cast<size_t>(rel / f.volume_bucket_ns);
  }
  if (idx >= f.volume_series.size()) f.volume_series.resize(idx + 1);
  ++f.volume_series[idx][k];
}

void LogAnalyzer::State::SetTime(const ParsedLine& pl) {
  if (!pl.ts_ns) return;
  int64_t t = *pl.ts_ns;
  if (!relative_known) {
    relative_known = true;
    f.relative_time = pl.ts_is_relative;
  }
  if (!pl.ts_is_relative) {
    // "MM-DD" has no year: a jump back by more than half a year is New Year's Eve.
    constexpr int64_t kFeb29 = 31 + 28, kDayNs = 86400 * kSecNs;
    const int64_t day = t / kDayNs;
    t += year_offset_ns;
    if (last_wall && t + kHalfYearNs < *last_wall) {
      year_offset_ns += kYearNs;
      t += kYearNs;
      saw_feb29 = false;
    } else if (last_day && *last_day < kFeb29 && day > kFeb29 && !saw_feb29) {
      // From Feb 28 or before to Mar 1 or after with no line on Feb 29: a year without one
      // (or a leap year's silent day, a day off then), not a day of silence.
      year_offset_ns -= kDayNs;
      t -= kDayNs;
      f.day_skips.push_back(t);
    }
    saw_feb29 = saw_feb29 || day == kFeb29;
    last_day = day;
    last_wall = std::max(last_wall.value_or(t), t);
  }
  cur_ts = t;
  if (!f.first_ns) f.first_ns = t;
  if (!f.last_ns || t > *f.last_ns) f.last_ns = t;
}

// `kind`, or an error for a traceback line, unknown for a binary or unrecognised one.
LineKind LogAnalyzer::State::TracebackOrUnknown(const Line& line, const ParsedLine& pl,
                                                LineKind kind) {
  // Traceback lines, raw or with vLLM's prefix: the "Traceback" header, frames, and the code
  // lines under them. One traceback per header.
  bool traceback_body = false;
  if (pl.event == Event::kTraceback) {
    kind = LineKind::kError;
    if (pl.msg.substr(0, 10) == "Traceback ") {
      ++f.tracebacks;
      in_traceback = true;
    }
    traceback_body = true;
  } else if (in_traceback && (pl.source == Source::kUnknown || pl.source == Source::kEmpty) &&
             !pl.msg.empty() && (pl.msg[0] == ' ' || pl.msg[0] == '^')) {
    kind = LineKind::kError;
    traceback_body = true;
  } else if (pl.event == Event::kException) {
    in_traceback = false;
  } else if (pl.source != Source::kUnknown) {
    in_traceback = false;
  }
  if (pl.source == Source::kBinary) {
    ++f.binary_lines;
    input_binary_bytes += line.raw_bytes;
    kind = LineKind::kUnknown;
  } else if (pl.source == Source::kUnknown && !traceback_body) {
    ++f.unknown_lines;
    kind = LineKind::kUnknown;
    if (f.unknown_examples.size() < 5) {
      f.unknown_examples.push_back(
          fmt::format("{}:{}: {}", path, input_lines, RedactSecretsInText(line.text.substr(0, 120))));
    }
  }
  return kind;
}

// The last lines kept, and the recent ones other than stats lines.
void LogAnalyzer::State::KeepLastLines(const Line& line, LineKind kind) {
  std::string text = fmt::format("{}:{}: {}", path, input_lines,
                                 RedactSecretsInText(line.text.substr(0, 200)));
  auto push = [](std::vector<std::string>& v, const std::string& t) {
    if (v.size() >= kLastLinesKept) v.erase(v.begin());
    v.push_back(t);
  };
  if (kind != LineKind::kStats) push(recent, text);
  push(last, text);
}

// Debug, warning and error counts; warnings and errors into their message groups.
void LogAnalyzer::State::CountLevel(const Line& line, const ParsedLine& pl) {
  if (pl.level == Level::kDebug) {
    ++f.debug_lines;
    f.debug_bytes += line.raw_bytes;
    if (!f.debug_file_paths && pl.file.find('/') != std::string_view::npos) {
      f.debug_file_paths = true;
    }
  }
  if (pl.level == Level::kWarning) ++f.warning_lines;
  if (pl.level == Level::kError || pl.level == Level::kCritical) {
    if (pl.event != Event::kTraceback) ++f.error_lines;
  }
  if (pl.level == Level::kWarning || pl.level == Level::kCritical ||
      (pl.level == Level::kError && pl.event != Event::kTraceback)) {
    AddMessage(pl.level, pl);
  }
}

// vLLM's version and the arguments it logged at startup.
void LogAnalyzer::State::NoteVllmStartup(const ParsedLine& pl) {
  if (pl.source == Source::kVllm && pl.level == Level::kInfo && pl.event == Event::kNone) {
    if (auto version = VllmVersionFromMessage(pl.msg)) {
      f.vllm_version = std::move(*version);
    } else if (auto argv = VllmArgvFromLoggedArgs(pl.msg)) {
      f.vllm_args = VllmLoggedArgs{std::move(*argv), fmt::format("{}:{}", path, input_lines)};
    }
  }
}

// The bookkeeping of the line's event: stats series, request and access counters, SGLang,
// TGI, V0 preemptions and llama.cpp timings.
void LogAnalyzer::State::AddEvent(const ParsedLine& pl) {
  switch (pl.event) {
    case Event::kStats: AddStats(pl.stats); break;
    case Event::kPrefixCacheV0: AddV0PrefixHit(pl.value); break;
    case Event::kReceivedRequest: ++f.received_request_lines; break;
    case Event::kAddedRequest: ++f.added_request_lines; break;
    case Event::kFinishedRequest: ++f.finished_request_lines; break;
    case Event::kAbortedRequest: ++f.aborted_request_lines; break;
    case Event::kGeneratedResponse: ++f.generated_response_lines; break;
    case Event::kRequestDetails: ++f.request_detail_lines; break;
    case Event::kAccess:
      AddAccess(pl.access);
      if (pl.source == Source::kUvicorn) ++f.uvicorn_access_lines;
      break;
    case Event::kStatsDisabled: ++f.stats_disabled_warnings; break;
    case Event::kSglangDecode:
    case Event::kSglangPrefill: AddSglang(pl); break;
    case Event::kTgiSuccess:
      ++f.tgi.requests;
      if (pl.value >= 0) {
        tgi_queue_sum += pl.value;
        f.tgi.mean_queue_ms = tgi_queue_sum / static_cast<double>(++tgi_queue_n);
        f.tgi.max_queue_ms = std::max(f.tgi.max_queue_ms.value_or(0), pl.value);
      }
      break;
    case Event::kPreemptionV0:
      ++f.v0_preemption_warnings;
      if (pl.count > 0) {
        // The count is per server process: one that drops is a restart (or the next of two
        // rotated files), whose preemptions add to the earlier run's.
        if (pl.count < v0_run_preemptions) v0_earlier_runs_preemptions += v0_run_preemptions;
        v0_run_preemptions = pl.count;
        f.v0_cumulative_preemptions = v0_earlier_runs_preemptions + v0_run_preemptions;
      }
      break;
    case Event::kLlamaPromptTiming:
      ++f.llama.prompt_timings;
      f.llama.prompt_tokens += pl.count;
      f.llama.prompt_ms += pl.value;
      break;
    case Event::kLlamaEvalTiming:
      ++f.llama.eval_timings;
      f.llama.gen_tokens += pl.count;
      f.llama.gen_ms += pl.value;
      if (pl.value > 0 && pl.count > 0) {
        double tps = 1000.0 * static_cast<double>(pl.count) / pl.value;
        f.llama.min_gen_tps = std::min(f.llama.min_gen_tps.value_or(tps), tps);
        f.llama.max_gen_tps = std::max(f.llama.max_gen_tps.value_or(tps), tps);
      }
      break;
    default: break;
  }
}

// An SGLang decode or prefill batch line.
void LogAnalyzer::State::AddSglang(const ParsedLine& pl) {
  SglangFacts& g = f.sglang;
  const SglangBatch& b = pl.sglang;
  if (pl.event == Event::kSglangDecode) {
    ++g.decode_batches;
    if (b.queued > 0) ++g.queued_batches;
    if (b.gen_tps >= 0 && b.running > 0) {
      sglang_gen_sum += b.gen_tps;
      g.mean_gen_tps = sglang_gen_sum / static_cast<double>(++sglang_gen_n);
    }
  } else {
    ++g.prefill_batches;
    if (b.input_tps >= 0) g.peak_input_tps = std::max(g.peak_input_tps.value_or(0), b.input_tps);
  }
  g.max_running = std::max(g.max_running, b.running);
  g.max_queued = std::max(g.max_queued, b.queued);
  if (b.token_usage >= 0) g.peak_token_usage_pct = std::max(g.peak_token_usage_pct, 100 * b.token_usage);
}

LogAnalyzer::LogAnalyzer() : s_(std::make_unique<State>()) {}
LogAnalyzer::~LogAnalyzer() = default;

size_t LogAnalyzer::BeginInput(const std::string& path, Compression compression) {
  InputInfo in;
  in.path = path;
  in.compression = compression == Compression::kGzip   ? "gzip"
                   : compression == Compression::kZstd ? "zstd"
                                                       : "none";
  if (!s_->f.inputs.empty()) s_->SaveInput();
  s_->f.inputs.push_back(std::move(in));
  s_->current = s_->f.inputs.size() - 1;
  s_->path = path;
  s_->input_lines = s_->input_bytes = s_->input_recognised = s_->input_binary_bytes = 0;
  s_->in_traceback = false;
  return s_->current;
}

void LogAnalyzer::SelectInput(size_t index) {
  if (index == s_->current || index >= s_->f.inputs.size()) return;
  s_->SaveInput();
  s_->LoadInput(index);
}

void LogAnalyzer::SetInputBytes(uint64_t raw_bytes, uint64_t bytes) {
  if (s_->f.inputs.empty()) return;
  s_->f.inputs[s_->current].raw_bytes = raw_bytes;
  s_->f.inputs[s_->current].bytes = bytes;
}

uint64_t LogAnalyzer::recognised_lines_in_input() const { return s_->input_recognised; }
uint64_t LogAnalyzer::binary_bytes_in_input() const { return s_->input_binary_bytes; }
uint64_t LogAnalyzer::bytes_in_input() const { return s_->input_bytes; }

// Plan: parse; set the current time; pick the line's kind (stats, request log, access, level);
// count volume; then the event's own bookkeeping (stats series, message groups, counters).
void LogAnalyzer::AddLine(const Line& line) {
  State& s = *s_;
  if (s.f.inputs.empty()) BeginInput("<input>", Compression::kNone);
  LogFacts& f = s.f;
  const ParsedLine& pl = s.parser.Parse(line.text);
  ++f.lines;
  f.bytes += line.raw_bytes;
  ++s.input_lines;
  s.input_bytes += line.raw_bytes;
  ++f.inputs[s.current].lines;
  if (line.truncated) ++f.overlong_lines;
  if (line.no_newline) ++f.unterminated_last_lines;
  ++s.sources[static_cast<size_t>(pl.source)];
  if (pl.source != Source::kUnknown && pl.source != Source::kBinary &&
      pl.source != Source::kEmpty) {
    ++s.input_recognised;
  }
  s.SetTime(pl);
  const LineKind kind = s.TracebackOrUnknown(line, pl, KindOf(pl));
  s.AddVolume(kind, line.raw_bytes);
  s.KeepLastLines(line, kind);
  s.NoteFatal(pl);
  s.CountLevel(line, pl);
  s.NoteVllmStartup(pl);
  s.AddEvent(pl);
}

LogFacts LogAnalyzer::Snapshot() const {
  const State& s = *s_;
  LogFacts f = s.f;
  f.last_lines = s.last;
  for (size_t i = 0; i < kLineKinds; ++i) {
    f.volume[i].peak_lines_per_s = std::max(f.volume[i].peak_lines_per_s, s.cur_second[i]);
  }
  static constexpr Source kSources[] = {Source::kVllm,   Source::kUvicorn, Source::kLlamaCpp,
                                        Source::kSglang, Source::kTgi,     Source::kTorch,
                                        Source::kSystem, Source::kPython,  Source::kUnknown,
                                        Source::kBinary, Source::kEmpty};
  for (Source src : kSources) {
    uint64_t n = s.sources[static_cast<size_t>(src)];
    if (n > 0) f.sources.emplace_back(std::string(SourceName(src)), n);
  }
  if (f.first_ns && f.last_ns) {
    f.duration_ns = *f.last_ns - *f.first_ns;
    f.first_label = s.Label(*f.first_ns);
    f.last_label = s.Label(*f.last_ns);
  }
  for (const auto& [k, ep] : s.endpoints) f.endpoints.push_back(ep);
  std::sort(f.endpoints.begin(), f.endpoints.end(), [](const auto& a, const auto& b) {
    return a.count != b.count ? a.count > b.count : a.endpoint < b.endpoint;
  });
  if (f.endpoints.size() > 32) f.endpoints.resize(32);
  for (auto& g : f.messages) {
    if (g.last_ns) g.last_label = s.Label(*g.last_ns);
  }
  std::stable_sort(f.messages.begin(), f.messages.end(), [](const auto& a, const auto& b) {
    return a.count > b.count;
  });

  for (const EngineState& e : s.engines) f.engines.push_back(s.SnapshotEngine(e));
  std::sort(f.engines.begin(), f.engines.end(),
            [](const EngineFacts& a, const EngineFacts& b) { return a.engine < b.engine; });
  return f;
}

StatusOr<uint64_t> FeedLines(LineReader& reader, InputStream& in, LogAnalyzer& analyzer,
                             bool at_end) {
  uint64_t fed = 0;
  Line line;
  // An input is binary when none of its first lines is of a known form and at least half of
  // their bytes are binary. Checked once, at line kBinaryCheckLines or at the end.
  auto check_binary = [&](uint64_t lines_in_input) -> Status {
    if (analyzer.recognised_lines_in_input() > 0) return Status::Ok();
    if (analyzer.binary_bytes_in_input() * 2 <= analyzer.bytes_in_input()) return Status::Ok();
    return InvalidArgument(fmt::format(
        "{}: byte 0: binary data, not a text log (no vLLM, uvicorn or llama.cpp line in the "
        "first {} lines)",
        in.path(), lines_in_input));
  };
  for (;;) {
    ASSIGN_OR_RETURN(bool got, reader.Next(&line));
    if (!got) break;
    analyzer.AddLine(line);
    ++fed;
    if (line.number == kBinaryCheckLines) RETURN_IF_ERROR(check_binary(line.number));
  }
  if (at_end) {
    if (reader.TakePartial(&line)) {
      analyzer.AddLine(line);
      ++fed;
    }
    if (reader.lines() > 0 && reader.lines() < kBinaryCheckLines) {
      RETURN_IF_ERROR(check_binary(reader.lines()));
    }
  }
  analyzer.SetInputBytes(in.raw_offset(), reader.bytes_consumed());
  return fed;
}

StatusOr<LogFacts> AnalyzeInputs(const std::vector<std::string>& paths,
                                 const AnalyzeOptions& opts) {
  LogAnalyzer analyzer;
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
    analyzer.BeginInput(path, in->compression());
    LineReader reader(in.get(), opts.max_line_bytes);
    ASSIGN_OR_RETURN(uint64_t n, FeedLines(reader, *in, analyzer, /*at_end=*/true));
    (void)n;
  }
  return analyzer.Snapshot();
}

}  // namespace latdoc::logs
