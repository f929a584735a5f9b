// AMD's `rocm-smi` output, its default "Concise Info" table and the
// sections of `rocm-smi -a` / `--showallinfo`, into the same GPU records as
// nvidia-smi (model/hardware.h).
//
//   ======================= ROCm System Management Interface =======================
//   ================================= Concise Info =================================
//   GPU  Temp   AvgPwr  SCLK     MCLK     Fan  Perf    PwrCap  VRAM%  GPU%
//   4    41.0c  111.0W  800Mhz   1600Mhz  0%   manual  500.0W   78%   0%
//   ================================================================================
//
// The table has had three headers (ROCm 3-5: `GPU Temp AvgPwr ...`; 6.0-6.1:
// `Device [Model : Revision] Temp Power Partitions ...` with the GPU's name
// on a second row; 6.2 on: `Device Node IDs Temp Power Partitions ...`)
// and cells of several words ("[0x74a1 : 0x00]", "NPS1, SPX, 0"), so a row
// is read from both ends: the index first, temperature and power as the
// first cells with their units (`41.0c`, `35.0°C`, `111.0W`), and the last
// seven cells are always SCLK, MCLK, Fan, Perf, PwrCap, VRAM% and GPU%.
// A PwrCap of 0.0W (the second GCD of an MI250X, whose package reports
// once) and `N/A` cells are unknown. A row whose last seven cells do not
// read so (a paste cut mid-row) is hardware.bad_record.
//
// `-a` lines are `GPU[i]<tabs or blanks>: label: value`; read: temperature
// (edge, else junction; memory), current sclk / mclk / pcie levels, the
// supported sclk, mclk and PCIe lists (their maximum), Max Graphics Package
// Power (the cap), Average / Current Socket Graphics Package Power, GPU use,
// PCI Bus, Card series, the driver version. Other lines are skipped.
//
// rocm-smi prints no host and no time: the host comes from the path, and a
// second banner starts a second snapshot (samples 1 s apart, approximate).
//
// Read with care, because AMD GPUs differ from NVIDIA's where the
// hardware rules look: the Temp column of 6.x tables and MI300's only
// sensor are the junction (hotspot), ~10-20 C above the edge sensor the
// thermal rule's 90 C speaks of, so only the edge temperature is kept; idle
// GPUs sleep at ~130 MHz and drop their PCIe link to a lower DPM level,
// sometimes narrower, so clocks are kept only with a utilisation, and the
// current link only at >= 50% busy; a GPU without a name is named by its
// device id ("AMD GPU 0x740f"), so that peers are of one model.

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/amd_smi/amd_smi_readers.h"
#include "ingest/common/gpu_collector.h"
#include "ingest/common/sniff.h"

namespace laggard {
namespace {

using gpu_text::GpuCollector;
using gpu_text::Number;
using gpu_text::ParseNumber;

constexpr std::string_view kBanner = "ROCm System Management Interface";

// "=== Title ===" -> "Title"; a bare rule -> ""; nullopt for other lines.
std::optional<std::string_view> SectionTitle(std::string_view t) {
  if (t.size() < 3 || t.front() != '=' || t.back() != '=') return std::nullopt;
  size_t a = t.find_first_not_of('=');
  if (a == std::string_view::npos) return std::string_view();
  size_t b = t.find_last_not_of('=');
  return Trim(t.substr(a, b - a + 1));
}

// "GPU[3]\t\t: label: value" -> index 3 and "label: value".
std::optional<int32_t> GpuLine(std::string_view t, std::string_view& rest) {
  if (!StartsWith(t, "GPU[")) return std::nullopt;
  size_t close = t.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  std::optional<int32_t> index = ParseInt<int32_t>(t.substr(4, close - 4));
  std::string_view after = Trim(t.substr(close + 1));
  if (!index || *index < 0 || *index > 4096 || after.empty() || after.front() != ':') {
    return std::nullopt;
  }
  rest = Trim(after.substr(1));
  return index;
}

// "41.0c", "35.0°C" -> 41.0; nullopt when not a temperature.
std::optional<double> Celsius(std::string_view w) {
  for (std::string_view unit : {"°C", "C", "c"}) {
    if (EndsWith(w, unit)) {
      Number n = ParseNumber(w.substr(0, w.size() - unit.size()), "");
      if (n.kind == Number::kValue) return n.value;
    }
  }
  return std::nullopt;
}

// "16.0GT/s x16" -> generation 4, width 16.
std::pair<std::optional<int32_t>, std::optional<int32_t>> PcieLink(std::string_view v) {
  std::vector<std::string_view> w = SplitBlanks(v);
  std::pair<std::optional<int32_t>, std::optional<int32_t>> out;
  if (w.empty() || !EndsWith(w[0], "GT/s")) return out;
  std::optional<double> gts = ParseDouble(w[0].substr(0, w[0].size() - 4));
  if (gts) out.first = gpu_text::PcieGenOfRate(*gts);
  if (w.size() >= 2 && StartsWith(w[1], "x")) out.second = ParseInt<int32_t>(w[1].substr(1));
  return out;
}

// "(800Mhz)", "800Mhz" -> 800.
std::optional<double> Mhz(std::string_view v) {
  v = Trim(v);
  if (!v.empty() && v.front() == '(') v.remove_prefix(1);
  if (!v.empty() && v.back() == ')') v.remove_suffix(1);
  if (!v.empty() && v.back() == '*') v = Trim(v.substr(0, v.size() - 1));
  return ParseNumber(v, "Mhz").get();
}

class RocmSmiFile {
 public:
  explicit RocmSmiFile(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    ForEachNonBlankLine(lines, [&](const TextLine& line) {
      indented_ = !line.text.empty() && (line.text[0] == ' ' || line.text[0] == '\t');
      Line(line.trimmed, line.number);
    });
    EndSnapshot();
    return collector_.Finish(ctx_, "rocm-smi");
  }

