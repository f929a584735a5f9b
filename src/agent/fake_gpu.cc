#include "agent/fake_gpu.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file.h"

namespace laggard::agent {

FakeField FakeConstant(double value) {
  return [value](double) { return FakeReading{kNvmlSuccess, value}; };
}

FakeField FakeError(int code) {
  return [code](double) { return FakeReading{code, 0}; };
}

FakeField FakePiecewise(std::vector<FakeSegment> segments) {
  std::stable_sort(segments.begin(), segments.end(),
                   [](const FakeSegment& a, const FakeSegment& b) { return a.from_s < b.from_s; });
  return [segs = std::move(segments)](double t) -> FakeReading {
    size_t i = segs.size();
    while (i > 0 && segs[i - 1].from_s > t) --i;
    if (i == 0) return {kNvmlErrorNotSupported, 0};
    const FakeSegment& s = segs[i - 1];
    if (s.code != kNvmlSuccess) return {s.code, 0};
    if (!s.to_value) return {kNvmlSuccess, s.value};
    // Linear until the next segment starts; a last segment holds to_value
    // from one second after it starts.
    double end = i < segs.size() ? segs[i].from_s : s.from_s + 1;
    double frac = end > s.from_s ? std::clamp((t - s.from_s) / (end - s.from_s), 0.0, 1.0) : 1.0;
    return {kNvmlSuccess, s.value + (*s.to_value - s.value) * frac};
  };
}

FakeGpuBackend::FakeGpuBackend(std::vector<FakeGpu> gpus, const Clock& clock)
    : gpus_(std::move(gpus)),
      xid_polled_s_(gpus_.size(), -1e300),
      clock_(clock),
      start_(clock.Now()) {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (!gpus_[i].uuid) gpus_[i].uuid = fmt::format("GPU-fake-0000-{}", i);
  }
}

double FakeGpuBackend::Elapsed() const { return static_cast<double>(clock_.Now() - start_) / 1e9; }

int FakeGpuBackend::Gate(unsigned gpu) {
  ++calls_;
  if (gpu >= gpus_.size()) return kNvmlErrorInvalidArgument;
  const FakeGpu& g = gpus_[gpu];
  if (g.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(g.delay_ms));
  if (g.lost_from_s && Elapsed() >= *g.lost_from_s) return kNvmlErrorGpuIsLost;
  return kNvmlSuccess;
}

int FakeGpuBackend::Read(unsigned gpu, GpuField field, double& value) {
  if (int rc = Gate(gpu); rc != kNvmlSuccess) return rc;
  auto it = gpus_[gpu].fields.find(field);
  if (it == gpus_[gpu].fields.end()) return kNvmlErrorNotSupported;
  FakeReading r = it->second(Elapsed());
  if (r.code == kNvmlSuccess) value = r.value;
  return r.code;
}

int FakeGpuBackend::ReadText(unsigned gpu, GpuText what, std::string& value) {
  if (int rc = Gate(gpu); rc != kNvmlSuccess) return rc;
  const FakeGpu& g = gpus_[gpu];
  const std::optional<std::string>& v =
      what == GpuText::kUuid ? g.uuid : (what == GpuText::kBusId ? g.bus_id : g.name);
  if (!v) return kNvmlErrorNotSupported;
  value = *v;
  return kNvmlSuccess;
}

int FakeGpuBackend::NvLinkActive(unsigned gpu, unsigned link, bool& active) {
  if (int rc = Gate(gpu); rc != kNvmlSuccess) return rc;
  const FakeGpu& g = gpus_[gpu];
  if (g.nvlinks == 0) return kNvmlErrorNotSupported;
  if (link >= g.nvlinks) return kNvmlErrorInvalidArgument;
  double t = Elapsed();
  active = true;
  for (auto [l, from] : g.nvlink_down) {
    if (l == link && t >= from) active = false;
  }
  return kNvmlSuccess;
}

