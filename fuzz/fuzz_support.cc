#include "fuzz_support.h"

#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ingest/readers.h"

namespace laggard::fuzz {

void Fail(const char* file, int line, const char* cond, const std::string& message) {
  std::fprintf(stderr, "\nfuzz invariant broken at %s:%d\n  check: %s\n  %s\n", file, line, cond,
               message.c_str());
  std::fflush(stderr);
  std::abort();
}

uint64_t Hash(std::string_view data, uint64_t salt) {
  uint64_t h = 14695981039346656037ull ^ (salt * 0x9e3779b97f4a7c15ull);
  for (char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

size_t MemorySource::Read(char* buf, size_t n) {
  size_t chunk = 1 + static_cast<size_t>((calls_++ * 7919) % max_chunk_);
  size_t take = std::min({n, chunk, data_.size() - pos_});
  std::memcpy(buf, data_.data() + pos_, take);
  pos_ += take;
  return take;
}

std::vector<RefLine> ReferenceLines(std::string_view data) {
  std::vector<RefLine> lines;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    size_t end = nl == std::string_view::npos ? data.size() : nl;
    std::string_view raw = data.substr(pos, end - pos);
    std::string_view text = raw;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    lines.push_back(RefLine{text, raw.size()});
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return lines;
}

ExactBuffer::ExactBuffer(std::string_view data)
    : buf_(new char[data.empty() ? 1 : data.size()]), size_(data.size()) {
  if (!data.empty()) std::memcpy(buf_.get(), data.data(), data.size());
}

namespace {

std::string MakeScratchDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "laggard-fuzz-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  return tmpl;
}

std::string* scratch_dir = nullptr;

void RemoveScratchDir() {
  if (scratch_dir == nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(*scratch_dir, ec);
}

}  // namespace

const std::string& ScratchDir() {
  if (scratch_dir == nullptr) {
    scratch_dir = new std::string(MakeScratchDir());
    std::atexit(RemoveScratchDir);
  }
  return *scratch_dir;
}

void WriteFileOrDie(const std::string& path, std::string_view content) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // A new file rather than a truncated one: ext4 flushes files that are
  // truncated and rewritten (auto_da_alloc), which costs milliseconds.
  ::unlink(path.c_str());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(content.data(), 1, content.size(), f) != content.size() ||
      std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

namespace {

void DeflateMember(std::string_view data, std::string& out) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    std::abort();
  }
  size_t start = out.size();
  out.resize(start + deflateBound(&zs, static_cast<uLong>(data.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data() + start);
  zs.avail_out = static_cast<uInt>(out.size() - start);
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(start + zs.total_out);
  deflateEnd(&zs);
}

}  // namespace

std::string Gzip(std::string_view data, size_t split) {
  std::string out;
  if (split < data.size()) {
    DeflateMember(data.substr(0, split), out);
    DeflateMember(data.substr(split), out);
  } else {
    DeflateMember(data, out);
  }
  return out;
}

ReaderOutcome ReadInMemory(const TextReader& reader, std::string_view data,
                           std::optional<int32_t> rank_from_path, size_t max_chunk) {
  ReaderOutcome outcome;
  RunBuilder builder;
  ReaderContext ctx;
  ctx.file_index = 0;
  ctx.path = "fuzz-input";
  ctx.rank_from_path = rank_from_path;
  ctx.out = &builder;
  MemorySource source(data, max_chunk);
  LineReader lines(source);
  outcome.taken = reader.Read(lines, ctx);
  outcome.bytes_read = lines.bytes();
  InputFileInfo info;
  info.path = ctx.path;
  info.format = std::string(reader.name());
  info.bytes = lines.bytes();
  info.records = outcome.taken;
  info.used = outcome.taken > 0;
  outcome.run.files.push_back(std::move(info));
  builder.Finalize(outcome.run);
  return outcome;
}

namespace {

void CheckSeries(const Run& run, const StepSeries& s, const char* what) {
  FUZZ_CHECK(!s.steps.empty(), "{} rank {} kept with no steps", what, s.info.rank);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const StepRecord& r = s.steps[i];
    FUZZ_CHECK(r.step >= 0, "{} rank {} holds step {}", what, s.info.rank, r.step);
    FUZZ_CHECK(r.duration_ns > 0, "{} rank {} step {} has duration {} ns", what, s.info.rank,
               r.step, r.duration_ns);
    FUZZ_CHECK(r.src.file < run.files.size(), "record names file {} of {}", r.src.file,
               run.files.size());
    FUZZ_CHECK(r.src.line >= 1, "rank {} step {} has no source line", s.info.rank, r.step);
    if (i > 0) {
      FUZZ_CHECK(s.steps[i - 1].step < r.step, "{} rank {} steps not ascending/unique: {} then {}",
                 what, s.info.rank, s.steps[i - 1].step, r.step);
    }
  }
}

}  // namespace

void CheckRunInvariants(const Run& run) {
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    const StepSeries& s = run.ranks[i];
    FUZZ_CHECK(s.info.rank >= 0 && s.info.rank <= kMaxRank, "rank {} out of range", s.info.rank);
    if (i > 0) {
      FUZZ_CHECK(run.ranks[i - 1].info.rank < s.info.rank, "ranks not sorted/unique: {} then {}",
                 run.ranks[i - 1].info.rank, s.info.rank);
    }
    FUZZ_CHECK(run.FindRank(s.info.rank) == &s, "FindRank({}) does not find its series",
               s.info.rank);
    CheckSeries(run, s, "ranked");
  }
  for (const StepSeries& s : run.unattributed) {
    FUZZ_CHECK(s.file.has_value() && *s.file < run.files.size(),
               "unattributed series without a valid file");
    CheckSeries(run, s, "unattributed");
    for (const StepRecord& r : s.steps) {
      FUZZ_CHECK(r.src.file == *s.file, "unattributed record from file {} in series of file {}",
                 r.src.file, *s.file);
    }
  }
  uint64_t claimed = 0;
  for (const InputFileInfo& f : run.files) {
    claimed += f.records;
    FUZZ_CHECK(f.used == (f.records > 0), "file {} used={} with {} records", f.path, f.used,
               f.records);
  }
  // A text log's records are its steps, its hang lines (a watchdog line,
  // a traceback that ended a process: ingest/common/hang_lines.h) and its
  // StragglerDetector reports (ingest/step_logs/megatron_straggler.h).
  uint64_t kept = run.total_steps();
  uint64_t hang_events = run.hang.events.size();
  uint64_t dups = run.diagnostics.count(DiagCode::kStepDuplicate);
  uint64_t reports = run.tool_reports.size() + run.nvrx_reports.size();
  FUZZ_CHECK(claimed == kept + hang_events + dups + reports,
             "records lost: readers took {}, run keeps {} steps, {} hang events and {} "
             "StragglerDetector / NVRx reports and counts {} duplicates",
             claimed, kept, hang_events, reports, dups);
  for (const ToolReport& r : run.tool_reports) {
    auto check = [](const RankValue& v) {
      FUZZ_CHECK(v.rank >= 0 && v.rank <= kMaxRank && v.value >= 0, "tool report value {} rank {}",
                 v.value, v.rank);
    };
    for (const ToolExtremes& m : r.metrics) {
      if (m.min) check(*m.min);
      if (m.max) check(*m.max);
    }
    for (const RankValue& v : r.lowest_tflops) check(v);
    for (const RankValue& v : r.highest_tflops) check(v);
  }
  for (const NvrxReport& r : run.nvrx_reports) {
    for (const auto* list : {&r.relative, &r.individual}) {
      for (const RankScore& s : *list) {
        FUZZ_CHECK(s.rank >= 0 && s.rank <= kMaxRank && !(s.score < 0), "NVRx score {} rank {}",
                   s.score, s.rank);
      }
    }
  }
  CheckDiagnostics(run);
}

void CheckDiagnostics(const Run& run) {
  for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
    auto code = static_cast<DiagCode>(c);
    uint64_t n = run.diagnostics.count(code);
    size_t examples = run.diagnostics.examples(code).size();
    FUZZ_CHECK(
        examples <= n && examples <= Diagnostics::kMaxExamplesPerCode && (n == 0 || examples > 0),
        "{}: count {} with {} examples", Describe(code).name, n, examples);
  }
}

