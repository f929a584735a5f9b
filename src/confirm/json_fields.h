// Reading laggard's own JSON documents back from a user's file (a diagnose
// report, a confirmation.json): fields of the type asked or absent, and a
// nesting guard before parsing.
//
// Thread-safety: pure functions.

#ifndef LAGGARD_CONFIRM_JSON_FIELDS_H_
#define LAGGARD_CONFIRM_JSON_FIELDS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace laggard::confirm {

// Deeper documents are refused before parsing: nlohmann's parser recurses,
// so a file nested 100,000 deep would overflow the stack.
inline constexpr size_t kMaxNesting = 64;

// The deepest nesting of `text`'s arrays and objects, outside strings.
size_t NestingDepth(std::string_view text);

// A field of the type asked, else nullopt: a user's file may hold a wrong
// type or an integer out of range (a GPU of 4294967301), which is absent,
// never wrapped into another number. Integers are never negative.
template <typename T>
std::optional<T> Get(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return std::nullopt;
    return it->template get<std::string>();
  } else if constexpr (std::is_integral_v<T>) {
    if (it->is_number_unsigned()) {
      uint64_t v = it->template get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
      return static_cast<T>(v);
    }
    if (!it->is_number_integer()) return std::nullopt;
    int64_t v = it->template get<int64_t>();
    if (v < 0 || v > static_cast<int64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(v);
  } else {
    if (!it->is_number()) return std::nullopt;
    return it->template get<T>();
  }
}

}  // namespace laggard::confirm

#endif  // LAGGARD_CONFIRM_JSON_FIELDS_H_
