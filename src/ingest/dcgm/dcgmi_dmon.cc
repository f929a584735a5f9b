// `dcgmi dmon` output: DCGM's field monitor, one row per entity per
// interval, columns named by the fields' short names, e.g.
//
//   $ dcgmi dmon -e 150,155,100,203 -d 1000
//   #Entity   TMPTR        POWER            SMCLK        GPUTL
//   ID                  C            W
//   GPU 0     45           250.123          1410         98
//   GPU 1     N/A          248.001          1410         97
//
// What is read:
//   - the header ("#Entity" + short names, DCGM's dcgm_fields.cpp) and the
//     unit line under it ("ID ..."), printed again every 15 intervals;
//   - rows "GPU n", "GPU-I n", "GPU-CI n" (MIG instances, attached to the GPU
//     row printed above them); rows of other entities (vGPU, NVSwitch, CPU,
//     links) are not GPU data: counted once as hardware.unknown_field;
//   - "N/A" is an unknown value; string fields (names, UUIDs) may contain
//     blanks, so a row whose blank-separated tokens do not match the header
//     is cut at the header's column positions (dcgmi pads every column to a
//     fixed width);
//   - a command line in the file ("dcgmi dmon ... -e 150,155 -d 500"): -e
//     gives the field ids of the columns (used when the header's short names
//     are unknown), -d the interval in ms.
// dmon prints no timestamps: rows are grouped into intervals (a new interval
// starts when an entity repeats or the header is printed again) and sample
// times are interval index x interval (1 s when unknown) from the file's
// start; records are marked time_is_approximate (hardware.approximate_time).

#include <fmt/format.h>

#include <unordered_set>

#include "base/text.h"
#include "ingest/dcgm/dcgm_fields.h"
#include "ingest/dcgm/gpu_record_table.h"
#include "ingest/dcgm/dcgm_readers.h"

