// The default `nvidia-smi` output: an optional date line and a boxed table
// with two or three rows per GPU, then a processes table.
//
//   Fri Feb 23 11:51:11 2024
//   +---------------------------------------------------------------------------------------+
//   | NVIDIA-SMI 545.23.08              Driver Version: 545.23.08    CUDA Version: 12.3     |
//   |-----------------------------------------+----------------------+----------------------+
//   | GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
//   | Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
//   |                                         |                      |               MIG M. |
//   |=========================================+======================+======================|
//   |   0  NVIDIA H100 80GB HBM3          On  | 00000000:19:00.0 Off |                    0 |
//   | N/A   33C    P0              72W / 700W |      2MiB / 81559MiB |      0%      Default |
//   |                                         |                      |             Disabled |
//   +-----------------------------------------+----------------------+----------------------+
//
// The first row of a GPU gives its index, name, bus id and volatile
// uncorrectable ECC count; the second its temperature, performance state,
// power draw and cap (the enforced power limit) and utilisation; a third
// (MIG mode) is skipped. The column widths changed over the years (418,
// 525 and 545 layouts differ), so rows are split at '|' and read by words,
// never by column. Names too long for the column end in "..." ("Tesla
// P100-PCIE..."): such a cut name is not kept, as it would not match the
// full name other inputs give for the same GPU.
//
// Repeated outputs (`nvidia-smi -l 5`) give one sample per GPU per table.
// The processes and MIG-devices tables are not read. Damage: a GPU row that
// cannot be read, or a GPU whose second row is missing (output cut),
// counts as hardware.bad_record with its line, and so does nvidia-smi's own
// "Unable to determine the device handle for GPU ..." (a GPU missing from
// the table).

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/nvidia_smi/nvidia_smi_readers.h"
#include "ingest/nvidia_smi/nvidia_smi_text.h"

namespace laggard {
namespace {

using nvsmi::Number;

bool IsRule(std::string_view body) {
  // "+-----+----+" or "|-----+----|"
  if (body.size() < 3 || (body.front() != '+' && body.front() != '|')) return false;
  for (char c : body.substr(1, body.size() - 2)) {
    if (c != '-' && c != '+') return false;
  }
  return true;
}

bool IsDoubleRule(std::string_view body) {
  // "|=====+=====|"
  if (body.size() < 3 || body.front() != '|' || body[1] != '=') return false;
  for (char c : body.substr(1, body.size() - 2)) {
    if (c != '=' && c != '+' && c != '|') return false;
  }
  return true;
}

// The cells between the '|' of a table row: "| a | b |" -> {" a ", " b "}.
// Empty when the line is not a complete row.
std::vector<std::string_view> Cells(std::string_view body) {
  std::vector<std::string_view> cells;
  if (body.size() < 2 || body.front() != '|' || body.back() != '|') return cells;
  body = body.substr(1, body.size() - 2);
  size_t p = 0;
  while (true) {
    size_t bar = body.find('|', p);
    cells.push_back(body.substr(p, bar == std::string_view::npos ? bar : bar - p));
    if (bar == std::string_view::npos) break;
    p = bar + 1;
  }
  return cells;
}

class TableParser {
 public:
  explicit TableParser(ReaderContext& ctx) : ctx_(ctx) {}

  // Reads every line; returns the GPUs read.
  uint64_t Read(LineReader& lines) {
    std::string_view line;
    while (lines.Next(line)) Line(line, lines.line_number());
    return Finish();
  }

