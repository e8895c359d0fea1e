#include "host/collector_internal.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "base/strings.h"
#include "host/proc_parsers.h"
#include "host/server_process.h"
#include "host/vllm_config.h"

// The server-process probes of CollectHostFacts: which process, its flags, environment, config
// file and certificate, and its threads, cgroup and writes over the sample interval.
namespace latdoc::host::collector_internal {

// The server process (`pid`, else found by command line), with its flags; for vLLM its --config
// file and TLS certificate. Not found: facts.server stays empty and server_note says why.
void CollectServerProcess(const SysRoot& fs, std::optional<int64_t> pid, HostFacts* facts) {
  auto found = FindServerProcess(fs, pid);
  if (found.ok()) {
    ServerProcess s;
    s.pid = found->pid;
    s.kind = found->kind;
    s.argv = found->argv;
    if (s.kind == "vllm") {
      s.config_file_args = ReadVllmConfigFile(fs, s.pid, s.argv);
      s.tls_cert = ReadServerCert(
          fs, s.pid, s.config_file_args.known() ? WithConfigFileArgs(s.argv, *s.config_file_args) : s.argv);
    }
    facts->server = std::move(s);
  } else {
    facts->server_note = found.status().message();
  }
}

void CollectServerStatic(const SysRoot& fs, ServerProcess* s) {
  const std::string base = "/proc/" + std::to_string(s->pid);
  auto env = fs.Read(base + "/environ");
  if (env.ok()) {
    s->env = Fact<std::map<std::string, std::string>>::Known(FilterEnv(SplitNul(*env)),
                                                              base + "/environ");
  } else {
    s->env = Fact<std::map<std::string, std::string>>::Unknown(
        env.status().message() + " (run as the server's user or root)");
  }
  auto status = fs.Read(base + "/status");
  if (status.ok()) {
    s->cpus_allowed_list = FromOptional(StatusField(*status, "Cpus_allowed_list"),
                                        base + "/status", base + "/status: no Cpus_allowed_list");
    s->mems_allowed_list = FromOptional(StatusField(*status, "Mems_allowed_list"),
                                        base + "/status", base + "/status: no Mems_allowed_list");
  } else {
    s->cpus_allowed_list = s->mems_allowed_list = Fact<std::string>::Unknown(
        status.status().message());
  }
}

// The flags of a vLLM server's --config file, read as the server sees its file system: through
// /proc/PID/root (its container's mount namespace) or, for a relative path, /proc/PID/cwd.
Fact<std::vector<std::string>> ReadVllmConfigFile(const SysRoot& fs, int64_t pid,
                                                  const std::vector<std::string>& argv) {
  const std::optional<std::string> path = VllmConfigPath(argv);
  if (!path) return Fact<std::vector<std::string>>::Unknown("no --config file");
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string where = !path->empty() && (*path)[0] == '/' ? proc + "/root" + *path
                                                                 : proc + "/cwd/" + *path;
  auto text = fs.Read(where, 1 << 20);
  if (!text.ok()) return Fact<std::vector<std::string>>::Unknown("--config " + *path + ": " + text.status().message());
  auto args = VllmConfigFileArgs(*text);
  if (!args.ok()) return Fact<std::vector<std::string>>::Unknown("--config " + *path + ": " + args.status().message());
  return Fact<std::vector<std::string>>::Known(RedactArgv(std::move(*args)), where);
}

namespace {

// vLLM's --ssl-certfile (uvicorn's ssl_certfile), "--ssl-certfile F" or "--ssl-certfile=F";
// vLLM's parser takes the underscored spelling too. The last one given wins, as in argparse.
std::optional<std::string> SslCertfilePath(const std::vector<std::string>& argv) {
  std::optional<std::string> path;
  for (size_t i = 0; i < argv.size(); ++i) {
    for (std::string_view flag : {"--ssl-certfile", "--ssl_certfile"}) {
      const std::string& a = argv[i];
      if (a == flag && i + 1 < argv.size()) path = argv[i + 1];
      else if (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=')
        path = a.substr(flag.size() + 1);
    }
  }
  return path;
}

std::string X509NameText(X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);  // as http/client.cc prints the peer's
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return out;
}

// The leaf of a PEM certificate file: the first "-----BEGIN CERTIFICATE-----" block (uvicorn
// hands the file to ssl.SSLContext.load_cert_chain, which takes the leaf first).
StatusOr<ServerCert> ParseLeafCertificate(std::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Internal("out of memory");
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) return DataLoss("no PEM certificate in the file");
  ServerCert c;
  c.subject = X509NameText(X509_get_subject_name(cert));
  c.issuer = X509NameText(X509_get_issuer_name(cert));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const bool digested = X509_digest(cert, EVP_sha256(), md, &len) == 1;
  X509_free(cert);
  if (!digested) return Internal("SHA-256 of the certificate failed");
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int k = 0; k < len; ++k) {
    c.sha256_hex += kHex[md[k] >> 4];
    c.sha256_hex += kHex[md[k] & 15];
  }
  return c;
}

}  // namespace

