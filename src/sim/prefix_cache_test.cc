#include "sim/prefix_cache.h"

#include <gtest/gtest.h>

namespace latdoc::sim {
namespace {

std::vector<uint64_t> Blocks(std::string_view text, int block_size = 4) {
  TokenHasher t;
  t.AddText(text);
  return BlockHashes(t.tokens(), block_size);
}

// Contract: a block's hash covers every token before it: two prompts share the hashes of
// their common leading full blocks and none after a difference; a partial block has none.
TEST(PrefixCache, BlockHashesAreChained) {
  auto a = Blocks("a b c d e f g h i");       // 2 full blocks of 4
  auto b = Blocks("a b c d e f g x i j k l");
  auto c = Blocks("z b c d e f g h");
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
  EXPECT_NE(a[0], c[0]);
  EXPECT_NE(a[1], c[1]);  // same tokens 5-8, other prefix
  TokenHasher t;
  t.AddText("  a\tb\n c  d ");
  EXPECT_EQ(BlockHashes(t.tokens(), 4), Blocks("a b c d"));
}

// Contract: a hit is the longest run of leading cached blocks, never the prompt's last token
// (a prompt of exactly 2 cached blocks hits 1); nothing is cached until inserted.
TEST(PrefixCache, LookupFindsLeadingBlocksLessTheLastToken) {
  PrefixCache cache(4, 100);
  auto p = Blocks("a b c d e f g h");
  EXPECT_EQ(cache.Lookup(p, 8), 0);
  cache.Insert(p);
  EXPECT_EQ(cache.Lookup(p, 8), 4);
  EXPECT_EQ(cache.Lookup(Blocks("a b c d e f g h i j"), 10), 8);
  EXPECT_EQ(cache.Lookup(Blocks("a b c d x f g h i j"), 10), 4);
  EXPECT_EQ(cache.Lookup(Blocks("q b c d e f g h i j"), 10), 0);
}

// Contract: beyond its capacity the cache evicts the least recently used block (a lookup
// counts as a use).
TEST(PrefixCache, EvictsLeastRecentlyUsed) {
  PrefixCache cache(4, 2);
  auto a = Blocks("a a a a"), b = Blocks("b b b b"), c = Blocks("c c c c");
  cache.Insert(a);
  cache.Insert(b);
  EXPECT_EQ(cache.Lookup(Blocks("a a a a x"), 5), 4);  // a used after b
  cache.Insert(c);                                       // evicts b
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Lookup(Blocks("b b b b x"), 5), 0);
  EXPECT_EQ(cache.Lookup(Blocks("a a a a x"), 5), 4);
  EXPECT_EQ(cache.Lookup(Blocks("c c c c x"), 5), 4);
}

}  // namespace
}  // namespace latdoc::sim