int FakeGpuBackend::PollXids(unsigned gpu, std::vector<uint64_t>& xids) {
  xids.clear();
  if (int rc = Gate(gpu); rc != kNvmlSuccess) return rc;
  const FakeGpu& g = gpus_[gpu];
  if (!g.xid_events) return kNvmlErrorNotSupported;
  double t = Elapsed();
  for (auto [at, xid] : g.xids) {
    if (at > xid_polled_s_[gpu] && at <= t) xids.push_back(xid);
  }
  xid_polled_s_[gpu] = t;
  return kNvmlSuccess;
}

namespace {

using nlohmann::json;

Status ParseField(const json& spec, const std::string& where, FakeField& out) {
  if (spec.is_number()) {
    out = FakeConstant(spec.get<double>());
    return Status::Ok();
  }
  if (spec.is_string()) {
    auto code = NvmlErrorFromName(spec.get<std::string>());
    if (!code)
      return Status::Error(
          fmt::format("{}: unknown NVML error '{}'", where, spec.get<std::string>()));
    out = FakeError(*code);
    return Status::Ok();
  }
  if (!spec.is_array()) {
    return Status::Error(
        fmt::format("{}: expected a number, an error name or a list of segments", where));
  }
  std::vector<FakeSegment> segs;
  for (size_t i = 0; i < spec.size(); ++i) {
    const json& s = spec[i];
    std::string at = fmt::format("{}[{}]", where, i);
    if (!s.is_object() || !s.contains("from_s") || !s["from_s"].is_number()) {
      return Status::Error(fmt::format("{}: a segment needs a numeric from_s", at));
    }
    FakeSegment seg;
    seg.from_s = s["from_s"].get<double>();
    if (s.contains("error")) {
      auto code =
          s["error"].is_string() ? NvmlErrorFromName(s["error"].get<std::string>()) : std::nullopt;
      if (!code) return Status::Error(fmt::format("{}: unknown NVML error", at));
      seg.code = *code;
    } else if (s.contains("value") && s["value"].is_number()) {
      seg.value = s["value"].get<double>();
      if (s.contains("to_value")) {
        if (!s["to_value"].is_number())
          return Status::Error(fmt::format("{}: to_value must be a number", at));
        seg.to_value = s["to_value"].get<double>();
      }
    } else {
      return Status::Error(fmt::format("{}: a segment needs a numeric value or an error", at));
    }
    segs.push_back(seg);
  }
  out = FakePiecewise(std::move(segs));
  return Status::Ok();
}

Status ParseGpu(const json& g, size_t index, FakeGpu& out) {
  std::string where = fmt::format("gpus[{}]", index);
  if (!g.is_object()) return Status::Error(where + ": expected an object");
  for (auto [key, slot] : {std::pair<const char*, std::optional<std::string>*>{"uuid", &out.uuid},
                           {"bus_id", &out.bus_id},
                           {"name", &out.name}}) {
    if (!g.contains(key)) continue;
    if (!g[key].is_string())
      return Status::Error(fmt::format("{}.{}: expected a string", where, key));
    *slot = g[key].get<std::string>();
  }
  if (g.contains("fields")) {
    if (!g["fields"].is_object()) return Status::Error(where + ".fields: expected an object");
    for (const auto& [name, spec] : g["fields"].items()) {
      auto field = GpuFieldFromName(name);
      if (!field) return Status::Error(fmt::format("{}.fields: unknown field '{}'", where, name));
      FakeField f;
      if (Status st = ParseField(spec, fmt::format("{}.fields.{}", where, name), f); !st.ok())
        return st;
      out.fields[*field] = std::move(f);
    }
  }
  auto number = [&](const char* key, double lo, double hi) -> StatusOr<std::optional<double>> {
    if (!g.contains(key)) return std::optional<double>();
    if (!g[key].is_number() || g[key].get<double>() < lo || g[key].get<double>() > hi) {
      return Status::Error(fmt::format("{}.{}: expected a number in [{}, {}]", where, key, lo, hi));
    }
    return std::optional<double>(g[key].get<double>());
  };
  auto links = number("nvlinks", 0, kMaxNvLinks);
  if (!links.ok()) return links.status();
  out.nvlinks = static_cast<unsigned>(links->value_or(0));
  auto lost = number("lost_from_s", -1e9, 1e12);
  if (!lost.ok()) return lost.status();
  out.lost_from_s = *lost;
  auto delay = number("delay_ms", 0, 60000);
  if (!delay.ok()) return delay.status();
  out.delay_ms = static_cast<int>(delay->value_or(0));
  if (g.contains("xid_events")) {
    if (!g["xid_events"].is_boolean())
      return Status::Error(where + ".xid_events: expected true or false");
    out.xid_events = g["xid_events"].get<bool>();
  }
  if (g.contains("nvlink_down")) {
    if (!g["nvlink_down"].is_array()) return Status::Error(where + ".nvlink_down: expected a list");
    for (const json& d : g["nvlink_down"]) {
      if (!d.is_object() || !d.contains("link") || !d["link"].is_number_unsigned() ||
          !d.contains("from_s") || !d["from_s"].is_number()) {
        return Status::Error(where + ".nvlink_down: each entry needs link and from_s");
      }
      out.nvlink_down.emplace_back(d["link"].get<unsigned>(), d["from_s"].get<double>());
    }
  }
  if (g.contains("xids")) {
    if (!g["xids"].is_array()) return Status::Error(where + ".xids: expected a list");
    for (const json& x : g["xids"]) {
      if (!x.is_object() || !x.contains("at_s") || !x["at_s"].is_number() || !x.contains("xid") ||
          !x["xid"].is_number_unsigned()) {
        return Status::Error(where + ".xids: each entry needs at_s and xid");
      }
      out.xids.emplace_back(x["at_s"].get<double>(), x["xid"].get<uint64_t>());
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<FakeGpu>> ParseFakeGpuScript(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Error("fake GPU script is not valid JSON");
  if (!doc.is_object() || !doc.contains("gpus") || !doc["gpus"].is_array()) {
    return Status::Error("fake GPU script: expected {\"gpus\": [...]}");
  }
  if (doc["gpus"].size() > 256) return Status::Error("fake GPU script: more than 256 GPUs");
  std::vector<FakeGpu> gpus(doc["gpus"].size());
  try {
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (Status st = ParseGpu(doc["gpus"][i], i, gpus[i]); !st.ok()) return st;
    }
  } catch (const json::exception& e) {  // a value out of its type's range
    return Status::Error(fmt::format("fake GPU script: {}", e.what()));
  }
  return gpus;
}

StatusOr<std::vector<FakeGpu>> LoadFakeGpuScript(const std::string& path) {
  constexpr size_t kMaxScript = 64 << 20;
  std::optional<std::string> text = ReadFileUpTo(path, kMaxScript + 1);
  if (!text) return Status::Error(fmt::format("cannot read fake GPU script {}", path));
  if (text->size() > kMaxScript)
    return Status::Error(fmt::format("fake GPU script {}: larger than 64 MiB", path));
  auto gpus = ParseFakeGpuScript(*text);
  if (!gpus.ok()) return Status::Error(fmt::format("{}: {}", path, gpus.status().message()));
  return gpus;
}

StatusOr<GpuBackendChoice> OpenGpuBackend(const std::optional<std::string>& fake_script,
                                          const std::string& nvml_library, const Clock& clock) {
  GpuBackendChoice out;
  if (fake_script) {
    auto gpus = LoadFakeGpuScript(*fake_script);
    if (!gpus.ok()) return gpus.status();
    out.backend = std::make_unique<FakeGpuBackend>(std::move(gpus.value()), clock);
    out.note = "scripted by " + *fake_script;
    return out;
  }
  auto nvml = OpenNvml(nvml_library);
  if (nvml.ok()) {
    out.backend = std::move(nvml.value());
  } else {
    out.note = nvml.status().message();
  }
  return out;
}

}  // namespace laggard::agent
