// PCI probes over sysfs (/sys/bus/pci/devices): which GPUs the host has, their NUMA node and
// local CPUs, and the PCIe link of the GPU and of every bridge above it (nvtop's
// device_discovery_linux.c walks the same ancestors). Read-only; all reads through SysRoot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/host_facts.h"
#include "host/sysroot.h"

namespace latdoc::host {

inline constexpr const char* kPciVendorNvidia = "0x10de";
inline constexpr const char* kPciVendorAmd = "0x1002";

// A PCI address as sysfs names it: "0000:0c:00.0". The domain has at least 4 hex digits and
// more where the platform numbers domains from 0x10000 (Intel VMD: "10000:e1:00.0").
struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;       // 0-0xff
  uint32_t device = 0;    // 0-0x1f
  uint32_t function = 0;  // 0-7
};
// nullopt for anything else ("pci0000:00", a stray name in a hand-made tree).
std::optional<PciAddress> ParsePciAddress(std::string_view name);

// GPUs: PCI base class 0x03 (display; 0x0302 for NVIDIA datacenter parts, 0x0380 for MI210/MI250)
// or base class 0x12 (processing accelerator: MI300X) of the given vendor, sorted by address; entries
// not named like a PCI address are left out. Each has bdf, vendor, driver, numa_node,
// local_cpulist and pcie_path filled; index is the position in that list.
// An empty vendor matches both NVIDIA and AMD. Missing /sys/bus/pci: an empty list.
std::vector<GpuFacts> ListPciGpus(const SysRoot& fs, const std::string& vendor_id);

// The link of `bdf` and of each PCI device above it (GPU first, root port last).
std::vector<PcieLink> ReadPciePath(const SysRoot& fs, const std::string& bdf);

// Reads a sysfs integer ("-1", "16"): unknown (with the read error or "garbage: 'x'") on failure.
Fact<int64_t> ReadIntFact(const SysRoot& fs, const std::string& host_path);
Fact<std::string> ReadStringFact(const SysRoot& fs, const std::string& host_path);

}  // namespace latdoc::host
