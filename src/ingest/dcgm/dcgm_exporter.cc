// dcgm-exporter's /metrics: Prometheus text exposition (prometheus_text.h),
// one series per DCGM field per GPU (or MIG instance), e.g.
//
//   # HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
//   # TYPE DCGM_FI_DEV_GPU_TEMP gauge
//   DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-...",modelName="NVIDIA A100",Hostname="node-1"} 61
//   DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",...,GPU_I_ID="13",Hostname="node-1"} 0.995687
//
// What is read: DCGM_FI_* samples (dcgm_fields.h says where each goes);
// labels gpu (the index), UUID, pci_bus_id, modelName, DCGM_FI_DRIVER_VERSION,
// Hostname (the host; else the file's path) and GPU_I_ID (a MIG instance:
// its own record, mig_instance = the GPU instance id); DCGM_EXP_XID_ERRORS_COUNT
// {xid="43"} adds XIDs. Other metrics, DCGM fields laggard does not use and
// DCGM series without a gpu label (NVSwitch, CPU, link entities) are counted
// once per name as hardware.unknown_field. Pod, namespace and container
// labels are ignored. NaN and DCGM blanks are unknown values.
//
// Time: a file may hold several scrapes concatenated. Samples with
// timestamps (ms) are placed at them (absolute time). Without timestamps a
// new scrape starts when a series repeats; scrape k is placed at k s from
// the file's start and the records are time_is_approximate
// (hardware.approximate_time). A file mixing the two keeps the first kind
// and counts the other lines as hardware.bad_record.

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "base/text.h"
#include "ingest/common/prometheus_text.h"
#include "ingest/common/sniff.h"
#include "ingest/dcgm/dcgm_fields.h"
#include "ingest/dcgm/dcgm_readers.h"
#include "ingest/dcgm/gpu_record_table.h"

namespace laggard {
namespace {

constexpr DurationNs kScrapeSpacing = 1'000'000'000;

bool IsDcgmMetric(std::string_view metric) {
  return StartsWith(metric, "DCGM_FI_") || StartsWith(metric, "DCGM_EXP_");
}

// Whether a field's value goes into the time series (else into facts only).
bool WritesSample(DcgmSink sink) {
  switch (sink) {
    case DcgmSink::kDefaultPowerLimitW:
    case DcgmSink::kMinPowerLimitW:
    case DcgmSink::kMaxPowerLimitW:
    case DcgmSink::kPcieGenMax:
    case DcgmSink::kPcieWidthMax:
    case DcgmSink::kXid:
    case DcgmSink::kEccDbeVolatile:
    case DcgmSink::kEccDbeAggregate:
    case DcgmSink::kRetiredPagesDbe:
    case DcgmSink::kRetiredPagesPending:
    case DcgmSink::kRemappedRowsUncorrectable:
    case DcgmSink::kRowRemapFailure:
    case DcgmSink::kMaxSmClockMhz:
    case DcgmSink::kMaxMemClockMhz:
    case DcgmSink::kAppSmClockMhz:
    case DcgmSink::kSlowdownTempC:
    case DcgmSink::kShutdownTempC:
    case DcgmSink::kMaxOperatingTempC:
    case DcgmSink::kUnused: return false;
    default: return true;
  }
}

std::optional<std::string> NonEmpty(const std::string* s) {
  if (s == nullptr || Trim(*s).empty()) return std::nullopt;
  return std::string(Trim(*s));
}

// The identity of a series: metric name and every label.
void SeriesKey(const prom::Line& l, std::string& key) {
  key.assign(l.metric);
  for (const prom::Label& label : l.labels) {
    key.push_back('\x1f');
    key.append(label.name);
    key.push_back('=');
    key.append(label.value);
  }
}

// The GPU's identity from a series' labels, where not known yet.
void TakeLabels(const prom::Line& l, ReaderContext& ctx, uint64_t n, GpuRecord& r) {
  if (!r.uuid) r.uuid = NonEmpty(l.FindLabel("UUID"));
  if (!r.bus_id) r.bus_id = NonEmpty(l.FindLabel("pci_bus_id"));
  if (!r.facts.name) r.facts.name = NonEmpty(l.FindLabel("modelName"));
  if (!r.facts.driver_version)
    r.facts.driver_version = NonEmpty(l.FindLabel("DCGM_FI_DRIVER_VERSION"));
  if (!r.facts.src) r.facts.src = ctx.Ref(n);
}

// DCGM_EXP_XID_ERRORS_COUNT: an XID the GPU reported (value > 0), kept once.
// False when the series has no numeric xid label.
bool TakeXid(const prom::Line& l, GpuFacts& facts) {
  const std::string* xid_label = l.FindLabel("xid");
  auto xid = xid_label != nullptr ? ParseInt<int64_t>(*xid_label) : std::nullopt;
  if (!xid || *xid < 0) return false;
  std::vector<int64_t>& xids = facts.xids;
  if (l.value > 0 && std::find(xids.begin(), xids.end(), *xid) == xids.end()) xids.push_back(*xid);
  return true;
}

class DcgmExporterReader final : public TextReader {
 public:
  std::string_view name() const override { return "dcgm-exporter"; }

