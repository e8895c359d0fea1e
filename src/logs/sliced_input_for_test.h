// Test helper: an InputStream over a string that returns its bytes in chosen slices.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/file_util.h"

namespace latdoc::logs {

// An InputStream over a string that hands out the bytes in the slices given by `cuts`
// (ascending offsets), then the rest; Read never crosses a cut. `limit` bytes are visible
// (to simulate a file that is still being written); Grow() shows more.
class SlicedInput : public InputStream {
 public:
  SlicedInput(std::string data, std::vector<size_t> cuts = {})
      : data_(std::move(data)), cuts_(std::move(cuts)), limit_(data_.size()) {}
  StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t end = limit_;
    for (size_t c : cuts_) {
      if (c > pos_) {
        end = std::min(end, c);
        break;
      }
    }
    size_t k = std::min(n, end - pos_);
    std::memcpy(buf, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  uint64_t raw_offset() const override { return pos_; }
  Compression compression() const override { return Compression::kNone; }
  const std::string& path() const override { return name_; }
  void SetLimit(size_t l) { limit_ = l; }

 private:
  std::string data_;
  std::vector<size_t> cuts_;
  size_t limit_;
  size_t pos_ = 0;
  std::string name_ = "sliced";
};

}  // namespace latdoc::logs