 private:
  struct Gpu {
    GpuFacts facts;
    GpuSample sample;
    bool sampled = false;
    std::optional<double> edge_c;
    std::optional<std::string> device_id;  // "0x74a1"
    std::vector<double> sclk, mclk;        // supported levels
    std::optional<int32_t> pcie_gen_max, pcie_width_max;
  };
  enum class List { kNone, kSclk, kMclk, kPcie };

  void Line(std::string_view t, uint64_t n) {
    if (auto title = SectionTitle(t)) {
      if (title->empty()) return;  // a rule: under a header, or ending a table
      if (*title == kBanner && seen_banner_) EndSnapshot();
      if (*title == kBanner) seen_banner_ = true;
      concise_ = *title == "Concise Info";
      header_ = false;
      junction_ = false;
      list_ = List::kNone;
      return;
    }
    if (StartsWith(t, "Driver version:")) {
      driver_ = std::string(Trim(t.substr(15)));
      return;
    }
    std::string_view rest;
    if (std::optional<int32_t> index = GpuLine(t, rest)) return Field(*index, rest, n);
    if (concise_) ConciseLine(t, n);
  }

  Gpu& At(int32_t index) { return gpus_[index]; }

  void ConciseLine(std::string_view t, uint64_t n) {
    std::vector<std::string_view> w = SplitBlanks(t);
    if (w.empty()) return;
    if (w[0] == "GPU" || w[0] == "Device") {
      header_ = true;
      junction_ = t.find("Junction") != std::string_view::npos;
      return;
    }
    if (!header_) return;
    std::optional<int32_t> index = ParseInt<int32_t>(w[0]);
    if (!index) {
      // The header's second line says which sensor the Temp column reads.
      if (t.find("(Junction)") != std::string_view::npos) junction_ = true;
      // The 6.0-6.1 table's second row, indented under the row: its name.
      if (last_row_ && indented_ && t.find("(") == std::string_view::npos) {
        At(*last_row_).facts.name = std::string(t);
      }
      return;
    }
    last_row_.reset();
    if (*index < 0 || *index > 4096 || w.size() < 9) return BadRow(n, t, "too few cells");
    const size_t e = w.size();
    auto unavailable = [](std::string_view c) {
      return gpu_text::IsUnavailable(c) || EqualsIgnoreCase(c, "None") ||
             EqualsIgnoreCase(c, "Unsupported");
    };
    auto clock = [&](std::string_view c) { return unavailable(c) || Mhz(c).has_value(); };
    auto pct = [&](std::string_view c) {
      return unavailable(c) || ParseNumber(c, "%").kind == Number::kValue;
    };
    auto watts = [&](std::string_view c) {
      return unavailable(c) || ParseNumber(c, "W").kind == Number::kValue;
    };
    if (!clock(w[e - 7]) || !clock(w[e - 6]) || !pct(w[e - 5]) || !watts(w[e - 3]) ||
        !pct(w[e - 2]) || !pct(w[e - 1])) {
      return BadRow(n, t, "its last seven cells are not SCLK MCLK Fan Perf PwrCap VRAM% GPU%");
    }
    Gpu& g = At(*index);
    GpuSample& s = g.sample;
    bool temp_cell = false;
    for (size_t k = 1; k + 7 < e; ++k) {
      if (auto c = Celsius(w[k])) {
        // A junction (hotspot) reading runs ~10-20 C above the edge sensor
        // nvidia-smi and the thermal rule speak of: not kept as the GPU's
        // temperature.
        if (!junction_) s.temp_c = c;
        if (k + 1 < e - 7) s.power_w = ParseNumber(w[k + 1], "W").get();
        temp_cell = true;
        break;
      }
    }
    if (!temp_cell && w.size() == 10) s.power_w = ParseNumber(w[2], "W").get();  // "N/A" temp
    // The device id, for a model name where the table prints none:
    // "[0x74a1 : 0x00]" (6.0-6.1), "0x74a1," (6.2 on).
    for (size_t k = 1; k < 4 && k < e; ++k) {
      std::string_view id = w[k];
      if (!id.empty() && id.front() == '[') id.remove_prefix(1);
      if (!id.empty() && id.back() == ',') id.remove_suffix(1);
      if (StartsWith(id, "0x") && id.size() > 2) {
        g.device_id = std::string(id);
        break;
      }
    }
    s.sm_clock_mhz = Mhz(w[e - 7]);
    s.mem_clock_mhz = Mhz(w[e - 6]);
    std::optional<double> cap = ParseNumber(w[e - 3], "W").get();
    if (cap && *cap > 0) {
      s.power_limit_w = cap;
      g.facts.enforced_power_limit_w = cap;
    }
    s.util_pct = ParseNumber(w[e - 1], "%").get();
    s.src = ctx_.Ref(n);
    g.sampled = true;
    if (!g.facts.src) g.facts.src = ctx_.Ref(n);
    last_row_ = *index;
  }

