// A ByteSource over a string, handing out at most `piece` bytes a Read():
// for readers that must give the same result wherever the chunks fall.

#ifndef LAGGARD_TESTS_STRING_SOURCE_H_
#define LAGGARD_TESTS_STRING_SOURCE_H_

#include <algorithm>
#include <optional>
#include <string>

#include "ingest/common/input_file.h"

namespace laggard::testing_util {

class StringSource : public ByteSource {
 public:
  StringSource(std::string data, size_t piece) : data_(std::move(data)), piece_(piece) {}
  size_t Read(char* buf, size_t n) override {
    size_t k = std::min({n, piece_, data_.size() - pos_});
    std::copy_n(data_.data() + pos_, k, buf);
    pos_ += k;
    return k;
  }
  const std::optional<StreamDamage>& damage() const override { return damage_; }
  bool compressed() const override { return false; }

 private:
  std::string data_;
  size_t piece_;
  size_t pos_ = 0;
  std::optional<StreamDamage> damage_;
};

}  // namespace laggard::testing_util

#endif  // LAGGARD_TESTS_STRING_SOURCE_H_
