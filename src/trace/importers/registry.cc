#include "trace/importers/registry.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "base/clock.h"
#include "base/file_util.h"
#include "trace/importers/common/sqlite_db.h"
#include "trace/importers/kineto/kineto_importer.h"
#include "trace/importers/nsys/nsys_importer.h"
#include "trace/importers/rocpd/rocpd_importer.h"
#include "trace/importers/rocprof_v1/rocprof_v1_importer.h"
#include "trace/importers/rocprofv3/rocprofv3_importer.h"

namespace latdoc::trace {

const std::vector<std::unique_ptr<Importer>>& AllImporters() {
  static const auto* list = [] {
    auto* v = new std::vector<std::unique_ptr<Importer>>();
    v->push_back(std::make_unique<KinetoImporter>());
    v->push_back(std::make_unique<RocpdImporter>());
    v->push_back(std::make_unique<NsysImporter>());
    v->push_back(std::make_unique<RocprofV1CsvImporter>());
    v->push_back(std::make_unique<RocprofV1JsonImporter>());
    v->push_back(std::make_unique<StatsCsvImporter>());
    v->push_back(std::make_unique<Rocprofv3CsvImporter>());
    v->push_back(std::make_unique<Rocprofv3JsonImporter>());
    return v;
  }();
  return *list;
}

StatusOr<const Importer*> DetectFormat(const std::string& path) {
  // Detection reads the head and the importer reads the file again (SQLite and the split parse
  // also seek), so a pipe or FIFO would be consumed, or block, before the import began.
  struct stat st;
  if (path != "-" && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) &&
      !S_ISDIR(st.st_mode)) {
    return InvalidArgument(path + ": not a regular file (a pipe, FIFO or device); latdoc trace "
                                  "reads a trace more than once: save it to a file first");
  }
  if (path == "-") {
    return InvalidArgument("-: latdoc trace reads a trace more than once, not from standard "
                           "input: save it to a file first");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
  std::string head(64 * 1024, '\0');
  size_t got = 0;
  while (got < head.size()) {
    StatusOr<size_t> n = in->Read(head.data() + got, head.size() - got);
    if (!n.ok()) {
      if (got == 0) return n.status();
      break;  // a damaged tail is the importer's to report, with its offset
    }
    if (*n == 0) break;
    got += *n;
  }
  head.resize(got);
  if (got == 0) return InvalidArgument(path + ": empty file");
  const Importer* best = nullptr;
  int best_score = 0;
  for (const auto& imp : AllImporters()) {
    const int s = imp->Detect(path, head);
    if (s > best_score) {
      best_score = s;
      best = imp.get();
    }
  }
  if ((best == nullptr || best_score < 10) && IsSqliteHeader(head)) {
    // An SQLite file neither SQLite importer claimed: say why when SQLite cannot read it
    // (locked, cut short, damaged) rather than call it unknown.
    StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path);
    if (!db.ok()) return db.status();
    return InvalidArgument(path + ": an SQLite file that is neither rocpd (no rocpd_metadata "
                                  "table) nor a Nsight Systems export (no META_DATA_EXPORT or "
                                  "CUPTI_ACTIVITY_KIND_KERNEL table)");
  }
  if (best == nullptr || best_score < 10) {
    return InvalidArgument(path + ": unknown trace format (not Kineto JSON, rocprof, rocprofv3, "
                                  "rocpd or Nsight Systems SQLite)");
  }
  return best;
}

namespace {

// A file as the file system knows it, whatever the spelling of its path ("a.json", "./a.json",
// a link); nullopt when it cannot be looked up (then the importer reports why).
using FileId = std::pair<dev_t, ino_t>;
std::optional<FileId> IdOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

}  // namespace

std::vector<FileResult> ImportFiles(const std::vector<std::string>& paths,
                                    const ImportOptions& options, Trace& trace,
                                    ImportTimings* timings) {
  std::vector<FileResult> results;
  std::set<FileId> given;     // files named on the command line and read
  std::set<FileId> siblings;  // files an importer read with them (a CSV set's members)
  for (const std::string& path : paths) {
    FileResult r;
    r.path = path;
    const std::optional<FileId> id = IdOf(path);
    if (id && given.count(*id) != 0) {
      r.format = "(already read)";
      results.push_back(std::move(r));
      continue;
    }
    if (id && siblings.count(*id) != 0) {
      r.format = "(read with its set)";
      results.push_back(std::move(r));
      continue;
    }
    const int64_t t0 = MonoNowNs();
    StatusOr<const Importer*> imp = DetectFormat(path);
    if (!imp.ok()) {
      r.status = imp.status();
      results.push_back(std::move(r));
      continue;
    }
    r.format = std::string((*imp)->format());
    std::vector<std::string> consumed;
    const size_t sources_before = trace.sources.size();
    r.status = (*imp)->Import(path, options, trace, consumed);
    r.import_s = NsToSec(MonoNowNs() - t0);
    r.peak_rss_kib = PeakRssKib();
    if (trace.sources.size() > sources_before) {
      r.source = static_cast<int>(sources_before);
      // Every importer's error lands on its file, whichever way the importer stopped.
      SourceFile& src = trace.sources[sources_before];
      if (!r.status.ok() && !src.fatal_error) src.fatal_error = r.status.message();
    }
    if (id) given.insert(*id);
    for (const std::string& c : consumed) {
      if (std::optional<FileId> cid = IdOf(c)) siblings.insert(*cid);
    }
    results.push_back(std::move(r));
  }
  const int64_t t0 = MonoNowNs();
  trace.Finalize();
  if (timings != nullptr) {
    timings->finalize_s = NsToSec(MonoNowNs() - t0);
    timings->finalize_peak_rss_kib = PeakRssKib();
  }
  return results;
}

int64_t PeakRssKib() {
  struct rusage u;
  return ::getrusage(RUSAGE_SELF, &u) == 0 ? static_cast<int64_t>(u.ru_maxrss) : 0;
}

}  // namespace latdoc::trace
