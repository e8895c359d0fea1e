// Small string helpers used by every parser: trimming, splitting, and number parsing that
// reports failure instead of throwing or returning 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace latdoc {

std::string_view Trim(std::string_view s);
// Splits on `sep`; keeps empty fields ("a,,b" -> {"a","","b"}).
std::vector<std::string_view> Split(std::string_view s, char sep);
// Splits on runs of blanks (space, tab, newline); no empty fields.
std::vector<std::string_view> SplitWhitespace(std::string_view s);

// Whole-string parses: leading/trailing blanks allowed, anything else is nullopt.
std::optional<int64_t> ParseInt64(std::string_view s);
std::optional<uint64_t> ParseUint64(std::string_view s);
std::optional<double> ParseDouble(std::string_view s);

std::string ToLower(std::string_view s);
bool IEquals(std::string_view a, std::string_view b);

}  // namespace latdoc
