#include "host/pci.h"

#include <algorithm>
#include <charconv>

#include "base/strings.h"
#include "host/proc_parsers.h"

namespace latdoc::host {

Fact<int64_t> ReadIntFact(const SysRoot& fs, const std::string& host_path) {
  auto s = fs.ReadTrimmed(host_path);
  if (!s.ok()) return Fact<int64_t>::Unknown(s.status().message());
  auto v = ParseInt64(*s);
  if (!v) return Fact<int64_t>::Unknown(host_path + ": not an integer: '" + s->substr(0, 40) + "'");
  return Fact<int64_t>::Known(*v, host_path);
}

Fact<std::string> ReadStringFact(const SysRoot& fs, const std::string& host_path) {
  auto s = fs.ReadTrimmed(host_path);
  if (!s.ok()) return Fact<std::string>::Unknown(s.status().message());
  if (s->empty()) return Fact<std::string>::Unknown(host_path + ": empty");
  return Fact<std::string>::Known(*s, host_path);
}

namespace {

// Exactly `digits` hex digits (at least `digits` when `at_least`), all of `s`.
std::optional<uint32_t> ParseHexField(std::string_view s, size_t digits, bool at_least) {
  if (s.size() < digits || (!at_least && s.size() != digits) || s.size() > 8) return std::nullopt;
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

// The kernel names devices "%04x:%02x:%02x.%d" (drivers/pci/probe.c pci_setup_device), so the
// domain is 4 hex digits or more; only the last three fields have fixed widths.
std::optional<PciAddress> ParsePciAddress(std::string_view name) {
  // dddd[d...]:bb:dd.f
  if (name.size() < 12 || name[name.size() - 2] != '.' || name[name.size() - 5] != ':' ||
      name[name.size() - 8] != ':') {
    return std::nullopt;
  }
  auto domain = ParseHexField(name.substr(0, name.size() - 8), 4, /*at_least=*/true);
  auto bus = ParseHexField(name.substr(name.size() - 7, 2), 2, false);
  auto device = ParseHexField(name.substr(name.size() - 4, 2), 2, false);
  auto function = ParseHexField(name.substr(name.size() - 1), 1, false);
  if (!domain || !bus || !device || *device > 0x1f || !function || *function > 7) {
    return std::nullopt;
  }
  return PciAddress{*domain, *bus, *device, *function};
}

namespace {

Fact<double> ReadSpeed(const SysRoot& fs, const std::string& path) {
  auto s = fs.ReadTrimmed(path);
  if (!s.ok()) return Fact<double>::Unknown(s.status().message());
  auto v = ParseLinkSpeedGts(*s);
  if (!v) return Fact<double>::Unknown(path + ": no link speed in '" + s->substr(0, 40) + "'");
  return Fact<double>::Known(*v, path);
}

PcieLink ReadLink(const SysRoot& fs, const std::string& dir, const std::string& bdf,
                  const std::string& role) {
  PcieLink l;
  l.bdf = bdf;
  l.role = role;
  l.cur_speed_gts = ReadSpeed(fs, dir + "/current_link_speed");
  l.max_speed_gts = ReadSpeed(fs, dir + "/max_link_speed");
  l.cur_width = ReadIntFact(fs, dir + "/current_link_width");
  l.max_width = ReadIntFact(fs, dir + "/max_link_width");
  return l;
}

}  // namespace

std::vector<PcieLink> ReadPciePath(const SysRoot& fs, const std::string& bdf) {
  std::vector<PcieLink> path;
  const std::string dev = "/sys/bus/pci/devices/" + bdf;
  auto real = fs.Canonical(dev);
  if (!real.ok()) {
    path.push_back(ReadLink(fs, dev, bdf, "gpu"));
    return path;
  }
  // /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0
  std::string p = *real;
  bool first = true;
  while (true) {
    auto slash = p.rfind('/');
    if (slash == std::string::npos) break;
    std::string name = p.substr(slash + 1);
    if (!ParsePciAddress(name)) break;
    PcieLink l = ReadLink(fs, p, name, first ? "gpu" : "bridge");
    // Root-complex integrated devices and host bridges have no link files: leave them out.
    if (first || l.cur_width.known() || l.cur_speed_gts.known()) path.push_back(std::move(l));
    first = false;
    p = p.substr(0, slash);
  }
  return path;
}

std::vector<GpuFacts> ListPciGpus(const SysRoot& fs, const std::string& vendor_id) {
  std::vector<GpuFacts> gpus;
  auto names = fs.List("/sys/bus/pci/devices");
  if (!names.ok()) return gpus;
  for (const auto& bdf : *names) {
    if (!ParsePciAddress(bdf)) continue;
    const std::string dir = "/sys/bus/pci/devices/" + bdf;
    auto cls = fs.ReadTrimmed(dir + "/class");
    auto ven = fs.ReadTrimmed(dir + "/vendor");
    // Display (base class 0x03: H100/H200 are 0x0302, MI210/MI250 0x0380) or processing
    // accelerator (base class 0x12: MI300X).
    if (!cls.ok() || !ven.ok()) continue;
    if (cls->rfind("0x03", 0) != 0 && cls->rfind("0x12", 0) != 0) continue;
    if (*ven != kPciVendorNvidia && *ven != kPciVendorAmd) continue;
    if (!vendor_id.empty() && *ven != vendor_id) continue;
    GpuFacts g;
    g.bdf = bdf;
    g.vendor = *ven == kPciVendorNvidia ? "nvidia" : "amd";
    auto link = fs.ReadLink(dir + "/driver");
    if (link.ok()) {
      g.driver = Fact<std::string>::Known(link->substr(link->rfind('/') + 1), dir + "/driver");
    } else {
      g.driver = Fact<std::string>::Unknown(link.status().message());
    }
    g.numa_node = ReadIntFact(fs, dir + "/numa_node");
    g.local_cpulist = ReadStringFact(fs, dir + "/local_cpulist");
    g.pcie_path = ReadPciePath(fs, bdf);
    gpus.push_back(std::move(g));
  }
  for (size_t i = 0; i < gpus.size(); ++i) gpus[i].index = static_cast<int64_t>(i);
  return gpus;
}

}  // namespace latdoc::host
