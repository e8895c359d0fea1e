// End-to-end TLS inspection: `latdoc net` against `latdoc sim` behind tests/tools' tls_proxy, a
// TLS terminator with a certificate of its own, on loopback. Planted causes: a certificate the
// test's "inspection CA" issued where the server's own was expected (re-signed TLS), and a
// proxy that holds every chunk 30 ms (an inspection device slowing HTTPS). The clean case, the
// server's own certificate and no delay, reports neither. Certificates are made with the
// openssl command line; where it is missing the tests say so and skip.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "net/net_facts.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using ::testing::HasSubstr;

int Sh(const std::string& cmd, std::string* out = nullptr) {
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return -1;
  std::string text;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  int st = ::pclose(f);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// The server's own certificate, and one for the same name from an inspection CA.
class Certs {
 public:
  Certs() : dir_(TempPath(fmt::format("tls_{}", ::getpid()))) {
    Sh("rm -rf " + dir_ + " && mkdir -p " + dir_);
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2";
    ok_ = Run(fmt::format("openssl req -x509 {} -keyout {d}/srv.key -out {d}/srv.pem "
                          "-subj /CN=latdoc-test-server", ec, fmt::arg("d", dir_))) &&
          Run(fmt::format("openssl req -x509 {} -keyout {d}/ca.key -out {d}/ca.pem "
                          "-subj '/O=Inspecting Firewall/CN=latdoc test inspection CA'",
                          ec, fmt::arg("d", dir_))) &&
          Run(fmt::format("openssl req {} -keyout {d}/ins.key -out {d}/ins.csr "
                          "-subj /CN=latdoc-test-server", ec, fmt::arg("d", dir_))) &&
          Run(fmt::format("openssl x509 -req -in {d}/ins.csr -CA {d}/ca.pem -CAkey {d}/ca.key "
                          "-CAcreateserial -days 2 -out {d}/ins.pem", fmt::arg("d", dir_)));
  }
  ~Certs() { Sh("rm -rf " + dir_); }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // As `openssl x509 -fingerprint -sha256` prints it: "AB:CD:...".
  std::string Fingerprint(const std::string& pem) const {
    std::string out;
    Sh("openssl x509 -noout -fingerprint -sha256 -in " + Path(pem), &out);
    auto eq = out.find('=');
    return eq == std::string::npos ? "" : out.substr(eq + 1, out.find('\n') - eq - 1);
  }

 private:
  bool Run(const std::string& cmd) {
    std::string out;
    if (Sh(cmd, &out) == 0) return true;
    why_ = cmd + ": " + out;
    return false;
  }
  std::string dir_;
  bool ok_ = false;
  std::string why_;
};

class TlsProxy {
 public:
  TlsProxy(const Certs& c, const std::string& cert, int upstream_port, int delay_ms = 0,
           bool chain = false)
      : proc_([&] {
          std::vector<std::string> argv = {LATDOC_TLS_PROXY, "--cert", c.Path(cert + ".pem"),
                                           "--key", c.Path(cert + ".key"), "--upstream",
                                           fmt::format("127.0.0.1:{}", upstream_port),
                                           "--delay-ms", std::to_string(delay_ms)};
          if (chain) argv.insert(argv.end(), {"--chain", c.Path("ca.pem")});
          return argv;
        }()) {
    std::string line = proc_.ReadLine();
    if (line.rfind("listening ", 0) == 0) port_ = std::stoi(line.substr(10));
    else ADD_FAILURE() << "tls_proxy did not start: '" << line << "'";
  }
  std::string url() const { return fmt::format("https://127.0.0.1:{}", port_); }

 private:
  Process proc_;
  int port_ = 0;
};

struct NetRun {
  int exit_code = -1;
  std::string out;
  nlohmann::json doc;
};

NetRun RunNet(std::vector<std::string> args) {
  const std::string json_path = TempPath(fmt::format("tls_{}_{}.json", ::getpid(), std::rand()));
  args.insert(args.begin(), "net");
  args.insert(args.end(), {"--insecure", "-n", "3", "--idle-wait", "0", "--no-path", "--json",
                           json_path, "--no-color", "--show-ok"});
  RunResult r = RunLatdoc(args);
  NetRun n{r.exit_code, r.out + r.err, nullptr};
  auto text = ReadFileToString(json_path);
  ::unlink(json_path.c_str());
  if (text.ok()) n.doc = nlohmann::json::parse(*text, nullptr, false);
  return n;
}

const nlohmann::json* FindingById(const nlohmann::json& doc, const std::string& id) {
  for (const auto& f : doc["findings"])
    if (f.value("id", "") == id) return &f;
  return nullptr;
}

double Evidence(const nlohmann::json& f, const std::string& name) {
  for (const auto& e : f["evidence"])
    if (e.value("name", "") == name && e["value"].is_number()) return e["value"].get<double>();
  return -1;
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Sh("openssl version") != 0) GTEST_SKIP() << "the openssl command is not installed";
    if (!certs_.ok()) GTEST_SKIP() << "could not make test certificates: " << certs_.why();
  }
  Certs certs_;
};