  void Field(int32_t index, std::string_view rest, uint64_t n) {
    Gpu& g = At(index);
    if (StartsWith(rest, "Supported ")) {
      // "Supported sclk frequencies on GPU0", then "0: 500Mhz" lines
      list_ = rest.find("sclk") != std::string_view::npos   ? List::kSclk
              : rest.find("mclk") != std::string_view::npos ? List::kMclk
              : rest.find("PCIe") != std::string_view::npos ? List::kPcie
                                                            : List::kNone;
      return;
    }
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view label = Trim(rest.substr(0, colon));
    std::string_view value = Trim(rest.substr(colon + 1));
    if (list_ != List::kNone && (ParseInt<int32_t>(label) || label == "S")) {
      // "0: 500Mhz", "1: 16.0GT/s x16 *", "S: 133Mhz *" (deep sleep)
      if (list_ == List::kSclk) {
        if (auto m = Mhz(value)) g.sclk.push_back(*m);
      } else if (list_ == List::kMclk) {
        if (auto m = Mhz(value)) g.mclk.push_back(*m);
      } else {
        auto [gen, width] = PcieLink(value);
        if (gen) g.pcie_gen_max = std::max(g.pcie_gen_max.value_or(0), *gen);
        if (width) g.pcie_width_max = std::max(g.pcie_width_max.value_or(0), *width);
      }
      return;
    }
    list_ = List::kNone;
    GpuSample& s = g.sample;
    auto number = [&](std::string_view unit) { return ParseNumber(value, unit).get(); };
    bool used = true;
    if (label == "Temperature (Sensor edge) (C)") {
      g.edge_c = number("");
    } else if (label == "Temperature (Sensor memory) (C)") {
      s.mem_temp_c = number("");
    } else if (label == "sclk clock level" || label == "mclk clock level") {
      // "sclk clock level: 1: (800Mhz)", "S: (137Mhz)" (deep sleep)
      size_t paren = value.find('(');
      std::optional<double> m =
          paren == std::string_view::npos ? std::nullopt : Mhz(value.substr(paren));
      (label[0] == 's' ? s.sm_clock_mhz : s.mem_clock_mhz) = m;
    } else if (label == "pcie clock level") {
      // "1 (16.0GT/s x16)"
      size_t paren = value.find('(');
      if (paren != std::string_view::npos) {
        std::string_view link = value.substr(paren + 1);
        if (!link.empty() && link.back() == ')') link.remove_suffix(1);
        std::tie(s.pcie_gen, s.pcie_width) = PcieLink(link);
        g.facts.pcie_gen_current = s.pcie_gen;
        g.facts.pcie_width_current = s.pcie_width;
      }
    } else if (label == "Max Graphics Package Power (W)") {
      std::optional<double> cap = number("");
      if (cap && *cap > 0) s.power_limit_w = g.facts.enforced_power_limit_w = cap;
    } else if (label == "Average Graphics Package Power (W)" ||
               label == "Current Socket Graphics Package Power (W)") {
      s.power_w = number("");
    } else if (label == "GPU use (%)") {
      s.util_pct = number("");
    } else if (label == "PCI Bus") {
      bus_ids_[index] = std::string(value);
    } else if (label == "Device ID" || label == "GPU ID") {
      g.device_id = std::string(value);
    } else if (label == "Card series" || label == "Card Series") {
      if (!value.empty() && !gpu_text::IsUnavailable(value)) g.facts.name = std::string(value);
    } else {
      used = false;
    }
    if (used) {
      g.sampled = g.sampled || label.find("Temperature") != std::string_view::npos ||
                  label.find("clock level") != std::string_view::npos ||
                  label.find("Power (W)") != std::string_view::npos || label == "GPU use (%)";
      if (!s.src.line) s.src = ctx_.Ref(n);
      if (!g.facts.src) g.facts.src = ctx_.Ref(n);
    }
  }

