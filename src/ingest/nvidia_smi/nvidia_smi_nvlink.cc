// `nvidia-smi nvlink --status` (`-s`) output:
//
//   GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)
//            Link 0: 25 GB/s
//            Link 3: <inactive>
//
// For each GPU block: name and UUID from the GPU line, and facts.nvlink_total
// (links listed), facts.nvlink_up (links with a speed above 0) and
// facts.nvlink_speed_gb_s (the slowest active link, so that one degraded
// link shows). A GPU listed without link lines has no NVLink (0 of 0). The
// GPU line may lack the "(UUID: ...)" part (`-i N` on some drivers). A GPU
// listed twice (two captures in one file) gives two records, which the run
// merges (hardware.conflicting_facts when they disagree). Any other line is
// counted as hardware.bad_record. The output has no time: facts only.

#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"
#include "ingest/nvidia_smi/nvidia_smi_util.h"

namespace laggard {
namespace {

struct GpuLine {
  int32_t index = 0;
  std::string name;
  std::optional<std::string> uuid;
};

// "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)".
std::optional<GpuLine> ParseGpuLine(std::string_view t) {
  if (!StartsWith(t, "GPU ")) return std::nullopt;
  size_t colon = t.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto index = ParseInt<int32_t>(t.substr(4, colon - 4));
  if (!index || *index < 0 || *index > kMaxGpuIndex) return std::nullopt;
  GpuLine g;
  g.index = *index;
  std::string_view rest = Trim(t.substr(colon + 1));
  size_t open = rest.rfind("(UUID:");
  if (open != std::string_view::npos && rest.back() == ')') {
    std::string_view uuid = Trim(rest.substr(open + 6, rest.size() - open - 7));
    if (!uuid.empty()) g.uuid = std::string(uuid);
    rest = Trim(rest.substr(0, open));
  }
  if (rest.empty()) return std::nullopt;
  g.name = std::string(rest);
  return g;
}

// "Link 0: 25 GB/s" -> 25, "Link 3: <inactive>" -> 0; nullopt for any other
// line (error counters, capabilities and remote ends are other commands).
std::optional<double> ParseLinkLine(std::string_view t) {
  if (!StartsWith(t, "Link ")) return std::nullopt;
  size_t colon = t.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto link = ParseInt<int32_t>(t.substr(5, colon - 5));
  if (!link || *link < 0) return std::nullopt;
  std::string_view value = Trim(t.substr(colon + 1));
  if (EqualsIgnoreCase(value, "<inactive>")) return 0.0;
  if (!EndsWith(value, "GB/s")) return std::nullopt;
  auto speed = ParseDouble(value.substr(0, value.size() - 4));
  if (!speed || *speed < 0) return std::nullopt;
  return speed;
}

class NvlinkStatusReader final : public TextReader {
 public:
  std::string_view name() const override { return "nvidia-smi-nvlink"; }

  int Sniff(std::string_view head) const override {
    bool after_gpu = false;
    int score = kSniffNo;
    ForEachHeadLine(head, {.with_last = true}, [&](std::string_view line) {
      std::string_view t = Trim(line);
      if (t.empty()) return true;
      if (ParseGpuLine(t)) {
        after_gpu = true;
        return true;
      }
      if (after_gpu && ParseLinkLine(t)) {
        score = kSniffSure;
        return false;
      }
      after_gpu = false;
      return true;
    });
    return score;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    std::vector<GpuRecord> gpus;
    GpuRecord* current = nullptr;
    uint64_t taken = 0;
    std::string_view line;
    while (lines.Next(line)) {
      uint64_t n = lines.line_number();
      std::string_view t = Trim(line);
      if (t.empty()) continue;
      if (auto g = ParseGpuLine(t)) {
        GpuRecord& r = gpus.emplace_back();
        r.index = g->index;
        r.uuid = g->uuid;
        r.facts.name = g->name;
        r.facts.nvlink_total = 0;
        r.facts.nvlink_up = 0;
        r.facts.src = ctx.Ref(n);
        current = &r;
        ++taken;
        continue;
      }
      auto speed = ParseLinkLine(t);
      if (!speed || current == nullptr) {
        ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n,
                       fmt::format("nvidia-smi nvlink --status line {}: \"{}\"",
                                   current == nullptr && speed ? "before any GPU line"
                                                               : "that is not a GPU or link status",
                                   Printable(line, 100)));
        continue;
      }
      GpuFacts& f = current->facts;
      ++*f.nvlink_total;
      if (*speed > 0) {
        ++*f.nvlink_up;
        if (!f.nvlink_speed_gb_s || *speed < *f.nvlink_speed_gb_s) f.nvlink_speed_gb_s = speed;
      }
    }
    EmitGpuRecords(ctx, gpus, false, {});
    return taken;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeNvlinkStatusReader() {
  return std::make_unique<NvlinkStatusReader>();
}

}  // namespace laggard