// The certificate file vLLM serves, read as the server sees it (as ReadVllmConfigFile does).
Fact<ServerCert> ReadServerCert(const SysRoot& fs, int64_t pid,
                                const std::vector<std::string>& argv) {
  const std::optional<std::string> path = SslCertfilePath(argv);
  if (!path || path->empty()) return Fact<ServerCert>::Unknown("no --ssl-certfile");
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string where = (*path)[0] == '/' ? proc + "/root" + *path : proc + "/cwd/" + *path;
  auto text = fs.Read(where, 1 << 20);
  if (!text.ok()) return Fact<ServerCert>::Unknown("--ssl-certfile " + *path + ": " + text.status().message());
  auto cert = ParseLeafCertificate(*text);
  if (!cert.ok()) return Fact<ServerCert>::Unknown("--ssl-certfile " + *path + ": " + cert.status().message());
  cert->path = *path;
  return Fact<ServerCert>::Known(std::move(*cert), where);
}

// The server's threads (the 16 busiest, by CPU over the interval), cgroup throttling and
// write rate (its own and its children's), from the two samples `dt_s` seconds apart.
void ServerDeltas(const Counters& first, const Counters& second, double dt_s, ServerProcess* server) {
  ServerProcess& s = *server;
  const std::string base = "/proc/" + std::to_string(s.pid);
  if (!first.tasks_status.ok()) {
    s.threads = Fact<std::vector<ThreadCpu>>::Unknown(first.tasks_status.message());
  } else if (!second.tasks_status.ok() || second.tasks.empty()) {
    s.threads = Fact<std::vector<ThreadCpu>>::Unknown(
        "process " + std::to_string(s.pid) + " exited during sampling");
  } else {
    static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
    std::vector<ThreadCpu> threads;
    for (const auto& [tid, b] : second.tasks) {
      auto it = first.tasks.find(tid);
      if (it == first.tasks.end()) continue;  // started during the interval
      const TaskStat& a = it->second;
      int64_t ticks = (b.utime_ticks + b.stime_ticks) - (a.utime_ticks + a.stime_ticks);
      ThreadCpu t{tid, b.comm, std::max<int64_t>(ticks, 0) / ticks_per_s / dt_s * 100.0,
                  b.processor, second.task_pid.at(tid), ""};
      for (const auto& child : s.children) {
        if (child.pid == t.pid) t.process = child.name;
      }
      threads.push_back(std::move(t));
    }
    std::sort(threads.begin(), threads.end(), [](const ThreadCpu& x, const ThreadCpu& y) {
      return x.cpu_pct != y.cpu_pct ? x.cpu_pct > y.cpu_pct : x.tid < y.tid;
    });
    if (threads.size() > 16) threads.resize(16);
    s.threads = Fact<std::vector<ThreadCpu>>::Known(std::move(threads), base + "/task/*/stat");
  }
  if (s.cgroup_cpu.known()) {
    CgroupCpu cg = *s.cgroup_cpu;
    CgroupDeltas(first, second, &cg);
    s.cgroup_cpu = Fact<CgroupCpu>::Known(std::move(cg), s.cgroup_cpu.source);
  }
  if (first.write_bytes && second.write_bytes) {
    int64_t bytes = *second.write_bytes - *first.write_bytes;
    size_t counted = 0;
    for (const auto& [child, w] : second.child_write_bytes) {
      auto it = first.child_write_bytes.find(child);
      if (it == first.child_write_bytes.end()) continue;
      bytes += w - it->second;
      ++counted;
    }
    s.write_bytes_per_s = Fact<double>::Known(
        static_cast<double>(bytes) / dt_s,
        counted ? base + "/io and " + std::to_string(counted) +
                      (counted == 1 ? " child process" : " child processes")
                : base + "/io");
  } else {
    const Status& st = !first.io_status.ok() ? first.io_status : second.io_status;
    s.write_bytes_per_s = Fact<double>::Unknown(
        st.ok() ? "process exited during sampling" : st.message() + " (needs same uid or root)");
  }
}

}  // namespace latdoc::host::collector_internal
