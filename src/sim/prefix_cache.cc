#include "sim/prefix_cache.h"

#include <algorithm>

namespace latdoc::sim {
namespace {

uint64_t Mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

void TokenHasher::AddText(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t start = i;
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the word
    while (i < text.size() && !IsSpace(text[i])) {
      h = (h ^ static_cast<unsigned char>(text[i])) * 0x100000001b3ULL;
      ++i;
    }
    if (i > start) tokens_.push_back(Mix64(h));
  }
}

void TokenHasher::AddId(int64_t id) { tokens_.push_back(Mix64(uint64_t(id) ^ 0x5851f42d4c957f2dULL)); }

std::vector<uint64_t> BlockHashes(const std::vector<uint64_t>& tokens, int block_size) {
  std::vector<uint64_t> out;
  if (block_size < 1) return out;
  uint64_t parent = 0x9e3779b97f4a7c15ULL;
  for (size_t b = 0; (b + 1) * size_t(block_size) <= tokens.size(); ++b) {
    uint64_t h = parent;
    for (size_t k = b * size_t(block_size); k < (b + 1) * size_t(block_size); ++k)
      h = Mix64(h ^ tokens[k]) + k;
    out.push_back(h);
    parent = h;
  }
  return out;
}

void PrefixCache::Touch(uint64_t h) {
  auto it = index_.find(h);
  if (it != index_.end()) {
    lru_.splice(lru_.end(), lru_, it->second);
    return;
  }
  lru_.push_back(h);
  index_.emplace(h, std::prev(lru_.end()));
}

int PrefixCache::Lookup(const std::vector<uint64_t>& blocks, int prompt_tokens) {
  const size_t max_blocks = prompt_tokens > 0 ? size_t(prompt_tokens - 1) / size_t(block_size_) : 0;
  size_t n = 0;
  while (n < std::min(max_blocks, blocks.size()) && index_.count(blocks[n])) ++n;
  for (size_t i = 0; i < n; ++i) Touch(blocks[i]);
  return int(n) * block_size_;
}

void PrefixCache::Insert(const std::vector<uint64_t>& blocks) {
  if (capacity_ <= 0) return;
  for (uint64_t h : blocks) Touch(h);
  while (int64_t(lru_.size()) > capacity_) {
    index_.erase(lru_.front());
    lru_.pop_front();
  }
}

}  // namespace latdoc::sim
