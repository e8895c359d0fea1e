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

// Appends the decimal digits of `v` (no allocation beyond `out`'s own growth).
void AppendInt(std::string& out, int64_t v);

std::string ToLower(std::string_view s);
// Appends code point `cp` as UTF-8; a surrogate or anything past U+10FFFF becomes U+FFFD.
void AppendUtf8(uint32_t cp, std::string& out);
bool IEquals(std::string_view a, std::string_view b);

// Length of the longest prefix of `s` that is well-formed UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF); s.size() when all of it is.
size_t ValidUtf8Prefix(std::string_view s);
// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD, so
// text read from input can go into JSON (which must be UTF-8) and HTML.
std::string ToValidUtf8(std::string_view s);
// ToValidUtf8, and every control character (C0 but tab, DEL, C1) replaced by U+FFFD too: text
// from input (a kernel name, a log line) printed on a terminal cannot move the cursor, set the
// window title or clear the screen.
std::string ToTerminalText(std::string_view s);

// The number of code points of UTF-8 text (its bytes that are not continuation bytes).
size_t CodePoints(std::string_view s);
// `s` in at most `width` code points: unchanged when it fits, else its start and its end with
// "…" (one code point) between, the start one longer than the end when they cannot be
// equal. Kernel names differ in their template arguments at both ends, so a cut from the middle
// keeps what tells them apart. REQUIRES: width >= 3.
std::string ShortenMiddle(std::string_view s, size_t width);
// ShortenMiddle of each name, at `width` code points, or wider where two different names would
// otherwise print the same: each group of names that collide is widened (one code point at a
// time) until its members differ. Names equal in full stay equal. Same order as `names`.
std::vector<std::string> ShortenMiddleDistinct(const std::vector<std::string>& names, size_t width);

}  // namespace latdoc