// Clean: the server's own certificate behind no delay. Its fingerprint matches (given as
// openssl prints it, with colons), and HTTPS costs no more than plain HTTP at first byte.
TEST_F(TlsTest, ServersOwnCertificateAndNoDelayReportNothing) {
  SimProcess sim({"--time-scale", "0.1"});
  TlsProxy proxy(certs_, "srv", sim.port());
  const std::string fp = certs_.Fingerprint("srv.pem");
  ASSERT_FALSE(fp.empty());
  NetRun r = RunNet({"--url", proxy.url(), "--expect-cert-sha256", fp, "--plain-url", sim.url()});
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  // (The exit code is not this test's: net.round_trip judges the proxy's hop against the
  // simulator's sub-millisecond TTFT.)
  const nlohmann::json& chain = r.doc["facts"]["probe"]["tls_chain"];
  ASSERT_EQ(chain.size(), 1u) << chain.dump();
  EXPECT_EQ(chain[0]["subject"], "CN=latdoc-test-server");
  EXPECT_EQ(chain[0]["sha256"], *net::NormalizeSha256Hex(fp));
  const nlohmann::json* f = FindingById(r.doc, "net.tls_inspection");
  ASSERT_NE(f, nullptr) << r.out;
  EXPECT_EQ((*f)["severity"], "ok") << r.out;
  const nlohmann::json* o = FindingById(r.doc, "net.tls_overhead");
  ASSERT_NE(o, nullptr) << r.out;
  EXPECT_EQ((*o)["severity"], "ok") << r.out;
  EXPECT_THAT(r.out, HasSubstr("plain HTTP (--plain-url)"));
}

// Planted: the proxy shows a certificate from the inspection CA. The finding fails and names
// the issuer; the chain the client saw (leaf and CA) is in the facts.
TEST_F(TlsTest, ResignedCertificateNamesTheIssuer) {
  SimProcess sim({"--time-scale", "0.1"});
  TlsProxy proxy(certs_, "ins", sim.port(), 0, /*chain=*/true);
  NetRun r = RunNet({"--url", proxy.url(), "--expect-cert-sha256", certs_.Fingerprint("srv.pem")});
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const nlohmann::json& chain = r.doc["facts"]["probe"]["tls_chain"];
  ASSERT_EQ(chain.size(), 2u) << chain.dump();
  const std::string issuer = "CN=latdoc test inspection CA,O=Inspecting Firewall";
  EXPECT_EQ(chain[0]["issuer"], issuer);
  EXPECT_EQ(chain[1]["subject"], issuer);
  const nlohmann::json* f = FindingById(r.doc, "net.tls_inspection");
  ASSERT_NE(f, nullptr) << r.out;
  EXPECT_EQ((*f)["severity"], "fail") << r.out;
  EXPECT_THAT((*f)["title"].get<std::string>(),
              HasSubstr("TLS is re-signed on the path: the certificate shown is issued by " + issuer));
}

// Planted: the HTTPS path holds each chunk from the server 30 ms. Against plain HTTP to the
// same server, first byte is at least that much later and the stream slower: fail.
TEST_F(TlsTest, SlowHttpsPathIsNamedAgainstPlainHttp) {
  SimProcess sim({"--time-scale", "0.1"});
  TlsProxy proxy(certs_, "srv", sim.port(), 30);
  NetRun r = RunNet({"--url", proxy.url(), "--plain-url", sim.url(), "--stream-tokens", "32"});
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const nlohmann::json* o = FindingById(r.doc, "net.tls_overhead");
  ASSERT_NE(o, nullptr) << r.out;
  EXPECT_EQ((*o)["severity"], "fail") << r.out;
  const double added = Evidence(*o, "ttfb_added");
  EXPECT_GE(added, 29.0) << r.out;
  EXPECT_LE(added, 200.0) << r.out;
  EXPECT_THAT((*o)["title"].get<std::string>(), HasSubstr("at first byte over plain HTTP"));
  // No expected fingerprint: the chain is said as information.
  const nlohmann::json* f = FindingById(r.doc, "net.tls_inspection");
  ASSERT_NE(f, nullptr) << r.out;
  EXPECT_EQ((*f)["severity"], "info") << r.out;
}

