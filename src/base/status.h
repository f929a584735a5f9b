// Status and StatusOr: the error channel for operations that fail as a whole
// (a file that cannot be opened, an option that makes no sense). Bad records
// inside a usable input are not errors: they go to model/diagnostics.h.
// No exception escapes the library; callers must look at ok().

#ifndef LAGGARD_BASE_STATUS_H_
#define LAGGARD_BASE_STATUS_H_

#include <string>
#include <utility>
#include <variant>

namespace laggard {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: must be an error

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace laggard

#endif  // LAGGARD_BASE_STATUS_H_
