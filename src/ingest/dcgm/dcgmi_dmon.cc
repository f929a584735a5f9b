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
#include "ingest/common/sniff.h"
#include "ingest/dcgm/dcgm_fields.h"
#include "ingest/dcgm/dcgm_readers.h"
#include "ingest/dcgm/gpu_record_table.h"

namespace laggard {
namespace {

constexpr DurationNs kDefaultInterval = 1'000'000'000;

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

// The reading of one file.
class DcgmiDmonFile {
 public:
  explicit DcgmiDmonFile(ReaderContext& ctx) : ctx_(ctx), table_(ctx) {}

  uint64_t Read(LineReader& lines) {
    ForEachNonBlankLine(lines, [&](const TextLine& l) {
      if (auto c = ParseCommandLine(l.trimmed)) {
        cmd_ = *c;
        if (cmd_.interval) interval_ = *cmd_.interval;
      } else if (IsHeader(l.trimmed)) {
        Header(l.text, l.number);
      } else if (have_header_) {  // else a prompt or banner before the table
        Row(l.text, l.trimmed, l.number);
      }
    });
    Finish();
    return taken_;
  }

 private:
  void NoteOnce(const std::string& key, uint64_t n, std::string message) {
    if (unknown_noted_.insert(key).second) {
      ctx_.diag().Add(DiagCode::kHwUnknownField, ctx_.path, n, std::move(message));
    }
  }

  void Bad(uint64_t n, std::string message) {
    ctx_.diag().Add(DiagCode::kHwBadRecord, ctx_.path, n, std::move(message));
  }

  // "#Entity TMPTR POWER ...": the columns of the rows below.
  void Header(std::string_view line, uint64_t n) {
    std::vector<std::string_view> words = SplitBlanks(line);
    columns_.clear();
    column_names_.clear();
    column_start_.clear();
    bool by_id = cmd_.field_ids.size() + 1 == words.size();
    for (size_t i = 1; i < words.size(); ++i) {
      const DcgmField* f = DcgmFieldByShortName(words[i]);
      if (by_id) {
        if (const DcgmField* g = DcgmFieldById(cmd_.field_ids[i - 1])) f = g;
      }
      columns_.push_back(f);
      column_names_.emplace_back(words[i]);
      column_start_.push_back(static_cast<size_t>(words[i].data() - line.data()));
      if (f == nullptr || f->sink == DcgmSink::kUnused) {
        NoteOnce("col:" + std::string(words[i]), n,
                 fmt::format("dcgmi dmon column {} is not used", Printable(words[i], 40)));
      }
    }
    have_header_ = true;
    if (group_has_rows_) {
      ++group_;
      group_has_rows_ = false;
      seen_in_group_.clear();
    }
  }

  // The row's values: blank-separated when they match the header, else cut
  // at the header's column starts; empty when neither works.
  std::vector<std::string_view> RowValues(std::string_view line,
                                          const std::vector<std::string_view>& words) const {
    std::vector<std::string_view> values;
    if (words.size() == columns_.size() + 2) {
      values.assign(words.begin() + 2, words.end());
    } else if (!columns_.empty() && line.size() > column_start_.front()) {
      for (size_t i = 0; i < columns_.size(); ++i) {
        size_t b = column_start_[i];
        size_t e = i + 1 < columns_.size() ? column_start_[i + 1] : line.size();
        values.push_back(b < line.size() ? Trim(line.substr(b, std::min(e, line.size()) - b))
                                         : std::string_view());
      }
      // Cutting is right only if the row's text before the first column
      // is the entity alone.
      if (Trim(line.substr(0, column_start_.front())) !=
          line.substr(words.front().data() - line.data(),
                      words[1].data() + words[1].size() - words.front().data())) {
        values.clear();
      }
    }
    return values;
  }