namespace laggard {
namespace {

constexpr DurationNs kDefaultInterval = 1'000'000'000;

std::vector<std::string_view> SplitBlanks(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    size_t start = i;
    while (i < s.size() && !IsSpace(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

bool IsHeader(std::string_view line) { return StartsWith(Trim(line), "#Entity"); }

// Entity types dcgmi prints in the first column (DeviceMonitor.cpp).
enum class Entity { kGpu, kGpuInstance, kComputeInstance, kOther, kNotEntity };

Entity EntityOf(std::string_view word) {
  if (word == "GPU") return Entity::kGpu;
  if (word == "GPU-I") return Entity::kGpuInstance;
  if (word == "GPU-CI") return Entity::kComputeInstance;
  static constexpr std::string_view kOthers[] = {"vGPU", "Switch", "NvSwitch", "Link",
                                                 "CPU",  "Core",   "CPU-Core", "ConnectX"};
  for (std::string_view o : kOthers) {
    if (word == o) return Entity::kOther;
  }
  return Entity::kNotEntity;
}

// Options of a "dcgmi dmon" command line, if the line is one.
struct CommandLine {
  std::vector<int64_t> field_ids;
  std::optional<DurationNs> interval;
};

std::optional<CommandLine> ParseCommandLine(std::string_view line) {
  size_t at = line.find("dcgmi dmon");
  if (at == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> words = SplitBlanks(line.substr(at + 10));
  CommandLine cmd;
  for (size_t i = 0; i < words.size(); ++i) {
    std::string_view w = words[i];
    std::string_view value;
    auto option = [&](std::string_view shrt, std::string_view lng) {
      if (w == shrt || w == lng) {
        if (i + 1 >= words.size()) return false;
        value = words[++i];
        return true;
      }
      if (StartsWith(w, std::string(lng) + "=")) {
        value = w.substr(lng.size() + 1);
        return true;
      }
      return false;
    };
    if (option("-e", "--field-id")) {
      cmd.field_ids.clear();
      for (std::string_view id : Split(value, ',')) {
        if (auto n = ParseInt<int64_t>(id)) cmd.field_ids.push_back(*n);
      }
    } else if (option("-d", "--delay")) {
      int64_t ms = ParseInt<int64_t>(value).value_or(0);
      if (ms > 0 && ms < 86'400'000) cmd.interval = ms * 1'000'000;
    }
  }
  return cmd;
}

class DcgmiDmonReader final : public TextReader {
 public:
  std::string_view name() const override { return "dcgmi-dmon"; }

  int Sniff(std::string_view head) const override {
    // The header within the first lines (a command line or prompt may come
    // first); nvidia-smi dmon's header is "# gpu" / "#Date".
    size_t pos = 0;
    for (int n = 0; n < 8 && pos < head.size(); ++n) {
      size_t nl = head.find('\n', pos);
      std::string_view line =
          head.substr(pos, nl == std::string_view::npos ? head.size() - pos : nl - pos);
      pos = nl == std::string_view::npos ? head.size() : nl + 1;
      if (IsHeader(line)) {
        std::vector<std::string_view> words = SplitBlanks(line);
        return words.size() >= 2 ? 95 : 80;
      }
    }
    return 0;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    GpuRecordTable table(ctx);
    CommandLine cmd;
    DurationNs interval = kDefaultInterval;
    bool have_header = false;
    std::vector<const DcgmField*> columns;   // nullptr: not a field laggard knows
    std::vector<std::string> column_names;
    std::vector<size_t> column_start;        // header positions, for fixed-width cutting
    int64_t group = 0;                       // interval index
    bool group_has_rows = false;
    std::unordered_set<std::string> seen_in_group;
    std::optional<int32_t> parent_gpu_index;  // the last GPU row's index, for MIG rows
    std::unordered_set<std::string> unknown_noted;
    uint64_t taken = 0;
    std::string why;
    std::string_view line;

    auto note_once = [&](const std::string& key, uint64_t n, std::string message) {
      if (unknown_noted.insert(key).second) {
        ctx.diag().Add(DiagCode::kHwUnknownField, ctx.path, n, std::move(message));
      }
    };

    while (lines.Next(line)) {
      uint64_t n = lines.line_number();
      std::string_view t = Trim(line);
      if (t.empty()) continue;
      if (auto c = ParseCommandLine(t)) {
        cmd = *c;
        if (cmd.interval) interval = *cmd.interval;
        continue;
      }
      if (IsHeader(t)) {
        std::vector<std::string_view> words = SplitBlanks(line);
        columns.clear();
        column_names.clear();
        column_start.clear();
        bool by_id = cmd.field_ids.size() + 1 == words.size();
        for (size_t i = 1; i < words.size(); ++i) {
          const DcgmField* f = DcgmFieldByShortName(words[i]);
          if (by_id) {
            if (const DcgmField* g = DcgmFieldById(cmd.field_ids[i - 1])) f = g;
          }
          columns.push_back(f);
          column_names.emplace_back(words[i]);
          column_start.push_back(static_cast<size_t>(words[i].data() - line.data()));
          if (f == nullptr || f->sink == DcgmSink::kUnused) {
            note_once("col:" + std::string(words[i]), n,
                      fmt::format("dcgmi dmon column {} is not used", Printable(words[i], 40)));
          }
        }
        have_header = true;
        if (group_has_rows) {
          ++group;
          group_has_rows = false;
          seen_in_group.clear();
        }
        continue;
      }
      if (!have_header) continue;  // a prompt or banner before the table
      std::vector<std::string_view> words = SplitBlanks(t);
      if (words.front() == "ID") continue;  // the unit line under the header
      Entity entity = EntityOf(words.front());
      if (entity == Entity::kNotEntity) {
        if (FindIgnoreCase(t, "dmon was stopped") != std::string_view::npos) continue;
        ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n,
                       fmt::format("not a dcgmi dmon row: \"{}\"", Printable(t, 100)));
        continue;
      }
      auto id = words.size() >= 2 ? ParseInt<int32_t>(words[1]) : std::nullopt;
      if (!id || *id < 0) {
        ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n,
                       fmt::format("entity without a valid id: \"{}\"", Printable(t, 100)));
        continue;
      }
      // The row's values: blank-separated when they match the header, else
      // cut at the header's column starts.
      std::vector<std::string_view> values;
      if (words.size() == columns.size() + 2) {
        values.assign(words.begin() + 2, words.end());
      } else if (!columns.empty() && line.size() > column_start.front()) {
        for (size_t i = 0; i < columns.size(); ++i) {
          size_t b = column_start[i];
          size_t e = i + 1 < columns.size() ? column_start[i + 1] : line.size();
          values.push_back(b < line.size() ? Trim(line.substr(b, std::min(e, line.size()) - b))
                                           : std::string_view());
        }
        // Cutting is right only if the row's text before the first column
        // is the entity alone.
        if (Trim(line.substr(0, column_start.front())) !=
            line.substr(words.front().data() - line.data(),
                        words[1].data() + words[1].size() - words.front().data())) {
          values.clear();
        }
      }
      bool complete = values.size() == columns.size();
      for (std::string_view v : values) complete = complete && !v.empty();
      if (!complete) {
        ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n,
                       fmt::format("{} values for {} columns: \"{}\"",
                                   words.size() >= 2 ? words.size() - 2 : 0, columns.size(),
                                   Printable(t, 100)));
        continue;
      }
      if (entity == Entity::kOther) {
        note_once("entity:" + std::string(words.front()), n,
                  fmt::format("dcgmi dmon rows of {} entities are not GPU data; not used",
                              Printable(words.front(), 20)));
        continue;
      }
      // A repeated entity starts the next interval.
      std::string key = fmt::format("{} {}", words.front(), *id);
      if (!seen_in_group.insert(key).second) {
        ++group;
        seen_in_group.clear();
        seen_in_group.insert(key);
      }
      group_has_rows = true;
      size_t record;
      if (entity == Entity::kGpu) {
        record = table.Get(std::nullopt, *id, std::nullopt, n);
        parent_gpu_index = *id;
      } else {
        if (!parent_gpu_index) {
          note_once("orphan", n,
                    "dcgmi dmon MIG instance rows without their GPU's row; not used");
          continue;
        }
        record = table.Get(std::nullopt, *parent_gpu_index, key, n);
      }
      TimeNs time = group * interval;
      bool bad = false;
      std::string bad_what;
      {
        GpuSample& sample = table.SampleAt(record, time, n);
        GpuFacts& facts = table.at(record).facts;
        for (size_t i = 0; i < columns.size(); ++i) {
          const DcgmField* f = columns[i];
          if (f == nullptr || f->sink == DcgmSink::kUnused || values[i] == "N/A") continue;
          auto v = ParseDouble(values[i]);
          DcgmApply r = v ? ApplyDcgmValue(*f, *v, sample, facts, why) : DcgmApply::kBadValue;
          if (!v) why = "not a number";
          if (r == DcgmApply::kBadValue && !bad) {
            bad = true;
            bad_what = fmt::format("{} \"{}\": {}", column_names[i], Printable(values[i], 30), why);
          }
        }
        if (!facts.src) facts.src = ctx.Ref(n);
      }
      if (bad) {
        ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n,
                       fmt::format("{} {}: {}; the row's other values were kept", words.front(),
                                   *id, bad_what));
      }
      ++taken;
    }
    if (!table.empty()) {
      for (GpuRecord& r : table.records()) r.time_is_approximate = true;
      ctx.diag().Add(DiagCode::kHwApproximateTime, ctx.path, 0,
                     fmt::format("dcgmi dmon prints no timestamps; samples are {} s apart{}",
                                 ToSeconds(interval),
                                 cmd.interval ? " (-d of the command line)" : " (assumed)"));
    }
    table.Commit();
    return taken;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeDcgmiDmonReader() { return std::make_unique<DcgmiDmonReader>(); }

}  // namespace laggard