  void BadRow(uint64_t n, std::string_view t, std::string_view why) {
    ctx_.diag().Add(DiagCode::kHwBadRecord, ctx_.path, n,
                    fmt::format("rocm-smi row \"{}\": {} (cut?); skipped", Printable(t, 80), why));
  }

  void EndSnapshot() {
    for (auto& [index, g] : gpus_) {
      if (!g.sample.temp_c) g.sample.temp_c = g.edge_c;
      // Without a name, GPUs of one device id are one model, and others not
      // (a box of MI210s with an MI50: peers only among the MI210s).
      // Always a name: the next steps then name AMD's tools.
      if (!g.facts.name) g.facts.name = g.device_id ? "AMD GPU " + *g.device_id : "AMD GPU";
      // Clocks and the PCIe link are read only where the GPU is busy: idle
      // AMD GPUs sleep ("S: (133Mhz)") and drop their link to a lower
      // power level, sometimes narrower (DPM "0: 2.5GT/s x1"), which is no
      // downgrade. Without a utilisation, nothing says they were busy.
      const bool busy = g.sample.util_pct && *g.sample.util_pct >= 50;
      if (!g.sample.util_pct) {
        g.sample.sm_clock_mhz.reset();
        g.sample.mem_clock_mhz.reset();
      }
      if (!busy) {
        g.sample.pcie_gen.reset();
        g.sample.pcie_width.reset();
        g.facts.pcie_gen_current.reset();
        g.facts.pcie_width_current.reset();
      }
      if (!g.sclk.empty())
        g.facts.max_sm_clock_mhz = *std::max_element(g.sclk.begin(), g.sclk.end());
      if (!g.mclk.empty()) {
        g.facts.max_mem_clock_mhz = *std::max_element(g.mclk.begin(), g.mclk.end());
      }
      g.facts.pcie_gen_max = g.pcie_gen_max;
      g.facts.pcie_width_max = g.pcie_width_max;
      g.facts.driver_version = driver_;
      collector_.SetFacts(index, g.facts);
      GpuRecord& r = collector_.Gpu(index);
      if (auto b = bus_ids_.find(index); b != bus_ids_.end()) r.bus_id = b->second;
      if (g.sampled) {
        collector_.AddSample(index, g.sample, snapshots_, std::nullopt, g.sample.src.line);
      }
    }
    if (!gpus_.empty()) ++snapshots_;
    gpus_.clear();
    last_row_.reset();
  }

  ReaderContext& ctx_;
  GpuCollector collector_;
  std::map<int32_t, Gpu> gpus_;  // of the current snapshot
  std::map<int32_t, std::string> bus_ids_;
  std::optional<std::string> driver_;
  std::optional<int32_t> last_row_;
  bool seen_banner_ = false;
  bool concise_ = false;
  bool header_ = false;
  bool junction_ = false;  // the table's Temp column is the junction sensor
  bool indented_ = false;  // the current line starts with blanks
  List list_ = List::kNone;
  uint32_t snapshots_ = 0;
};

int Sniff(std::string_view head) {
  // The banner or -a lines open an output of the tool. Further down a
  // file they are a job script's rocm-smi call inside its training log (or
  // a log quoting it): a part, below the log's own steps.
  int score = kSniffNo;
  size_t lines = 0, gpu_lines = 0;
  ForEachHeadLine(head, {}, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (t.empty()) return true;
    ++lines;
    std::string_view rest;
    if (auto title = SectionTitle(t); title && *title == kBanner) {
      score = lines <= 5 ? kSniffCertain : kSniffPart;
      return score == kSniffPart;  // an opening banner later may still decide
    }
    if (GpuLine(t, rest) && rest.find(':') != std::string_view::npos && ++gpu_lines >= 3) {
      score = std::max(score, lines <= 10 ? kSniffStrong : kSniffPart);
      return false;
    }
    return lines < 200;
  });
  return score;
}

}  // namespace

std::unique_ptr<TextReader> MakeRocmSmiReader() {
  return MakeFileReader<RocmSmiFile>("rocm-smi", Sniff);
}

}  // namespace laggard
