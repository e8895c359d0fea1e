// The simulator's automatic prefix cache, as vLLM V1's (vllm/v1/core/kv_cache_utils.py,
// hash_block_tokens; vllm/v1/core/block_pool.py): a prompt is cut into full blocks of
// block_size tokens, each block named by a hash chained over every token before it, so a block
// matches only when the whole prefix up to it is the same. A request's hit is its longest run
// of leading blocks found in the cache, capped so that at least the last prompt token is
// computed; its full blocks enter the cache once its prefill is done. The cache holds at most
// `capacity_blocks` blocks and evicts the least recently used (vLLM evicts freed blocks in LRU
// order: the cache lives in the KV pool, so its size follows --gpu-memory-utilization).
//
// Tokens: the simulator has no tokenizer; a token is a word of the prompt (CountPromptTokens)
// or a token id, and a chat request's tokens are its messages' contents, in order, without the
// chat template. Not thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace latdoc::sim {

// Hashes of a prompt's tokens, one per token (for BlockHashes).
class TokenHasher {
 public:
  void AddText(std::string_view text);   // one token per whitespace-separated word
  void AddId(int64_t id);
  const std::vector<uint64_t>& tokens() const { return tokens_; }

 private:
  std::vector<uint64_t> tokens_;
};

// The chained hashes of the full blocks of `tokens`.
std::vector<uint64_t> BlockHashes(const std::vector<uint64_t>& tokens, int block_size);

class PrefixCache {
 public:
  PrefixCache(int block_size, int64_t capacity_blocks)
      : block_size_(block_size), capacity_(capacity_blocks) {}

  // The prompt tokens a request of `prompt_tokens` tokens with these block hashes finds cached:
  // a whole number of blocks, less than prompt_tokens. Touches the blocks found (LRU).
  int Lookup(const std::vector<uint64_t>& blocks, int prompt_tokens);
  // Adds the blocks (most recent last), evicting the least recently used beyond capacity.
  void Insert(const std::vector<uint64_t>& blocks);
  size_t size() const { return index_.size(); }

 private:
  void Touch(uint64_t h);
  int block_size_;
  int64_t capacity_;
  std::list<uint64_t> lru_;  // front: least recently used
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace latdoc::sim