  // A row "GPU 0  45  250.123 ...".
  void Row(std::string_view line, std::string_view t, uint64_t n) {
    std::vector<std::string_view> words = SplitBlanks(t);
    if (words.front() == "ID") return;  // the unit line under the header
    Entity entity = EntityOf(words.front());
    if (entity == Entity::kNotEntity) {
      if (FindIgnoreCase(t, "dmon was stopped") != std::string_view::npos) return;
      Bad(n, fmt::format("not a dcgmi dmon row: \"{}\"", Printable(t, 100)));
      return;
    }
    auto id = words.size() >= 2 ? ParseInt<int32_t>(words[1]) : std::nullopt;
    if (!id || *id < 0) {
      Bad(n, fmt::format("entity without a valid id: \"{}\"", Printable(t, 100)));
      return;
    }
    std::vector<std::string_view> values = RowValues(line, words);
    bool complete = values.size() == columns_.size();
    for (std::string_view v : values) complete = complete && !v.empty();
    if (!complete) {
      Bad(n,
          fmt::format("{} values for {} columns: \"{}\"", words.size() >= 2 ? words.size() - 2 : 0,
                      columns_.size(), Printable(t, 100)));
      return;
    }
    if (entity == Entity::kOther) {
      NoteOnce("entity:" + std::string(words.front()), n,
               fmt::format("dcgmi dmon rows of {} entities are not GPU data; not used",
                           Printable(words.front(), 20)));
      return;
    }
    // A repeated entity starts the next interval.
    std::string key = fmt::format("{} {}", words.front(), *id);
    if (!seen_in_group_.insert(key).second) {
      ++group_;
      seen_in_group_.clear();
      seen_in_group_.insert(key);
    }
    group_has_rows_ = true;
    size_t record;
    if (entity == Entity::kGpu) {
      record = table_.Get(std::nullopt, *id, std::nullopt, n);
      parent_gpu_index_ = *id;
    } else {
      if (!parent_gpu_index_) {
        NoteOnce("orphan", n, "dcgmi dmon MIG instance rows without their GPU's row; not used");
        return;
      }
      record = table_.Get(std::nullopt, *parent_gpu_index_, key, n);
    }
    std::string bad_what = StoreValues(record, values, n);
    if (!bad_what.empty()) {
      Bad(n,
          fmt::format("{} {}: {}; the row's other values were kept", words.front(), *id, bad_what));
    }
    ++taken_;
  }

  // Stores a row's values in its record's sample of this interval; returns
  // the first value that could not be stored ("" when none).
  std::string StoreValues(size_t record, const std::vector<std::string_view>& values, uint64_t n) {
    std::string bad_what;
    GpuSample& sample = table_.SampleAt(record, group_ * interval_, n);
    GpuFacts& facts = table_.at(record).facts;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const DcgmField* f = columns_[i];
      if (f == nullptr || f->sink == DcgmSink::kUnused || values[i] == "N/A") continue;
      auto v = ParseDouble(values[i]);
      DcgmApply r = v ? ApplyDcgmValue(*f, *v, sample, facts, why_) : DcgmApply::kBadValue;
      if (!v) why_ = "not a number";
      if (r == DcgmApply::kBadValue && bad_what.empty()) {
        bad_what = fmt::format("{} \"{}\": {}", column_names_[i], Printable(values[i], 30), why_);
      }
    }
    if (!facts.src) facts.src = ctx_.Ref(n);
    return bad_what;
  }

  void Finish() {
    if (!table_.empty()) {
      for (GpuRecord& r : table_.records()) r.time_is_approximate = true;
      ctx_.diag().Add(DiagCode::kHwApproximateTime, ctx_.path, 0,
                      fmt::format("dcgmi dmon prints no timestamps; samples are {} s apart{}",
                                  ToSeconds(interval_),
                                  cmd_.interval ? " (-d of the command line)" : " (assumed)"));
    }
    table_.Commit();
  }

  ReaderContext& ctx_;
  GpuRecordTable table_;
  CommandLine cmd_;
  DurationNs interval_ = kDefaultInterval;
  bool have_header_ = false;
  std::vector<const DcgmField*> columns_;  // nullptr: not a field laggard knows
  std::vector<std::string> column_names_;
  std::vector<size_t> column_start_;  // header positions, for fixed-width cutting
  int64_t group_ = 0;                 // interval index
  bool group_has_rows_ = false;
  std::unordered_set<std::string> seen_in_group_;
  std::optional<int32_t> parent_gpu_index_;  // the last GPU row's index, for MIG rows
  std::unordered_set<std::string> unknown_noted_;
  uint64_t taken_ = 0;
  std::string why_;
};

int SniffDcgmiDmon(std::string_view head) {
  // The header within the first lines (a command line or prompt may come
  // first); nvidia-smi dmon's header is "# gpu" / "#Date".
  auto header = [](std::string_view line) -> std::optional<int> {
    if (!IsHeader(line)) return std::nullopt;
    // A bare "#Entity" yields to a step CSV (kSniffStrong), whose reader
    // skips '#' lines, and beats the text-log reader's kSniffLikely.
    return SplitBlanks(line).size() >= 2 ? kSniffSure : kSniffStrong - 10;
  };
  return JudgeHeadLines(head, {.with_last = true}, 8, header).value_or(kSniffNo);
}

}  // namespace

std::unique_ptr<TextReader> MakeDcgmiDmonReader() {
  return MakeFileReader<DcgmiDmonFile>("dcgmi-dmon", SniffDcgmiDmon);
}

}  // namespace laggard
