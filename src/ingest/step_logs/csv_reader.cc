// CSV step records with a header line, e.g.
//
//   rank,step,step_time_ms,host,local_rank
//   0,1,812.3,node-a,0
//
// The delimiter (',', '\t' or ';') is the one the header uses most. Fields
// may be quoted ("a,b" with "" for a quote). Lines starting with '#' and
// blank lines are skipped. A row whose rank, step or duration cannot be read
// is counted as csv.bad_row.

#include <deque>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/field_names.h"
#include "ingest/common/sniff.h"
#include "ingest/step_logs/step_log_readers.h"

namespace laggard {
namespace {

// Splits one CSV record (RFC 4180 quoting, no embedded newlines). Fields are
// views into `line` or into `scratch` for quoted fields with escaped quotes
// (a deque: growing it must not move the strings earlier fields point into).
void SplitCsv(std::string_view line, char delim, std::vector<std::string_view>& fields,
              std::deque<std::string>& scratch) {
  fields.clear();
  scratch.clear();
  size_t p = 0;
  while (true) {
    if (p < line.size() && line[p] == '"') {
      std::string value;
      bool escaped = false;
      size_t q = p + 1;
      while (q < line.size()) {
        if (line[q] == '"') {
          if (q + 1 < line.size() && line[q + 1] == '"') {
            value.push_back('"');
            escaped = true;
            q += 2;
            continue;
          }
          break;
        }
        value.push_back(line[q++]);
      }
      if (escaped) {
        scratch.push_back(std::move(value));
        fields.push_back(scratch.back());
      } else {
        fields.push_back(line.substr(p + 1, q - p - 1));
      }
      p = line.find(delim, q);
    } else {
      size_t e = line.find(delim, p);
      fields.push_back(
          line.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p));
      p = e;
    }
    if (p == std::string_view::npos) return;
    ++p;
  }
}

// Column `i` of a split row, trimmed; nullopt when the row has no such
// column (i < 0: the layout has none) or it is blank.
std::optional<std::string_view> FieldAt(const std::vector<std::string_view>& fields, int i) {
  if (i < 0 || static_cast<size_t>(i) >= fields.size()) return std::nullopt;
  std::string_view v = Trim(fields[static_cast<size_t>(i)]);
  if (v.empty()) return std::nullopt;
  return v;
}

// The layout of a head's first line other than blanks and '#' comments,
// when that line is a delimited header; nullopt when it is none (JSON, a
// line without a delimiter, a cut line).
std::optional<FieldLayout> SniffHeader(std::string_view head) {
  std::string_view header;
  ForEachHeadLine(head, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') return true;
    header = t;
    return false;
  });
  if (header.empty() || header.front() == '{' || header.front() == '[') return std::nullopt;
  char delim = GuessDelimiter(header);
  if (header.find(delim) == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> names;
  std::deque<std::string> scratch;
  SplitCsv(header, delim, names, scratch);
  return LayoutFromNames(names);
}

// A table with a rank column and a host or GPU column but no steps: the
// placement of ranks (`rank,host,gpu`), which joins GPU metrics to ranks
// when the step logs do not say where each rank ran.
bool IsRankMap(const FieldLayout& l) {
  return l.step < 0 && l.duration < 0 && l.rank >= 0 && (l.host >= 0 || l.gpu >= 0);
}

// Reads a rank map's rows into rank info; returns the rows taken.
uint64_t ReadRankMap(LineReader& lines, ReaderContext& ctx, const FieldLayout& layout, char delim) {
  std::string_view line;
  std::vector<std::string_view> fields;
  std::deque<std::string> scratch;
  uint64_t taken = 0;
  while (lines.Next(line)) {
    std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    uint64_t n = lines.line_number();
    SplitCsv(line, delim, fields, scratch);
    auto field = [&](int i) { return FieldAt(fields, i); };
    auto rank_text = field(layout.rank);
    int32_t rank = rank_text ? ParseInt<int32_t>(*rank_text).value_or(-1) : -1;
    auto host = field(layout.host);
    auto gpu_text = field(layout.gpu);
    int32_t gpu = gpu_text ? ParseInt<int32_t>(*gpu_text).value_or(-1) : -1;
    if (rank < 0 || rank > kMaxRank || (gpu_text && (gpu < 0 || gpu >= 1024)) ||
        (!host && gpu < 0)) {
      ctx.diag().Add(
          DiagCode::kCsvBadRow, ctx.path, n,
          fmt::format("rank map row needs a rank and a host or GPU: \"{}\"", Printable(line, 100)));
      continue;
    }
    if (host) ctx.out->SetHost(rank, *host, ctx.path, n);
    if (gpu >= 0) ctx.out->SetLocalGpu(rank, gpu, ctx.path, n);
    ++taken;
  }
  return taken;
}

class CsvStepReader final : public TextReader {
 public:
  std::string_view name() const override { return "csv"; }

