// Known slow or fallback GPU kernel-name patterns, as data: each row says what the kernel
// means, what to try, on which architectures it applies, and where that knowledge comes from.
// Matched against normalised kernel names (no "void ", no parameter list).
#pragma once

#include <string_view>
#include <vector>

namespace latdoc::rules {

struct KernelPattern {
  std::string_view id;            // stable, for the finding: "rocclr_copy_kernel"
  std::string_view prefix;        // matches names starting with this, or...
  std::string_view contains;      // ...containing this (one of the two is set)
  std::string_view archs;         // "gfx90a,gfx942,gfx950" / "sm90"; "" for all
  std::string_view meaning;
  std::string_view advice;
  std::string_view source;
  // When the kernel is a problem, if its name alone does not say so (the inputs' layout, a
  // dtype): the rule cannot check it from a trace and stays info. Empty: the name is enough.
  std::string_view condition = {};
  // A name holding this is not a hit (a kernel the pattern's reasoning does not cover).
  std::string_view excludes = {};
};

const std::vector<KernelPattern>& KernelPatterns();

// True when `pattern` applies to `arch` ("" arch: unknown, every row applies) and matches
// `name`.
bool MatchesPattern(const KernelPattern& pattern, std::string_view name, std::string_view arch);

}  // namespace latdoc::rules
