// Test helper: a private, writable copy of a recorded tree under the system temp directory,
// removed when the object goes out of scope. Symbolic links are copied as links.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace latdoc::host {

class TestTree {
 public:
  explicit TestTree(const std::string& source) {
    namespace fs = std::filesystem;
    root_ = (fs::temp_directory_path() / ("latdoc_host_test_" + std::to_string(::getpid()) + "_" +
                                           std::to_string(counter_++)))
                .string();
    fs::remove_all(root_);
    fs::copy(source, root_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~TestTree() { std::filesystem::remove_all(root_); }
  TestTree(const TestTree&) = delete;
  TestTree& operator=(const TestTree&) = delete;

  const std::string& root() const { return root_; }
  void Write(const std::string& host_path, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(root_ + host_path).parent_path());
    std::ofstream(root_ + host_path, std::ios::trunc) << text;
  }
  void Remove(const std::string& host_path) const { std::filesystem::remove_all(root_ + host_path); }

 private:
  static inline int counter_ = 0;
  std::string root_;
};

}  // namespace latdoc::host