  int Sniff(std::string_view head) const override {
    std::optional<FieldLayout> layout = SniffHeader(head);
    // Rank may come from the file name, so step + duration is enough here.
    return layout && layout->step >= 0 && layout->duration >= 0 ? kSniffStrong : kSniffNo;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    std::string_view line;
    std::vector<std::string_view> fields;
    std::deque<std::string> scratch;
    std::vector<std::string> header_copy;
    FieldLayout layout;
    char delim = ',';
    bool have_header = false;
    uint64_t taken = 0;
    uint32_t units_seen = 0;
    while (lines.Next(line)) {
      std::string_view t = Trim(line);
      if (t.empty() || t.front() == '#') continue;
      uint64_t n = lines.line_number();
      if (!have_header) {
        delim = GuessDelimiter(line);
        SplitCsv(line, delim, fields, scratch);
        layout = LayoutFromNames(fields);
        if (!layout.usable(ctx.rank_from_path.has_value())) {
          ctx.diag().Add(DiagCode::kCsvNoHeader, ctx.path, n,
                         fmt::format("header \"{}\" lacks {}", Printable(line, 100),
                                     layout.step < 0       ? "a step column"
                                     : layout.duration < 0 ? "a duration column"
                                                           : "a rank column (and the file name "
                                                             "names no rank)"));
          return 0;
        }
        have_header = true;
        continue;
      }
      SplitCsv(line, delim, fields, scratch);
      auto field = [&](int i) { return FieldAt(fields, i); };
      std::optional<int64_t> rank;
      if (layout.rank >= 0) {
        auto v = field(layout.rank);
        rank = v ? ParseInt<int64_t>(*v) : std::nullopt;
        if (!rank) {
          ctx.diag().Add(DiagCode::kCsvBadRow, ctx.path, n,
                         fmt::format("rank is not an integer: \"{}\"", Printable(line, 100)));
          continue;
        }
      }
      auto step_text = field(layout.step);
      auto step = step_text ? ParseInt<int64_t>(*step_text) : std::nullopt;
      if (!step) {
        ctx.diag().Add(DiagCode::kCsvBadRow, ctx.path, n,
                       fmt::format("step is not an integer: \"{}\"", Printable(line, 100)));
        continue;
      }
      auto dur_text = field(layout.duration);
      TimeUnit unit_used = TimeUnit::kSeconds;
      auto duration =
          dur_text ? ParseDurationValue(*dur_text, layout.duration_unit, unit_used) : std::nullopt;
      if (!duration) {
        ctx.diag().Add(DiagCode::kCsvBadRow, ctx.path, n,
                       fmt::format("duration is not a time: \"{}\"", Printable(line, 100)));
        continue;
      }
      units_seen |= 1u << static_cast<unsigned>(unit_used);
      std::optional<TimeNs> start;
      if (auto s = field(layout.start)) start = ParseTimestamp(*s);
      DurationNs compute = ParseComputeField(ctx, n, field(layout.compute), layout.compute_unit);
      if (!AddParsedStep(ctx, n, rank, *step, duration, start, compute)) continue;
      ++taken;
      if (layout.has_cpu()) [[unlikely]] {
        StepCpuText cpu;
        for (int i = 0; i < kStepCpuFields; ++i) {
          cpu.text[i] = field(layout.cpu[i]);
          cpu.unit[i] = layout.cpu_unit[i];
        }
        AddStepCpuFields(ctx, n, rank, *step, cpu);
      }
      int64_t r = rank ? *rank : ctx.rank_from_path.value_or(-1);
      if (r < 0) continue;
      if (auto h = field(layout.host)) ctx.out->SetHost(static_cast<int32_t>(r), *h, ctx.path, n);
      auto role = [&](int column) -> std::optional<int32_t> {
        auto v = field(column);
        auto i = v ? ParseInt<int32_t>(*v) : std::nullopt;
        return i && *i >= 0 ? i : std::nullopt;
      };
      if (layout.stage >= 0 || layout.dp_rank >= 0) {
        ctx.out->SetRole(static_cast<int32_t>(r), role(layout.stage), role(layout.dp_rank));
      }
      if (auto g = field(layout.gpu)) {
        auto gpu = ParseInt<int32_t>(*g);
        if (gpu && *gpu >= 0 && *gpu < 1024)
          ctx.out->SetLocalGpu(static_cast<int32_t>(r), *gpu, ctx.path, n);
      }
    }
    if (__builtin_popcount(units_seen) > 1) {
      ctx.diag().Add(DiagCode::kMixedUnits, ctx.path, 0,
                     "durations are written in more than one unit; each was converted");
    }
    return taken;
  }
};

// The rank map (`rank,host,gpu`): its own reader so that its rows, which
// are placements and not steps, are never counted as step records.
class RankMapReader final : public TextReader {
 public:
  std::string_view name() const override { return "rank-map"; }

  int Sniff(std::string_view head) const override {
    std::optional<FieldLayout> layout = SniffHeader(head);
    // Below a step CSV (kSniffStrong), which a table with step columns is.
    return layout && IsRankMap(*layout) ? kSniffStrong - 2 : kSniffNo;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    std::string_view line;
    std::vector<std::string_view> fields;
    std::deque<std::string> scratch;
    while (lines.Next(line)) {
      std::string_view t = Trim(line);
      if (t.empty() || t.front() == '#') continue;
      char delim = GuessDelimiter(line);
      SplitCsv(line, delim, fields, scratch);
      FieldLayout layout = LayoutFromNames(fields);
      if (!IsRankMap(layout)) {
        ctx.diag().Add(DiagCode::kCsvNoHeader, ctx.path, lines.line_number(),
                       fmt::format("header \"{}\" is not a rank map (rank and host/gpu columns)",
                                   Printable(line, 100)));
        return 0;
      }
      return ReadRankMap(lines, ctx, layout, delim);
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeRankMapReader() { return std::make_unique<RankMapReader>(); }

std::unique_ptr<TextReader> MakeCsvStepReader() { return std::make_unique<CsvStepReader>(); }

}  // namespace laggard
