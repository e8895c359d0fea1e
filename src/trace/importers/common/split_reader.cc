#include "trace/importers/common/split_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

namespace latdoc::trace {

std::optional<uint64_t> FindSeam(int fd, uint64_t from, uint64_t size) {
  constexpr size_t kWindow = size_t{256} << 10;
  std::string buf(static_cast<size_t>(std::min<uint64_t>(kWindow, size - std::min(from, size))), '\0');
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  for (size_t i = 0; i < got; ++i) {
    if (buf[i] != ',') continue;
    size_t j = i + 1;
    while (j < got && (buf[j] == ' ' || buf[j] == '\n' || buf[j] == '\r' || buf[j] == '\t')) ++j;
    if (j < got && buf[j] == '{') return from + j;
  }
  return std::nullopt;
}

std::optional<size_t> FindSeamIn(std::string_view text, size_t* from) {
  for (size_t i = *from; i < text.size(); ++i) {
    if (text[i] != ',') continue;
    size_t j = i + 1;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\n' || text[j] == '\r' || text[j] == '\t')) ++j;
    if (j == text.size()) {
      *from = i;
      return std::nullopt;
    }
    if (text[j] == '{') return j;
  }
  *from = text.size();
  return std::nullopt;
}

void MergePart(Trace& part, uint16_t source, Trace& trace) {
  std::vector<NameId> id(part.names.size());
  for (NameId i = 0; i < id.size(); ++i) id[i] = trace.names.Intern(part.names.Get(i));
  auto append = [&](auto& into, auto& from, std::string_view what) {
    std::string error;
    if (!from.TryForEach([&](auto e) {
          e.name = id[e.name];
          e.source = source;
          into.push_back(e);
        }, &error)) {
      trace.sources[source].issues.Add(std::string(what) + " lost", "a part's spill file", error);
    }
    from.clear();
  };
  append(trace.gpu_ops, part.gpu_ops, "GPU ops");
  append(trace.api_calls, part.api_calls, "API calls");
  append(trace.cpu_ops, part.cpu_ops, "CPU ops");
  for (OpWork w : part.op_work) {
    w.op = id[w.op];
    w.source = source;
    trace.op_work.push_back(w);
  }
  part.op_work.clear();
  SourceFile& to = trace.sources[source];
  const SourceFile& from = part.sources[0];
  to.events_read += from.events_read;
  for (const auto& [reason, n] : from.issues.count_by_reason) to.issues.count_by_reason[reason] += n;
  for (const auto& e : from.issues.examples) {
    if (to.issues.examples.size() >= ImportIssues::kMaxExamples) break;
    to.issues.examples.push_back(e);
  }
}

}  // namespace latdoc::trace