  int Sniff(std::string_view head) const override {
    prom::Line l;
    std::string error;
    size_t ok = 0, bad = 0, dcgm = 0;
    // prom::ParseLine() takes a line's '\r' off itself.
    ForEachHeadLine(head, {.keep_cr = true}, [&](std::string_view line) {
      if (!prom::ParseLine(line, l, error)) {
        ++bad;
        return true;
      }
      ++ok;
      if ((l.kind == prom::LineKind::kSample || l.kind == prom::LineKind::kHelp ||
           l.kind == prom::LineKind::kType) &&
          IsDcgmMetric(l.metric)) {
        ++dcgm;
      }
      return true;
    });
    if (dcgm == 0) return kSniffNo;
    return bad * 4 <= ok ? kSniffSure : kSniffNo;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    GpuRecordTable table(ctx);
    prom::Line l;
    std::string error;
    std::string why;
    std::string key;
    enum class Time { kUnknown, kAbsolute, kScrapeOrder } time_mode = Time::kUnknown;
    int64_t scrape = 0;
    std::unordered_set<std::string> series_in_scrape;
    std::unordered_set<std::string> noted;
    GpuSample scratch;  // target of facts-only fields
    uint64_t taken = 0;
    std::string_view line;

    auto note_once = [&](std::string note_key, uint64_t n, std::string message) {
      if (noted.insert(std::move(note_key)).second)
        ctx.diag().Add(DiagCode::kHwUnknownField, ctx.path, n, std::move(message));
    };
    auto bad = [&](uint64_t n, std::string message) {
      ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n, std::move(message));
    };

    while (lines.Next(line)) {
      uint64_t n = lines.line_number();
      if (!prom::ParseLine(line, l, error)) {
        bad(n, fmt::format("not a Prometheus exposition line ({}): \"{}\"", error,
                           Printable(line, 100)));
        continue;
      }
      if (l.kind != prom::LineKind::kSample) continue;
      // When is this sample?
      TimeNs time = 0;
      if (l.timestamp_ms) {
        if (time_mode == Time::kScrapeOrder) {
          bad(n, "sample with a timestamp in a file whose samples have none; not used");
          continue;
        }
        if (*l.timestamp_ms > 9'000'000'000'000 || *l.timestamp_ms < -9'000'000'000'000) {
          bad(n, fmt::format("timestamp {} ms out of range", *l.timestamp_ms));
          continue;
        }
        time_mode = Time::kAbsolute;
        time = *l.timestamp_ms * 1'000'000;
      } else {
        if (time_mode == Time::kAbsolute) {
          bad(n, "sample without a timestamp in a file whose samples have them; not used");
          continue;
        }
        time_mode = Time::kScrapeOrder;
        SeriesKey(l, key);
        if (!series_in_scrape.insert(key).second) {
          ++scrape;
          series_in_scrape.clear();
          series_in_scrape.insert(key);
        }
        time = scrape * kScrapeSpacing;
      }
      if (!IsDcgmMetric(l.metric)) {
        note_once("m:" + l.metric, n,
                  fmt::format("metric {} is not a DCGM field; not used", Printable(l.metric, 60)));
        continue;
      }
      const DcgmField* field = nullptr;
      bool xid_count = l.metric == "DCGM_EXP_XID_ERRORS_COUNT";
      if (!xid_count) {
        field = DcgmFieldByName(l.metric);
        if (field == nullptr || field->sink == DcgmSink::kUnused) {
          note_once("m:" + l.metric, n, fmt::format("{} is not used", Printable(l.metric, 60)));
          continue;
        }
      }
      const std::string* gpu_label = l.FindLabel("gpu");
      if (gpu_label == nullptr) {
        note_once("nogpu", n,
                  fmt::format("DCGM series without a gpu label (NVSwitch, CPU or link entities, "
                              "first: {}) are not GPU data; not used",
                              Printable(l.metric, 60)));
        continue;
      }
      auto gpu = ParseInt<int32_t>(*gpu_label);
      if (!gpu || *gpu < 0 || *gpu >= 1024) {
        bad(n, fmt::format("gpu label \"{}\" is not a GPU index", Printable(*gpu_label, 30)));
        continue;
      }
      size_t record =
          table.Get(NonEmpty(l.FindLabel("Hostname")), *gpu, NonEmpty(l.FindLabel("GPU_I_ID")), n);
      TakeLabels(l, ctx, n, table.at(record));
      if (xid_count) {
        if (TakeXid(l, table.at(record).facts)) {
          ++taken;
        } else {
          bad(n, "DCGM_EXP_XID_ERRORS_COUNT without a numeric xid label");
        }
        continue;
      }
      GpuSample& sample = WritesSample(field->sink) ? table.SampleAt(record, time, n) : scratch;
      DcgmApply r = ApplyDcgmValue(*field, l.value, sample, table.at(record).facts, why);
      if (r == DcgmApply::kApplied) {
        ++taken;
      } else if (r == DcgmApply::kBadValue) {
        bad(n,
            fmt::format("{} of GPU {}: {} ({})", l.metric, *gpu, why, prom::FormatValue(l.value)));
      }
    }
    if (time_mode == Time::kScrapeOrder && !table.empty()) {
      for (GpuRecord& r : table.records()) r.time_is_approximate = true;
      ctx.diag().Add(DiagCode::kHwApproximateTime, ctx.path, 0,
                     fmt::format("exporter samples have no timestamps; {} scrape(s) placed 1 s "
                                 "apart in file order",
                                 scrape + 1));
    }
    table.Commit();
    return taken;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeDcgmExporterReader() {
  return std::make_unique<DcgmExporterReader>();
}

}  // namespace laggard
