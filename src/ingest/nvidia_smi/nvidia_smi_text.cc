#include "ingest/nvidia_smi/nvidia_smi_text.h"

#include "base/text.h"

namespace laggard::nvsmi {

Number ParsePerfState(std::string_view value) {
  value = Trim(value);
  Number n;
  if (IsUnavailable(value)) return n;
  n.kind = Number::kGarbled;
  if (value.size() < 2 || (value[0] != 'P' && value[0] != 'p')) return n;
  auto state = ParseFixedDigits(value.substr(1), 1, 2);
  if (!state || *state > 15) return n;
  n.kind = Number::kValue;
  n.value = *state;
  return n;
}

}  // namespace laggard::nvsmi