TraceOutcome ReadTraceFile(const TraceReader& reader, const std::string& path,
                           std::optional<int32_t> rank_from_path, std::string_view step_marker) {
  TraceOutcome outcome;
  RunBuilder builder;
  ReaderContext ctx;
  ctx.file_index = 0;
  ctx.path = path;
  ctx.rank_from_path = rank_from_path;
  ctx.step_marker = step_marker;
  ctx.out = &builder;
  outcome.taken = reader.Read(path, ctx);
  InputFileInfo info;
  info.path = path;
  info.format = std::string(reader.name());
  info.records = outcome.taken;
  info.used = outcome.taken > 0;
  outcome.run.files.push_back(std::move(info));
  builder.Finalize(outcome.run);
  return outcome;
}

namespace {

bool EndFits(TimeNs start, DurationNs dur) {
  TimeNs end;
  return !__builtin_add_overflow(start, dur, &end);
}

}  // namespace

void CheckTraceInvariants(const TraceOutcome& o) {
  const Run& run = o.run;
  CheckDiagnostics(run);
  FUZZ_CHECK(run.traces.size() <= 1, "{} traces from one file", run.traces.size());
  uint64_t taken = 0;
  const size_t names = run.names.size();
  for (const RankTrace& t : run.traces) {
    taken += t.ops.size() + t.steps.size();
    FUZZ_CHECK(t.file == 0, "trace names file {}", t.file);
    FUZZ_CHECK(!t.rank || (*t.rank >= 0 && *t.rank <= kMaxRank), "rank {}", *t.rank);
    FUZZ_CHECK(!t.world_size || (*t.world_size >= 1 && *t.world_size <= kMaxRank + 1),
               "world size {}", *t.world_size);
    for (size_t i = 0; i < t.ops.size(); ++i) {
      const TraceOp& op = t.ops[i];
      FUZZ_CHECK(op.dur_ns >= 0, "op {} has dur {} ns", i, op.dur_ns);
      FUZZ_CHECK(EndFits(op.start_ns, op.dur_ns), "op {} ends past int64: start {} + dur {}", i,
                 op.start_ns, op.dur_ns);
      FUZZ_CHECK(op.name < names, "op {} names id {} of {}", i, op.name, names);
      FUZZ_CHECK(op.cls < OpClass::kCount, "op {} has class {}", i, static_cast<int>(op.cls));
      // Streams are not checked: a CPU op's is its thread id, any int32.
      FUZZ_CHECK(op.device >= -1, "op {} on device {}", i, op.device);
      if (i > 0) {
        FUZZ_CHECK(t.ops[i - 1].start_ns <= op.start_ns, "ops not sorted: {} then {} at op {}",
                   t.ops[i - 1].start_ns, op.start_ns, i);
      }
    }
    for (size_t i = 0; i < t.collectives.size(); ++i) {
      const CollectiveCall& c = t.collectives[i];
      FUZZ_CHECK(c.dur_ns >= 0, "collective {} has dur {} ns", i, c.dur_ns);
      FUZZ_CHECK(EndFits(c.start_ns, c.dur_ns), "collective {} ends past int64: {} + {}", i,
                 c.start_ns, c.dur_ns);
      FUZZ_CHECK(c.kernel < names && c.collective < names && (!c.group || *c.group < names),
                 "collective {} names ids {} / {} / {} of {}", i, c.kernel, c.collective,
                 c.group.value_or(0), names);
      if (i > 0) {
        FUZZ_CHECK(t.collectives[i - 1].start_ns <= c.start_ns,
                   "collectives not sorted: {} then {} at {}", t.collectives[i - 1].start_ns,
                   c.start_ns, i);
      }
    }
    for (size_t i = 0; i < t.steps.size(); ++i) {
      const TraceStep& s = t.steps[i];
      FUZZ_CHECK(s.end_ns >= s.start_ns, "step {} ends at {} before its start {}", s.step, s.end_ns,
                 s.start_ns);
      if (i > 0) {
        FUZZ_CHECK(t.steps[i - 1].step < s.step, "steps not ascending/unique: {} then {}",
                   t.steps[i - 1].step, s.step);
      }
    }
  }
  FUZZ_CHECK(o.taken == taken, "reader says it took {}, the trace holds {} ops + steps", o.taken,
             taken);
  FUZZ_CHECK(
      !run.traces.empty() ||
          Count(run, DiagCode::kTraceUnsupported) + Count(run, DiagCode::kFileUnreadable) > 0,
      "no trace and no trace.unsupported / file.unreadable to say why");
}

