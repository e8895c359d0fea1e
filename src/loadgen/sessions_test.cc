// Unit tests of the workloads' building blocks: synthetic sessions, replay files, and the
// stream accounting of reasoning and tool-call chunks.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "base/strings.h"
#include "loadgen/record.h"
#include "loadgen/replay.h"
#include "loadgen/sessions.h"

namespace latdoc::loadgen {
namespace {

// Contract: turn t of a synthetic session carries P + t*(I+O) + I words, starts with the
// session's previous turn's words (history resent), shares the system prompt with every other
// session and nothing else; the resent count is the previous prompt (turn 0: the system prompt,
// from the second session on).
TEST(SessionsTest, SyntheticTurnsResendTheirHistory) {
  MultiTurnOptions o;
  o.num_sessions = 3;
  o.turns = 4;
  o.system_len = 20;
  o.input_len = 7;
  o.output_len = 5;
  o.seed = 11;
  ASSERT_TRUE(ValidateMultiTurnOptions(o).ok());
  SessionWorkload w = SyntheticSessions(o);
  ASSERT_EQ(w.sessions.size(), 3u);
  EXPECT_EQ(w.max_turns(), 4u);
  for (size_t s = 0; s < 3; ++s) {
    for (int t = 0; t < 4; ++t) {
      const Prompt& p = w.sessions[s][size_t(t)];
      EXPECT_EQ(p.turn, t);
      EXPECT_EQ(p.input_tokens, 20 + t * 12 + 7);
      EXPECT_EQ(int(SplitWhitespace(p.text).size()), p.input_tokens);
      EXPECT_EQ(p.messages.size(), size_t(1 + 2 * t + 1));
      EXPECT_EQ(p.messages.front().first, "system");
      EXPECT_EQ(p.messages.back().first, "user");
      EXPECT_EQ(p.reused_tokens, t > 0 ? 20 + (t - 1) * 12 + 7 : s > 0 ? 20 : 0);
      if (t > 0) {
        const std::string& prev = w.sessions[s][size_t(t - 1)].text;
        EXPECT_EQ(p.text.compare(0, prev.size(), prev), 0);
      }
    }
    EXPECT_EQ(w.sessions[s][0].messages[0].second, w.sessions[0][0].messages[0].second);
  }
  EXPECT_NE(w.sessions[0][0].messages[1].second, w.sessions[1][0].messages[1].second);
  o.turns = 0;
  EXPECT_EQ(ValidateMultiTurnOptions(o).message(), "--turns must be at least 1");
}

// Contract: replay lines are sent in time order with offsets from the first (ms or s), counts
// become that many words, a session's count-only prompts share their leading words, other
// prompts do not; bad lines are counted and named; --replay-speed divides the offsets.
TEST(ReplayTest, FileToScheduleAndPrompts) {
  const std::string path = ::testing::TempDir() + "replay_test.jsonl";
  std::ofstream(path) << R"({"timestamp": 500, "input_length": 30, "output_length": 3, "session_id": "s"})" << "\n"
                      << R"({"arrival_time_s": 0.1, "input_length": 20, "session_id": "s"})" << "\n"
                      << R"({"timestamp": 300, "input_length": 20})" << "\n"
                      << R"({"timestamp": 400, "output_length": 2})" << "\n"
                      << "\n"
                      << R"({"timestamp": 200, "prompt": "a b c", "max_tokens": 0})" << "\n";
  auto w = LoadReplayFile(path, 9);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->prompts.size(), 3u);
  EXPECT_EQ(w->offsets_ns, (std::vector<int64_t>{0, 200'000'000, 400'000'000}));
  EXPECT_EQ(w->prompts[0].input_tokens, 20);
  EXPECT_EQ(w->prompts[0].output_tokens, 9);
  EXPECT_EQ(w->prompts[2].input_tokens, 30);
  EXPECT_EQ(w->prompts[2].output_tokens, 3);
  EXPECT_EQ(w->prompts[2].text.compare(0, w->prompts[0].text.size(), w->prompts[0].text), 0);
  EXPECT_NE(w->prompts[1].text, w->prompts[0].text);
  EXPECT_EQ(w->bad_lines, 2u);
  ASSERT_EQ(w->bad_line_messages.size(), 2u);
  EXPECT_EQ(w->bad_line_messages[0], path + ":4: no \"prompt\" or \"input_length\"");
  EXPECT_EQ(w->bad_line_messages[1], path + ":6: \"max_tokens\" must be a positive integer up to 10000000");
  EXPECT_EQ(ScaleOffsets(w->offsets_ns, 4), (std::vector<int64_t>{0, 50'000'000, 100'000'000}));
}

// Contract: reasoning deltas and visible tokens are timed and counted apart; a chunk of
// tool_calls is visible and counts its entries; TTFT (first_token_ns) is the first of any kind.
TEST(StreamKindsTest, ReasoningAnswerAndToolCallsAccountedApart) {
  ChunkParser parser;
  RequestRecord rec;
  StreamAccountant acct(&rec);
  auto feed = [&](const std::string& data, int64_t t) { acct.OnPayload(parser.Parse(data), t); };
  feed(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})", 5);
  feed(R"({"choices":[{"index":0,"delta":{"reasoning_content":" hmm"},"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":2}})", 10);
  feed(R"({"choices":[{"index":0,"delta":{"reasoning":" so"},"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":3}})", 20);
  feed(R"({"choices":[{"index":0,"delta":{"content":" yes"},"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":4}})", 30);
  feed(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}},{"index":1,"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":6}})", 40);
  feed("[DONE]", 41);
  acct.Finish(true, 42);
  EXPECT_EQ(rec.outcome, Outcome::kOk);
  EXPECT_EQ(rec.first_token_ns, 10);
  EXPECT_EQ(rec.first_reasoning_ns, 10);
  EXPECT_EQ(rec.first_answer_ns, 30);
  EXPECT_EQ(rec.first_tool_call_ns, 40);
  EXPECT_EQ(rec.reasoning_tokens, 3);
  EXPECT_EQ(rec.answer_tokens, 3);
  EXPECT_EQ(rec.tool_call_deltas, 2);
  EXPECT_EQ(rec.output_tokens, 6);
}

}  // namespace
}  // namespace latdoc::loadgen
