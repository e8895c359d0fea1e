#include "loadgen/workload.h"

#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "base/strings.h"

namespace latdoc::loadgen {
namespace {

// Every random text prompt is its own: a server with prefix caching (vLLM V1's default) must
// not find one prompt's first KV block (16 tokens) in another's, or TTFT reads low.
TEST(WorkloadTest, RandomTextPromptsDifferFromTheFirstBlock) {
  RandomWorkloadOptions o;
  o.input_len = 64;
  o.seed = 7;
  auto prompts = RandomPrompts(o, 500);
  std::set<std::string> whole, first_block;
  for (const auto& p : prompts) {
    auto words = SplitWhitespace(p.text);
    ASSERT_EQ(words.size(), 64u);  // one word per token
    EXPECT_EQ(p.input_tokens, 64);
    whole.insert(p.text);
    std::string block;
    for (size_t k = 0; k < 16; ++k) block += std::string(words[k]) + " ";
    first_block.insert(block);
  }
  EXPECT_EQ(whole.size(), 500u);
  EXPECT_EQ(first_block.size(), 500u);
}

// A shard's slice (`first`) is exactly that part of the whole sequence, text and token ids, with
// a shared prefix and spread lengths: the shards' prompts together are the unsharded run's.
TEST(WorkloadTest, FirstGivesTheSliceOfTheWholeSequence) {
  for (bool token_ids : {false, true}) {
    RandomWorkloadOptions o;
    o.input_len = 20;
    o.output_len = 9;
    o.range_ratio = 0.5;
    o.prefix_len = 4;
    o.seed = 11;
    o.token_ids = token_ids;
    const auto whole = RandomPrompts(o, 10);
    for (size_t first : {0u, 1u, 3u, 7u}) {
      o.first = first;
      const auto slice = RandomPrompts(o, 10 - first);
      ASSERT_EQ(slice.size(), 10 - first);
      for (size_t i = 0; i < slice.size(); ++i) {
        EXPECT_EQ(slice[i].text, whole[first + i].text) << "first=" << first << " i=" << i;
        EXPECT_EQ(slice[i].token_ids, whole[first + i].token_ids) << "first=" << first << " i=" << i;
        EXPECT_EQ(slice[i].output_tokens, whole[first + i].output_tokens);
        EXPECT_EQ(slice[i].input_tokens, whole[first + i].input_tokens);
      }
    }
  }
}

// --prefix-len: the same leading words in every prompt, different words after them.
TEST(WorkloadTest, SharedPrefixThenDistinctText) {
  RandomWorkloadOptions o;
  o.input_len = 32;
  o.prefix_len = 16;
  auto prompts = RandomPrompts(o, 50);
  const auto first = SplitWhitespace(prompts[0].text);
  ASSERT_EQ(first.size(), 48u);
  std::set<std::string> tails;
  for (const auto& p : prompts) {
    auto words = SplitWhitespace(p.text);
    ASSERT_EQ(words.size(), 48u);
    EXPECT_EQ(p.input_tokens, 48);
    for (size_t k = 0; k < 16; ++k) EXPECT_EQ(words[k], first[k]);
    tails.insert(p.text.substr(p.text.size() - 100));
  }
  EXPECT_EQ(tails.size(), 50u);
}

// A sweep draws one batch per round: every batch keeps the shared prefix, no prompt of one
// batch appears in another, and batch 0 is the workload's own prompts (as `latdoc bench` sends).
TEST(WorkloadTest, LaterBatchesKeepThePrefixAndBringNewPrompts) {
  RandomWorkloadOptions o;
  o.input_len = 24;
  o.prefix_len = 8;
  o.range_ratio = 0.5;
  o.seed = 11;
  const auto base = RandomPrompts(o, 40);
  std::string prefix;
  for (size_t k = 0; k < 8; ++k) prefix += std::string(SplitWhitespace(base[0].text)[k]) + " ";
  std::set<std::string> seen;
  for (uint64_t batch = 0; batch < 5; ++batch) {
    o.batch = batch;
    const auto prompts = RandomPrompts(o, 40);
    if (batch == 0) {
      for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(prompts[i].text, base[i].text);
    }
    for (const auto& p : prompts) {
      EXPECT_EQ(p.text.compare(0, prefix.size(), prefix), 0) << "batch " << batch;
      EXPECT_TRUE(seen.insert(p.text).second) << "a prompt repeated in batch " << batch;
    }
  }
  EXPECT_EQ(seen.size(), 200u);
  // The same batch of the same seed is the same prompts.
  o.batch = 3;
  EXPECT_EQ(RandomPrompts(o, 5)[4].text, RandomPrompts(o, 5)[4].text);
}

// Token ids follow vLLM's random dataset: (offset + index + k) % vocab after the prefix, and the
// same seed gives the same prompts and lengths in both forms.
TEST(WorkloadTest, TokenIdsAsVllmAndSeedsRepeat) {
  RandomWorkloadOptions o;
  o.input_len = 8;
  o.range_ratio = 0.5;
  o.token_ids = true;
  o.seed = 3;
  auto a = RandomPrompts(o, 20);
  auto b = RandomPrompts(o, 20);
  o.token_ids = false;
  auto text = RandomPrompts(o, 20);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].token_ids, b[i].token_ids);
    ASSERT_EQ(int(a[i].token_ids.size()), a[i].input_tokens);
    for (size_t k = 1; k < a[i].token_ids.size(); ++k) {
      EXPECT_EQ(a[i].token_ids[k], (a[i].token_ids[k - 1] + 1) % o.vocab_size);
    }
    EXPECT_EQ(text[i].input_tokens, a[i].input_tokens);
    EXPECT_EQ(text[i].output_tokens, a[i].output_tokens);
  }
}

// An output length past int is a bad line (it was truncated: 2^32 + 1 asked for 1 token, 2^32
// for none and the line vanished without a count).
TEST(WorkloadTest, OutputLengthsPastTheCapAreBadLines) {
  const std::string path = ::testing::TempDir() + "workload_big_output.jsonl";
  std::ofstream(path) << "{\"prompt\": \"hi there\", \"output_len\": 4294967297}\n"
                      << "{\"prompt\": \"hi there\", \"max_tokens\": 4294967296}\n"
                      << "{\"prompt\": \"ok then\", \"output_len\": 7}\n";
  auto w = LoadWorkloadFile(path, 16);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->prompts.size(), 1u);
  EXPECT_EQ(w->prompts[0].output_tokens, 7);
  EXPECT_EQ(w->bad_lines, 2u);
  ASSERT_FALSE(w->bad_line_messages.empty());
  EXPECT_NE(w->bad_line_messages[0].find("must be a positive integer up to 10000000"), std::string::npos)
      << w->bad_line_messages[0];
}

}  // namespace
}  // namespace latdoc::loadgen