  void Line(std::string_view raw, uint64_t n) {
    std::string_view body = Trim(raw);
    if (body.empty()) return;
    if (auto t = ParseCtime(body)) {
      EndGpu();
      EndSnapshot();
      time_ = t;
      box_ = Box::kNone;
      return;
    }
    if (body.find("NVIDIA-SMI") != std::string_view::npos && body.front() == '|') {
      EndGpu();
      if (!gpus_.empty()) EndSnapshot();
      driver_.reset();
      size_t d = body.find("Driver Version:");
      if (d != std::string_view::npos) {
        auto words = SplitBlanks(body.substr(d + 15));
        if (!words.empty() && words[0] != "|" && !nvsmi::IsUnavailable(words[0])) {
          driver_ = std::string(words[0]);
        }
      }
      box_ = Box::kGpus;
      rows_ = false;
      return;
    }
    if (StartsWith(body, "Unable to determine the device handle")) {
      Bad(n, fmt::format("nvidia-smi could not reach a GPU: \"{}\"", Printable(body, 100)));
      return;
    }
    if (body.front() == '|' && body.find("Bus-Id") != std::string_view::npos) box_ = Box::kGpus;
    if (box_ != Box::kGpus) return;
    if (IsDoubleRule(body)) {
      rows_ = true;
      row_ = 0;
      return;
    }
    if (!rows_) return;
    if (IsRule(body)) {
      EndGpu();
      return;
    }
    std::vector<std::string_view> cells = Cells(body);
    if (cells.size() <= 1) {
      // A one-cell row ("| Processes: |") ends the GPU table.
      std::string_view cell = cells.empty() ? std::string_view{} : Trim(cells[0]);
      if (cells.empty() || (!StartsWith(cell, "Processes") && !StartsWith(cell, "MIG devices"))) {
        Bad(n, fmt::format("GPU table row cannot be read: \"{}\"", Printable(body, 100)));
        return;
      }
      EndGpu();
      box_ = Box::kOther;
      return;
    }
    Row(cells, body, n);
  }

  size_t Finish() {
    EndGpu();
    EndSnapshot();
    collector_.Finish(ctx_);
    return gpus_read_;
  }

 private:
  enum class Box : uint8_t { kNone, kGpus, kOther };

  struct Gpu {
    uint64_t line = 0;  // of the first row
    std::optional<int32_t> index;
    std::optional<std::string> bus_id;
    GpuFacts facts;
    GpuSample sample;
    bool has_sample_row = false;
  };

  void Bad(uint64_t n, std::string message) {
    ctx_.diag().Add(DiagCode::kHwBadRecord, ctx_.path, n, std::move(message));
  }

  void Row(const std::vector<std::string_view>& cells, std::string_view body, uint64_t n) {
    int row = row_++;
    if (cells.size() != 3) {
      Bad(n, fmt::format("GPU table row has {} cells, not 3: \"{}\"", cells.size(),
                         Printable(body, 100)));
      if (row == 0) row_ = kSkipGroup;
      return;
    }
    if (row == 0) {
      IdentityRow(cells, body, n);
    } else if (row == 1) {
      MetricsRow(cells, body, n);
    } else if (row == kSkipGroup) {
      Bad(n,
          fmt::format("row of a GPU whose first row was unreadable: \"{}\"", Printable(body, 100)));
    }
  }

  // "   0  NVIDIA H100 80GB HBM3          On  | 00000000:19:00.0 Off |       0 "
  void IdentityRow(const std::vector<std::string_view>& cells, std::string_view body, uint64_t n) {
    std::vector<std::string_view> id = SplitBlanks(cells[0]);
    std::vector<std::string_view> bus = SplitBlanks(cells[1]);
    std::optional<int32_t> index = id.empty() ? std::nullopt : ParseInt<int32_t>(id[0]);
    if (id.size() < 3 || !index || *index < 0 || bus.empty()) {
      Bad(n, fmt::format("GPU table row does not start with an index, a name and a bus id: "
                         "\"{}\"",
                         Printable(body, 100)));
      row_ = kSkipGroup;
      return;
    }
    gpu_.emplace();
    Gpu& g = *gpu_;
    g.line = n;
    g.index = index;
    if (!nvsmi::IsUnavailable(bus[0])) g.bus_id = std::string(bus[0]);
    // The name runs from after the index to before the persistence mode.
    std::string_view cell = cells[0];
    size_t from = static_cast<size_t>(id[1].data() - cell.data());
    size_t to = static_cast<size_t>(id.back().data() - cell.data());
    std::string_view name = Trim(cell.substr(from, to - from));
    if (!EndsWith(name, "...")) g.facts.name = std::string(name);
    std::string_view ecc = Trim(cells[2]);
    if (!EqualsIgnoreCase(ecc, "Off") && !EqualsIgnoreCase(ecc, "On")) {
      Number v = nvsmi::ParseNumber(ecc, "");
      if (v.kind == Number::kGarbled || (v.get() && (*v.get() < 0 || *v.get() > 9e15))) {
        Bad(n, fmt::format("volatile uncorrectable ECC count \"{}\" is not a count",
                           Printable(ecc, 40)));
      } else if (v.get()) {
        g.facts.ecc_uncorrected_volatile = static_cast<int64_t>(*v.get());
      }
    }
  }