std::vector<OpKey> SortedOpKeys(const Run& run) {
  std::vector<OpKey> keys;
  for (const RankTrace& t : run.traces) {
    for (const TraceOp& op : t.ops) {
      keys.emplace_back(op.dur_ns, std::string(run.names.Get(op.name)), static_cast<int>(op.cls),
                        op.device, op.stream);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

bool IsSubMultiset(const std::vector<OpKey>& sub, const std::vector<OpKey>& all) {
  return std::includes(all.begin(), all.end(), sub.begin(), sub.end());
}

void CheckExampleLines(const Run& run, uint64_t line_count) {
  for (DiagCode code :
       {DiagCode::kStepGarbled, DiagCode::kStepNonPositiveDuration, DiagCode::kStepBadRankOrStep,
        DiagCode::kStepDuplicate, DiagCode::kCsvBadRow, DiagCode::kJsonlBadLine}) {
    for (const DiagExample& e : run.diagnostics.examples(code)) {
      FUZZ_CHECK(e.line >= 1 && e.line <= line_count, "{} example at line {} of {}: {}",
                 Describe(code).name, e.line, line_count, e.message);
    }
  }
}

std::vector<std::unique_ptr<LineMatcher>> StandardMatchers() {
  std::vector<std::unique_ptr<LineMatcher>> matchers;
  auto regex = MakeRegexLineMatcher(kFixedStepPattern);
  if (!regex.ok()) {
    std::fprintf(stderr, "fixed pattern rejected: %s\n", regex.status().message().c_str());
    std::abort();
  }
  matchers.push_back(std::move(regex.value()));
  matchers.push_back(MakeArticleLineMatcher());
  matchers.push_back(MakeMegatronLineMatcher());
  return matchers;
}

ReaderSet StandardReaders() {
  ReaderSet set;
  set.owned.push_back(MakeJsonlStepReader());
  set.owned.push_back(MakeCsvStepReader());
  set.owned.push_back(MakeTextLogReader(StandardMatchers()));
  for (const auto& r : set.owned) set.readers.push_back(r.get());
  return set;
}

}  // namespace laggard::fuzz
