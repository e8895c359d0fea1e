#include "trace/importers/registry.h"

#include <algorithm>

#include "base/clock.h"
#include "base/file_util.h"
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
  if (best == nullptr || best_score < 10) {
    return InvalidArgument(path + ": unknown trace format (not Kineto JSON, rocprof, rocprofv3, "
                                  "rocpd or Nsight Systems SQLite)");
  }
  return best;
}

std::vector<FileResult> ImportFiles(const std::vector<std::string>& paths,
                                    const ImportOptions& options, Trace& trace,
                                    ImportTimings* timings) {
  std::vector<FileResult> results;
  std::vector<std::string> consumed;
  for (const std::string& path : paths) {
    FileResult r;
    r.path = path;
    if (std::find(consumed.begin(), consumed.end(), path) != consumed.end()) {
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
    r.status = (*imp)->Import(path, options, trace, consumed);
    r.import_s = NsToSec(MonoNowNs() - t0);
    consumed.push_back(path);
    results.push_back(std::move(r));
  }
  const int64_t t0 = MonoNowNs();
  trace.Finalize();
  if (timings != nullptr) timings->finalize_s = NsToSec(MonoNowNs() - t0);
  return results;
}

}  // namespace latdoc::trace