// The server's own certificate from the server host: `latdoc doctor --collect` on a host tree
// whose vLLM was started with --ssl-certfile, then `diagnose --facts` against the proxy. Planted:
// the proxy shows the inspection CA's certificate; net.tls_inspection fails naming that issuer
// and the server's --ssl-certfile, with no --expect-cert-sha256. With the server's own
// certificate behind the proxy: ok.
TEST_F(TlsTest, DiagnoseComparesWithTheServersCertfileFromDoctorFacts) {
  const std::string tree = certs_.Path("tree");
  ASSERT_EQ(Sh("cp -r tests/data/host/mi300x_built/tree " + tree), 0);
  ASSERT_EQ(Sh("mkdir -p " + tree + "/proc/4242/root/etc/vllm && cp " + certs_.Path("srv.pem") +
               " " + tree + "/proc/4242/root/etc/vllm/cert.pem"), 0);
  ASSERT_EQ(Sh("printf '/usr/bin/python3\\0/usr/local/bin/vllm\\0serve\\0m\\0--ssl-certfile"
               "\\0/etc/vllm/cert.pem\\0' > " + tree + "/proc/4242/cmdline"), 0);
  const std::string facts = certs_.Path("facts.json");
  RunResult c = RunLatdoc({"doctor", "--sysroot", tree, "--collect", facts});
  ASSERT_TRUE(c.exit_code == 0 || c.exit_code == 1) << c.err;
  auto text = ReadFileToString(facts);
  ASSERT_TRUE(text.ok()) << c.err;
  const nlohmann::json fj = nlohmann::json::parse(*text);
  ASSERT_TRUE(fj["server"]["tls_cert"].contains("value")) << fj["server"]["tls_cert"].dump();
  EXPECT_EQ(fj["server"]["tls_cert"]["value"]["sha256_hex"],
            *net::NormalizeSha256Hex(certs_.Fingerprint("srv.pem")));
  for (const bool inspected : {true, false}) {
    SimProcess sim({"--time-scale", "0.1"});
    TlsProxy proxy(certs_, inspected ? "ins" : "srv", sim.port(), 0, /*chain=*/inspected);
    const std::string out = certs_.Path("d.json");
    RunResult r = RunLatdoc({"diagnose", "--url", proxy.url(), "--insecure", "--facts", facts,
                             "--requests", "4", "--concurrency", "2", "--baseline-requests", "2",
                             "--net-samples", "3", "--input-len", "8", "--output-len", "4",
                             "--json", out, "--quiet"});
    auto dtext = ReadFileToString(out);
    ASSERT_TRUE(dtext.ok()) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(*dtext);
    ASSERT_TRUE(doc.contains("net")) << r.err;
    const nlohmann::json* f = FindingById(doc["net"], "net.tls_inspection");
    ASSERT_NE(f, nullptr) << doc["net"].dump();
    if (inspected) {
      EXPECT_EQ((*f)["severity"], "fail") << (*f).dump();
      EXPECT_THAT((*f)["title"].get<std::string>(),
                  HasSubstr("the certificate shown is issued by CN=latdoc test inspection "
                            "CA,O=Inspecting Firewall, not the server's own"));
      EXPECT_THAT((*f)["title"].get<std::string>(),
                  HasSubstr("from the server's --ssl-certfile /etc/vllm/cert.pem, is "
                            "CN=latdoc-test-server issued by CN=latdoc-test-server"));
      EXPECT_EQ(r.exit_code, 1) << r.err;
    } else {
      EXPECT_EQ((*f)["severity"], "ok") << (*f).dump();
    }
    EXPECT_EQ(doc["net"]["facts"]["expected_cert_source"],
              "the server's --ssl-certfile /etc/vllm/cert.pem");
  }
}

// Bad input: a fingerprint that is not one, and the flags on URLs they cannot apply to.
TEST(TlsFlagsTest, BadValuesExit2WithTheirReason) {
  RunResult r = RunLatdoc({"net", "--url", "https://127.0.0.1:1", "--expect-cert-sha256", "abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--expect-cert-sha256 'abc': expected 64 hex digits"));
  r = RunLatdoc({"net", "--url", "http://127.0.0.1:1", "--expect-cert-sha256", std::string(64, 'a')});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--expect-cert-sha256 needs an https --url (got http://127.0.0.1:1)"));
  r = RunLatdoc({"net", "--url", "https://127.0.0.1:1", "--plain-url", "https://127.0.0.1:2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--plain-url https://127.0.0.1:2: must be http://"));
  r = RunLatdoc({"net", "--url", "http://127.0.0.1:1", "--plain-url", "http://127.0.0.1:2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--plain-url needs an https --url to compare with"));
}

}  // namespace
}  // namespace latdoc::testing
