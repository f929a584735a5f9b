// Fuzzes the whole of Ingest() (ingest.h) with every reader the CLI
// registers (JSONL, CSV, text log with the fixed user regex, article and
// Megatron matchers) on one file holding the input: as it is, gzipped,
// gzipped and truncated, gzipped with trailing garbage, and gzipped with one
// byte flipped. The file is named rank3.log or steps.log (chosen from the
// input's hash), so records with and without a rank from the path occur.
//
// Invariants, besides those of every Run (fuzz_support.h):
//   - gzip is transparent: the gzipped file gives the same records and the
//     same diagnostics as the plain one;
//   - a truncated gzip file keeps only records of the intact file (a cut
//     must never turn into a different value) and reports the damage;
//   - gzip followed by garbage keeps every record and counts gzip.corrupt.

#include <set>
#include <tuple>

#include "fuzz_support.h"
#include "ingest/ingest.h"

namespace laggard::fuzz {
namespace {

Run IngestOne(const std::string& dir, const std::string& name, std::string_view content) {
  static const ReaderSet* readers = new ReaderSet(StandardReaders());
  std::string path = ScratchDir() + "/ingest/" + dir + "/" + name;
  WriteFileOrDie(path, content);
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest({path}, readers->readers, options);
  FUZZ_CHECK(run.ok(), "Ingest failed as a whole: {}", run.status().message());
  FUZZ_CHECK(run->files.size() == 1, "{} files listed for one", run->files.size());
  CheckRunInvariants(*run);
  return std::move(run.value());
}

using RecordKey = std::tuple<int32_t, int64_t, DurationNs, std::optional<TimeNs>, uint32_t>;

std::set<RecordKey> Records(const Run& run) {
  std::set<RecordKey> keys;
  for (const auto* list : {&run.ranks, &run.unattributed}) {
    for (const StepSeries& s : *list) {
      for (const StepRecord& r : s.steps) {
        keys.insert({s.info.rank, r.step, r.duration_ns, r.start_ns, r.src.line});
      }
    }
  }
  return keys;
}

std::string DescribeRecord(const RecordKey& k) {
  return fmt::format("rank {} step {} duration {} ns at line {}", std::get<0>(k), std::get<1>(k),
                     std::get<2>(k), std::get<4>(k));
}

void CheckSameRecords(const Run& want, const Run& got, const char* what) {
  std::set<RecordKey> a = Records(want), b = Records(got);
  for (const RecordKey& k : a) {
    FUZZ_CHECK(b.count(k), "{}: lost {}", what, DescribeRecord(k));
  }
  for (const RecordKey& k : b) {
    FUZZ_CHECK(a.count(k), "{}: invented {}", what, DescribeRecord(k));
  }
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(ingest) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t h = Hash(input);
  std::string name = (h & 1) ? "rank3.log" : "steps.log";

  Run plain = IngestOne("plain", name, input);
  bool gzip_magic = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!gzip_magic && size < LineReader::kMaxLine) {
    CheckExampleLines(plain, ReferenceLines(input).size());
  }
  if (gzip_magic) return 0;  // the input is itself (damaged) gzip: done

  size_t split = (h >> 5) % (size + 1);
  std::string gz = Gzip(input, split);
  // A cut right after the first of two members leaves a complete gzip file.
  size_t first_member = split < size ? Gzip(input.substr(0, split)).size() : gz.size();
  {
    Run zipped = IngestOne("gz", name, gz);
    CheckSameRecords(plain, zipped, "gzip");
    FUZZ_CHECK(zipped.files[0].format == plain.files[0].format &&
                   zipped.files[0].records == plain.files[0].records &&
                   zipped.files[0].bytes == plain.files[0].bytes,
               "gzip read as {} ({} records, {} bytes), plain as {} ({} records, {} bytes)",
               zipped.files[0].format, zipped.files[0].records, zipped.files[0].bytes,
               plain.files[0].format, plain.files[0].records, plain.files[0].bytes);
    for (size_t c = 0; c < static_cast<size_t>(DiagCode::kCount); ++c) {
      auto code = static_cast<DiagCode>(c);
      FUZZ_CHECK(Count(zipped, code) == Count(plain, code), "{}: {} with gzip, {} without",
                 Describe(code).name, Count(zipped, code), Count(plain, code));
    }
  }
  {
    size_t cut = 2 + (h >> 13) % (gz.size() - 2);
    Run truncated = IngestOne("cut", name, std::string_view(gz).substr(0, cut));
    // A cut right between two members cannot be told from a whole file.
    if (cut != first_member && !truncated.files[0].format.empty() &&
        truncated.files[0].format == plain.files[0].format) {
      std::set<RecordKey> all = Records(plain);
      for (const RecordKey& k : Records(truncated)) {
        FUZZ_CHECK(all.count(k), "gzip cut at byte {} of {} invented {}", cut, gz.size(),
                   DescribeRecord(k));
      }
    }
    uint64_t damage =
        Count(truncated, DiagCode::kGzipTruncated) + Count(truncated, DiagCode::kGzipCorrupt);
    FUZZ_CHECK(truncated.files[0].format.empty() || damage == 1 || cut == first_member,
               "gzip cut at byte {} of {} read with {} damage counts", cut, gz.size(), damage);
  }
  {
    Run tail = IngestOne("tail", name, gz + "trailing garbage\n");
    if (plain.files[0].records > 0) {
      CheckSameRecords(plain, tail, "gzip + trailing garbage");
      FUZZ_CHECK(Count(tail, DiagCode::kGzipCorrupt) == 1, "gzip + garbage counted {} gzip.corrupt",
                 Count(tail, DiagCode::kGzipCorrupt));
    }
  }
  {
    std::string flipped = gz;
    size_t at = 2 + (h >> 21) % (gz.size() - 2);
    flipped[at] = static_cast<char>(flipped[at] ^ static_cast<char>(1u << ((h >> 50) % 8)));
    IngestOne("flip", name, flipped);
  }
  return 0;
}
