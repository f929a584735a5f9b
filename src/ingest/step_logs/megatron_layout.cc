#include "ingest/step_logs/megatron_layout.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "base/text.h"

namespace laggard {
namespace {

constexpr std::string_view kUsingWorldSize = "using world size:";

// The integer after `key` and a ':' (blanks allowed), or nullopt.
std::optional<int64_t> SizeAfter(std::string_view line, std::string_view key) {
  size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  size_t p = at + key.size();
  while (p < line.size() && line[p] == ' ') ++p;
  if (p >= line.size() || line[p] != ':') return std::nullopt;
  ++p;
  while (p < line.size() && line[p] == ' ') ++p;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(line.data() + p, line.data() + line.size(), v);
  if (ec != std::errc() || v <= 0 || v > (int64_t{1} << 24)) return std::nullopt;
  return v;
}

// "  name ....... value" of the argument dump: the value when the line is
// that argument's, nullopt otherwise; `none` is set for "None".
std::optional<int64_t> DumpValue(std::string_view line, std::string_view name, bool* none) {
  std::string_view t = Trim(line);
  if (!StartsWith(t, name) || t.size() == name.size() || t[name.size()] != ' ') {
    return std::nullopt;
  }
  size_t p = name.size();
  while (p < t.size() && (t[p] == ' ' || t[p] == '.')) ++p;
  std::string_view value = t.substr(p);
  if (value == "None") {
    *none = true;
    return std::nullopt;
  }
  auto v = ParseInt<int64_t>(value);
  if (!v || *v <= 0 || *v > (int64_t{1} << 24)) return std::nullopt;
  return v;
}

}  // namespace

void MegatronLayoutScanner::Offer(std::string_view line, uint32_t line_number) {
  // Every line this scanner wants says "parallel" or "world".
  if (line.find("parallel") == std::string_view::npos &&
      line.find("world") == std::string_view::npos) {
    return;
  }
  size_t at = line.find(kUsingWorldSize);
  if (at != std::string_view::npos) {
    if (saw_line_) return;  // the first one counts (rank 0 prints it once)
    std::string_view rest = line.substr(at);
    Sizes s;
    s.world = SizeAfter(rest, "world size");
    s.dp = SizeAfter(rest, "data-parallel size");
    if (!s.dp) s.dp = SizeAfter(rest, "data-parallel-size");
    s.tp = SizeAfter(rest, "tensor-model-parallel size");
    s.pp = SizeAfter(rest, "pipeline-model-parallel size");
    s.cp = SizeAfter(rest, "context-parallel size");
    s.line = line_number;
    if (s.tp && s.pp) {
      line_ = s;
      saw_line_ = true;
    }
    return;
  }
  bool none = false;
  struct Arg {
    std::string_view name;
    std::optional<int64_t> Sizes::*field;
  };
  static constexpr std::array<Arg, 6> kArgs = {{
      {"world_size", &Sizes::world},
      {"data_parallel_size", &Sizes::dp},
      {"tensor_model_parallel_size", &Sizes::tp},
      {"pipeline_model_parallel_size", &Sizes::pp},
      {"context_parallel_size", &Sizes::cp},
      {"virtual_pipeline_model_parallel_size", &Sizes::vpp},
  }};
  for (const Arg& a : kArgs) {
    auto v = DumpValue(line, a.name, &none);
    if (v || none) {
      if (v && !(dump_.*a.field)) {
        dump_.*a.field = v;
        dump_.line = line_number;
      }
      return;
    }
  }
}

std::optional<LayoutStatement> MegatronLayoutScanner::Result(std::string* problem) const {
  const Sizes& s = saw_line_ ? line_ : dump_;
  if (!s.tp || !s.pp) return std::nullopt;
  const int64_t cp = s.cp.value_or(1);
  std::optional<int64_t> dp = s.dp;
  if (!dp && s.world && *s.world % (*s.tp * *s.pp * cp) == 0) dp = *s.world / (*s.tp * *s.pp * cp);
  if (!dp) return std::nullopt;
  if (s.world && *s.world != *dp * *s.tp * *s.pp * cp) {
    *problem = fmt::format("world size {} is not dp {} x tp {} x pp {} x cp {}", *s.world, *dp,
                           *s.tp, *s.pp, cp);
    return std::nullopt;
  }
  LayoutStatement st;
  st.layout.dp = static_cast<int32_t>(*dp);
  st.layout.tp = static_cast<int32_t>(*s.tp);
  st.layout.pp = static_cast<int32_t>(*s.pp);
  st.layout.cp = static_cast<int32_t>(cp);
  // The layout line never states the virtual pipeline; the dump does.
  st.layout.vpp = static_cast<int32_t>(dump_.vpp.value_or(1));
  st.source = LayoutSource::kLaunchLog;
  st.src.line = s.line;
  return st;
}

}  // namespace laggard
