#include "model/trace.h"

namespace laggard {

std::string_view OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kGemm: return "gemm";
    case OpClass::kAttention: return "attention";
    case OpClass::kOtherCompute: return "other_compute";
    case OpClass::kCommunication: return "communication";
    case OpClass::kMemcpy: return "memcpy";
    case OpClass::kMemset: return "memset";
    case OpClass::kCount: break;
  }
  return "other_compute";
}

uint32_t NameTable::Intern(std::string_view s) {
  auto it = index_.find(std::string(s));
  if (it != index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  index_.emplace(names_.back(), id);
  return id;
}

}  // namespace laggard
