#include "trace/importers/common/json_walker.h"

#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace latdoc::trace {
namespace {

// rocprofv3's shape, with what trips a structural scanner: brackets and braces in strings,
// escaped quotes in keys and values, numbers that end the input of a slice, empty containers,
// white space everywhere.
constexpr char kDoc[] =
    " {\"tool\": [ {\"meta\": {\"pid\": 7, \"s\": \"}]{[\"},\n"
    "  \"skip\\\"me\": [1, {\"x\": [\"]\"]}, -2.5e3],\n"
    "  \"recs\": {\"k\": [{\"a\": 1}, {\"b\": \"q\\\"}\"} ,{}], \"other\": [{\"c\": 3}], \"e\": []},\n"
    "  \"n\": 12345, \"t\": true, \"z\": null}, {} ]\t} \n";

struct Kept {
  std::string path, text;
  uint64_t offset;
  bool operator==(const Kept& o) const { return path == o.path && text == o.text && offset == o.offset; }
  friend std::ostream& operator<<(std::ostream& os, const Kept& k) {
    return os << k.path << " @" << k.offset << ": " << k.text;
  }
};

// Descends into tool, its elements, recs and recs.k; keeps meta, each element of recs.k, n
// and t; skips the rest.
JsonWalker::Action Decide(const JsonWalker::Path& p, char) {
  using A = JsonWalker::Action;
  const std::string s = JsonWalker::PathString(p);
  if (p.empty() || s == "tool" || (p.size() == 2 && p[0].key == "tool")) return A::kDescend;
  if (p.size() == 3 && (p[2].key == "recs")) return A::kDescend;
  if (p.size() == 4 && p[3].key == "k") return A::kDescend;
  if (p.size() == 5 || (p.size() == 3 && (p[2].key == "meta" || p[2].key == "n" || p[2].key == "t"))) {
    return A::kKeep;
  }
  return A::kSkip;
}

struct WalkResult {
  std::vector<Kept> kept;
  Status fed, finished;
};

// Feeds `doc` in slices cut at `cuts` (ascending offsets).
WalkResult Walk(std::string_view doc, const std::vector<size_t>& cuts) {
  WalkResult r;
  JsonWalker w(Decide, [&](const JsonWalker::Path& p, std::string_view text, uint64_t offset) {
    r.kept.push_back({JsonWalker::PathString(p), std::string(text), offset});
  });
  size_t from = 0;
  for (size_t cut : cuts) {
    if (r.fed.ok()) r.fed = w.Feed(doc.substr(from, cut - from));
    from = cut;
  }
  if (r.fed.ok()) r.fed = w.Feed(doc.substr(from));
  if (r.fed.ok()) r.finished = w.Finish();
  return r;
}

TEST(JsonWalkerTest, KeepsChosenValuesWithPathsAndOffsets) {
  const WalkResult r = Walk(kDoc, {});
  ASSERT_TRUE(r.fed.ok()) << r.fed.ToString();
  ASSERT_TRUE(r.finished.ok()) << r.finished.ToString();
  const std::string doc = kDoc;
  auto at = [&](const std::string& text) { return static_cast<uint64_t>(doc.find(text)); };
  const std::vector<Kept> want = {
      {"tool[0].meta", "{\"pid\": 7, \"s\": \"}]{[\"}", at("{\"pid\"")},
      {"tool[0].recs.k[0]", "{\"a\": 1}", at("{\"a\"")},
      {"tool[0].recs.k[1]", "{\"b\": \"q\\\"}\"}", at("{\"b\"")},
      {"tool[0].recs.k[2]", "{}", at("{}], \"other")},
      {"tool[0].n", "12345", at("12345")},
      {"tool[0].t", "true", at("true")},
  };
  EXPECT_EQ(r.kept, want);
}

TEST(JsonWalkerTest, EveryChunkBoundaryGivesTheSameValues) {
  const std::string doc = kDoc;
  const WalkResult whole = Walk(doc, {});
  for (size_t cut = 1; cut < doc.size(); ++cut) {
    const WalkResult r = Walk(doc, {cut});
    ASSERT_TRUE(r.fed.ok() && r.finished.ok()) << "cut " << cut << ": " << r.fed.ToString() << r.finished.ToString();
    EXPECT_EQ(r.kept, whole.kept) << "cut at " << cut;
  }
  std::vector<size_t> every;
  for (size_t i = 1; i < doc.size(); ++i) every.push_back(i);
  const WalkResult bytewise = Walk(doc, every);
  ASSERT_TRUE(bytewise.fed.ok() && bytewise.finished.ok());
  EXPECT_EQ(bytewise.kept, whole.kept);
}

TEST(JsonWalkerTest, InputCutShortKeepsWhatEndedAndSaysWhere) {
  const std::string doc = kDoc;
  const WalkResult whole = Walk(doc, {});
  const size_t last = doc.find_last_not_of(" \t\n");
  for (size_t n = 0; n <= last; ++n) {
    const WalkResult r = Walk(doc.substr(0, n), {n / 2});
    ASSERT_TRUE(r.fed.ok()) << n << ": " << r.fed.ToString();
    ASSERT_FALSE(r.finished.ok()) << "prefix of " << n << " bytes was taken as whole";
    EXPECT_EQ(r.finished.code(), StatusCode::kDataLoss) << r.finished.ToString();
    EXPECT_EQ(r.finished.message().rfind("byte " + std::to_string(n) + ": ", 0), 0u) << r.finished.message();
    // What was kept is what the whole document keeps, up to the cut.
    ASSERT_LE(r.kept.size(), whole.kept.size());
    for (size_t i = 0; i < r.kept.size(); ++i) EXPECT_EQ(r.kept[i], whole.kept[i]) << n;
  }
  const WalkResult cut = Walk(doc.substr(0, doc.find("{\"b\"") + 3), {});
  EXPECT_EQ(cut.finished.message(),
            "byte " + std::to_string(doc.find("{\"b\"") + 3) +
                ": the document is cut short inside tool[0].recs.k[1], which starts at byte " +
                std::to_string(doc.find("{\"b\"")));
  EXPECT_EQ(cut.kept.size(), 2u);
  const WalkResult open = Walk("{\"tool\": [", {});
  EXPECT_EQ(open.finished.message(), "byte 10: the document is cut short inside tool");
  // A skipped value cut short, its start in an earlier slice (it said the end of the input).
  const WalkResult skipped = Walk("{\"skip\": [1, 2, 3", {12});
  EXPECT_EQ(skipped.finished.message(), "byte 17: the document is cut short inside skip, which starts at byte 9");
}

TEST(JsonWalkerTest, ErrorOffsetIsWhereTheWalkStopped) {
  auto walker = [] {
    return JsonWalker([](const JsonWalker::Path&, char) { return JsonWalker::Action::kDescend; },
                      [](const JsonWalker::Path&, std::string_view, uint64_t) {});
  };
  JsonWalker bad = walker();
  EXPECT_FALSE(bad.Feed("{\"a\": [1 x").ok());
  EXPECT_EQ(bad.error_offset(), 9u);
  JsonWalker cut = walker();
  ASSERT_TRUE(cut.Feed("{\"a\": [1").ok());
  EXPECT_FALSE(cut.Finish().ok());
  EXPECT_EQ(cut.error_offset(), 8u);
}

// A key is kept up to 256 bytes and shown up to 64 (a 60 MB key was held twice and printed).
TEST(JsonWalkerTest, LongKeysAreCut) {
  const std::string key(100000, 'k');
  std::string seen;
  JsonWalker w(
      [&](const JsonWalker::Path& p, char) {
        if (!p.empty()) seen = p.back().key;
        return p.empty() ? JsonWalker::Action::kDescend : JsonWalker::Action::kSkip;
      },
      [](const JsonWalker::Path&, std::string_view, uint64_t) {});
  const std::string doc = "{\"" + key + "\": [1, 2";
  for (size_t at = 0; at < doc.size(); at += 4096) ASSERT_TRUE(w.Feed(std::string_view(doc).substr(at, 4096)).ok());
  EXPECT_EQ(seen, key.substr(0, 256));
  const Status st = w.Finish();
  EXPECT_EQ(st.message(), "byte " + std::to_string(doc.size()) + ": the document is cut short inside " +
                              key.substr(0, 64) + "..., which starts at byte " + std::to_string(key.size() + 5));
}

TEST(JsonWalkerTest, StructuralErrorsNameTheByte) {
  struct Case {
    const char* doc;
    const char* error;
  } cases[] = {
      {"{\"a\" 1}", "byte 5: expected ':' after a key"},
      {"{\"tool\": [1 2]}", "byte 12: expected ',' or ']' in tool"},
      {"{\"a\": 1 \"b\": 2}", "byte 8: expected ',' or '}' in the root"},
      {"{1: 2}", "byte 1: expected a key string"},
      {"{\"a\": ,}", "byte 6: expected a value, not ','"},
      {"{} x", "byte 3: unexpected data after the end of the document"},
      {"{\"tool\": [{\"a\": 1},]}", "byte 19: expected a value, not ']'"},
  };
  for (const Case& c : cases) {
    const WalkResult r = Walk(c.doc, {});
    const Status& st = r.fed.ok() ? r.finished : r.fed;
    EXPECT_EQ(st.message(), c.error) << c.doc;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.doc;
  }
}

TEST(JsonWalkerTest, StopEndsTheWalkWithTheCallersError) {
  JsonWalker* self = nullptr;
  int asked = 0;
  JsonWalker stopper(
      [&](const JsonWalker::Path& p, char) {
        if (++asked == 3) self->Stop(InvalidArgument("no thanks"));
        return p.empty() ? JsonWalker::Action::kDescend : JsonWalker::Action::kSkip;
      },
      [](const JsonWalker::Path&, std::string_view, uint64_t) {});
  self = &stopper;
  EXPECT_EQ(stopper.Feed("{\"a\": 1, \"b\": 2, \"c\": 3, \"d\": 4}").message(), "no thanks");
  EXPECT_EQ(stopper.Feed("").message(), "no thanks");
  EXPECT_EQ(asked, 3);
}

TEST(JsonWalkerTest, SkippedValuesAreNotBuffered) {
  // A 4 MB array of strings fed in 64 KiB slices, most cut inside a string: skipped, the
  // walker holds nothing between slices; kept, only the unfinished element.
  std::string doc = "{\"big\": [";
  while (doc.size() < (4u << 20)) doc += "\"abcdef\", ";
  doc += "\"abcdef\"]}";
  for (const JsonWalker::Action action : {JsonWalker::Action::kSkip, JsonWalker::Action::kKeep}) {
    int64_t kept = 0;
    JsonWalker w(
        [&](const JsonWalker::Path& p, char) {
          return p.size() < 2 ? JsonWalker::Action::kDescend : action;
        },
        [&](const JsonWalker::Path&, std::string_view text, uint64_t) { kept += text == "\"abcdef\"" ? 1 : 0; });
    size_t most = 0;
    for (size_t at = 0; at < doc.size(); at += 64 << 10) {
      ASSERT_TRUE(w.Feed(std::string_view(doc).substr(at, 64 << 10)).ok());
      most = std::max(most, w.held());
    }
    ASSERT_TRUE(w.Finish().ok());
    EXPECT_EQ(w.fed(), doc.size());
    if (action == JsonWalker::Action::kSkip) {
      EXPECT_EQ(most, 0u);
      EXPECT_EQ(kept, 0);
    } else {
      EXPECT_LT(most, 8u);
      EXPECT_EQ(kept, static_cast<int64_t>((doc.size() - 9) / 10));
    }
  }
}

}  // namespace
}  // namespace latdoc::trace