  // " N/A   33C    P0              72W / 700W |  2MiB / 81559MiB |   0%   Default "
  void MetricsRow(const std::vector<std::string_view>& cells, std::string_view body, uint64_t n) {
    if (!gpu_) return;
    Gpu& g = *gpu_;
    std::vector<std::string_view> w = SplitBlanks(cells[0]);
    std::vector<std::string_view> util = SplitBlanks(cells[2]);
    if (w.size() != 6 || w[4] != "/" || util.empty()) {
      Bad(n, fmt::format("GPU {} second row is not \"Fan Temp Perf Usage / Cap | ... | Util "
                         "...\": \"{}\"",
                         *g.index, Printable(body, 100)));
      return;
    }
    Number temp = nvsmi::ParseNumber(w[1], "C");
    Number perf = nvsmi::ParsePerfState(w[2]);
    Number power = nvsmi::ParseNumber(w[3], "W");
    Number cap = nvsmi::ParseNumber(w[5], "W");
    Number busy = nvsmi::ParseNumber(util[0], "%");
    std::string garbled;
    auto check = [&](const Number& v, std::string_view what, std::string_view text) {
      if (v.kind != Number::kGarbled) return;
      if (!garbled.empty()) garbled += ", ";
      garbled += fmt::format("{} \"{}\"", what, Printable(text, 20));
    };
    check(temp, "temperature", w[1]);
    check(perf, "performance state", w[2]);
    check(power, "power draw", w[3]);
    check(cap, "power cap", w[5]);
    check(busy, "utilisation", util[0]);
    if (!garbled.empty()) {
      Bad(n, fmt::format("GPU {}: unreadable {}", *g.index, garbled));
    }
    GpuSample& s = g.sample;
    s.temp_c = temp.get();
    if (perf.get()) s.perf_state = static_cast<int32_t>(*perf.get());
    s.power_w = power.get();
    s.power_limit_w = cap.get();
    s.util_pct = busy.get();
    s.src = ctx_.Ref(n);
    g.facts.enforced_power_limit_w = cap.get();
    g.has_sample_row = true;
  }

  void EndGpu() {
    row_ = 0;
    if (!gpu_) return;
    Gpu& g = *gpu_;
    if (!g.has_sample_row) {
      Bad(g.line, fmt::format("GPU {} has only its first table row: output cut?", *g.index));
    }
    g.facts.src = ctx_.Ref(g.line);
    gpus_.push_back(std::move(g));
    gpu_.reset();
  }

  void EndSnapshot() {
    for (Gpu& g : gpus_) {
      g.facts.driver_version = driver_;
      collector_.SetFacts(*g.index, g.facts);
      GpuRecord& r = collector_.Gpu(*g.index);
      if (g.bus_id) r.bus_id = g.bus_id;
      if (g.has_sample_row) {
        collector_.AddSample(*g.index, g.sample, snapshots_, time_, g.sample.src.line);
      }
      ++gpus_read_;
    }
    if (!gpus_.empty()) ++snapshots_;
    gpus_.clear();
    time_.reset();
  }

  static constexpr int kSkipGroup = 1000;  // row_ value: the group's first row was unreadable

  ReaderContext& ctx_;
  nvsmi::GpuCollector collector_;
  std::optional<TimeNs> time_;
  std::optional<std::string> driver_;
  Box box_ = Box::kNone;
  bool rows_ = false;  // between the "|===|" rule and the end of the GPU table
  int row_ = 0;        // row within the current GPU's group
  std::optional<Gpu> gpu_;
  std::vector<Gpu> gpus_;  // of the current snapshot
  uint32_t snapshots_ = 0;
  size_t gpus_read_ = 0;
};

int SniffTable(std::string_view head) {
  auto banner = [](std::string_view line) -> std::optional<int> {
    std::string_view body = Trim(line);
    if (body.empty() || body.front() != '|') return std::nullopt;
    if (body.find("NVIDIA-SMI") != std::string_view::npos &&
        body.find("Driver Version") != std::string_view::npos) {
      return kSniffCertain;
    }
    if (body.find("Bus-Id") != std::string_view::npos &&
        body.find("Persistence-M") != std::string_view::npos) {
      return kSniffSure;
    }
    return std::nullopt;
  };
  return JudgeHeadLines(head, {}, 50, banner).value_or(kSniffNo);
}

}  // namespace

std::unique_ptr<TextReader> MakeNvidiaSmiTableReader() {
  return MakeFileReader<TableParser>("nvidia-smi-table", SniffTable);
}

}  // namespace laggard
