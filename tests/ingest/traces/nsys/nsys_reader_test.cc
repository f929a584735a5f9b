// The Nsight Systems SQLite reader: the two real exports of the shared
// corpus (nsys 2023.1 with kernels, 2025.3 without a kernel table), small
// exports built here in two schema variants, and damaged files.
//
// Corpus facts were checked independently with the sqlite3 CLI, e.g.
//   SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL;            -- 61
//   SELECT copyKind, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY
//     GROUP BY 1;                                               -- 1|127, 2|61
//   SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET;            -- 127
//   SELECT sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL;  -- 1341742681
//   SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME;      -- 1705545250348969766

#include "ingest/traces/nsys/nsys_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ingest/ingest.h"
#include "test_paths.h"
#include "test_util.h"

namespace laggard {
namespace {

using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzip;

std::string CorpusFile(const std::string& name) {
  return std::string(LAGGARD_CORPUS_DIR) + "/nsys_sqlite/" + name;
}

#define REQUIRE_CORPUS_FILE(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared corpus not found: " << path

// One file read by the reader alone, as ingest would call it.
struct ReadResult {
  Run run;
  uint64_t taken = 0;
};

ReadResult ReadNsys(const std::string& path, std::optional<int32_t> rank_from_path = std::nullopt,
                    std::string_view step_marker = "") {
  auto reader = MakeNsysTraceReader();
  RunBuilder builder;
  ReaderContext ctx;
  ctx.file_index = 0;
  ctx.path = path;
  ctx.rank_from_path = rank_from_path;
  ctx.step_marker = step_marker;
  ctx.out = &builder;
  ReadResult result;
  result.taken = reader->Read(path, ctx);
  result.run.files.push_back(InputFileInfo{path, "nsys-sqlite", 0, result.taken, result.taken > 0});
  builder.Finalize(result.run);
  return result;
}

Run IngestWithNsys(const std::vector<std::string>& paths) {
  auto reader = MakeNsysTraceReader();
  IngestOptions options;
  options.threads = 1;
  auto run = Ingest(paths, {}, options, {reader.get()});
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? std::move(run.value()) : Run();
}

uint64_t Count(const Run& run, DiagCode code) { return run.diagnostics.count(code); }

size_t CountClass(const RankTrace& t, OpClass cls) {
  size_t n = 0;
  for (const TraceOp& op : t.ops) n += op.cls == cls;
  return n;
}

size_t CountName(const Run& run, std::string_view name) {
  size_t n = 0;
  for (const TraceOp& op : run.traces.at(0).ops) n += run.names.Get(op.name) == name;
  return n;
}

// Builds an SQLite file with the C API, the way nsys writes one.
class SqliteFile {
 public:
  explicit SqliteFile(const std::string& path) {
    std::filesystem::remove(path);
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    Exec("PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;");
  }
  ~SqliteFile() { sqlite3_close(db_); }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err != nullptr ? err : "") << "\n" << sql;
    sqlite3_free(err);
  }

 private:
  sqlite3* db_ = nullptr;
};

constexpr TimeNs kSessionStart = 1'700'000'000'000'000'000;

// Current layout (nsys 2023+): demangledName / shortName ids, memcpy and
// memset tables, NVTX with text and textId, session start, system env.
void WriteModernExport(const std::string& path) {
  SqliteFile db(path);
  db.Exec(R"sql(
    CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
    CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
    CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL,
      name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
    CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
      busLocation TEXT, uuid TEXT, cuDevice INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
      correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
      shortName INTEGER NOT NULL, mangledName INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
      correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
      correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL);
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
      rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
      endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);

    INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.5.1.113'),
      ('EXPORT_SCHEMA_VERSION', '3.15.1'), ('EXPORT_PARAM_TIME_NORMALIZE', 'false');
    INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '');
    INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES
      (1, 'Local (CLI)', 'Hostname', 619, 'node-a'),
      (1, 'Local (CLI)', 'DeviceEnvironment', 610,
       'LS_COLORS=rs=0:di=01;34:ln=01;36;HOME=/root;RANK=3;WORLD_SIZE=8;LOCAL_RANK=3');
    INSERT INTO TARGET_INFO_GPU VALUES (1, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 'u', 0);
    INSERT INTO StringIds VALUES
      (10, 'ampere_sgemm_128x64_tn'), (11, 'ampere_sgemm_128x64_tn'),
      (12, 'void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>(Flash_fwd_params)'),
      (13, 'flash_fwd_kernel'),
      (14, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
      (15, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'),
      (16, 'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)'),
      (17, 'vectorized_elementwise_kernel'),
      (18, 'void tile::entry<7>(Params)'), (19, 'sm90_xmma_gemm_f16f16_f32'),
      (30, 'ProfilerStep#7');
    -- start, end, deviceId, contextId, streamId, correlationId, globalPid, demangled, short, mangled
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
      (1000, 3000, 0, 1, 7, 1, 5, 10, 11, NULL),
      (3500, 5000, 0, 1, 7, 2, 5, 12, 13, NULL),
      (5200, 9000, 0, 1, 13, 3, 5, 14, 15, NULL),
      (9100, 9200, 0, 1, 7, 4, 5, 16, 17, NULL),
      (9300, 9400, 0, 1, 7, 5, 5, 18, 19, NULL),
      (9500, 9400, 0, 1, 7, 6, 5, 16, 17, NULL);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES
      (500, 900, 0, 1, 7, 7, 5, 4096, 1), (9600, 9700, 0, 1, 7, 8, 5, 4096, 2);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (400, 450, 0, 1, 7, 9, 5, 0, 1024);
    -- start, end, eventType, rangeId, category, color, text, globalTid, endGlobalTid, textId, domainId
    INSERT INTO NVTX_EVENTS VALUES
      (0, 5000, 59, NULL, NULL, NULL, NULL, 100, NULL, 30, 0),
      (5000, 10000, 59, NULL, NULL, NULL, 'step 8', 100, NULL, NULL, 0),
      (100, 200, 59, NULL, NULL, NULL, 'forward', 100, NULL, NULL, 0),
      (9000, NULL, 34, NULL, NULL, NULL, 'step 9', 100, NULL, NULL, 0),
      (10, 4000, 59, NULL, NULL, NULL, 'ProfilerStep#7', 101, NULL, NULL, 0);
  )sql");
}

// An older / leaner layout: the kernel name in a `name` id column (no
// shortName / demangledName), no memcpy or memset table, NVTX with textId
// only, EXPORT_META_DATA (the pre-2024 name), no session start, no env.
void WriteLeanExport(const std::string& path) {
  SqliteFile db(path);
  db.Exec(R"sql(
    CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
      deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
      correlationId INTEGER, name INTEGER NOT NULL);
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
      textId INTEGER);
    INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PRODUCT_VERSION', '2021.3.1.54');
    INSERT INTO StringIds VALUES
      (1, 'ncclKernel_AllGather_RING_LL_Sum_int8_t'),
      (2, 'sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize96x64x64'),
      (3, 'fmha_cutlassF_f16_aligned_64x64_rf_sm80'),
      (4, 'iteration 1'), (5, 'Iteration_2');
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
      (2000, 2600, 1, 1, 20, 1, 1), (100, 400, 1, 1, 7, 2, 2), (500, 900, 1, 1, 7, 3, 3);
    INSERT INTO NVTX_EVENTS VALUES (50, 1000, 59, 4), (1000, 2700, 60, 5), (3000, NULL, 34, 4);
  )sql");
}

TEST(NsysReaderTest, SniffsTheSqliteHeaderOnly) {
  auto reader = MakeNsysTraceReader();
  EXPECT_EQ(reader->Sniff(std::string("SQLite format 3\0\x10\x00", 18)), 50);
  EXPECT_EQ(reader->Sniff("SQLite format 3"), 0);  // no NUL: text, not a database
  EXPECT_EQ(reader->Sniff("{\"traceEvents\": []}"), 0);
  EXPECT_EQ(reader->Sniff(""), 0);
}

TEST(NsysReaderTest, ModernExportGivesClassifiedOpsCollectivesAndSteps) {
  TempDir dir;
  std::string path = dir.File("report.sqlite");
  WriteModernExport(path);
  ReadResult r = ReadNsys(path);
  ASSERT_EQ(r.run.traces.size(), 1u);
  const RankTrace& t = r.run.traces[0];
  const NameTable& names = r.run.names;

  EXPECT_EQ(t.producer, "nsys");
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.host, "node-a");
  EXPECT_EQ(t.device, 0);
  EXPECT_FALSE(t.truncated);

  struct Want {
    TimeNs start;
    DurationNs dur;
    std::string name;
    OpClass cls;
    int32_t stream;
  };
  const std::vector<Want> want = {
      {400, 50, "Memset", OpClass::kMemset, 7},
      {500, 400, "Memcpy HtoD", OpClass::kMemcpy, 7},
      {1000, 2000, "ampere_sgemm_128x64_tn", OpClass::kGemm, 7},
      {3500, 1500,
       "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>(Flash_fwd_params)",
       OpClass::kAttention, 7},
      {5200, 3800, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       OpClass::kCommunication, 13},
      {9100, 100,
       "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, "
       "at::native::FillFunctor<float>)",
       OpClass::kOtherCompute, 7},
      {9300, 100, "void tile::entry<7>(Params)", OpClass::kGemm, 7},  // by its short name
      {9600, 100, "Memcpy DtoH", OpClass::kMemcpy, 7},
  };
  ASSERT_EQ(t.ops.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(t.ops[i].start_ns, kSessionStart + want[i].start);
    EXPECT_EQ(t.ops[i].dur_ns, want[i].dur);
    EXPECT_EQ(names.Get(t.ops[i].name), want[i].name);
    EXPECT_EQ(t.ops[i].cls, want[i].cls);
    EXPECT_EQ(t.ops[i].stream, want[i].stream);
    EXPECT_EQ(t.ops[i].device, 0);
  }

  ASSERT_EQ(t.collectives.size(), 1u);
  const CollectiveCall& c = t.collectives[0];
  EXPECT_EQ(c.start_ns, kSessionStart + 5200);
  EXPECT_EQ(c.dur_ns, 3800);
  EXPECT_EQ(names.Get(c.collective), "allreduce");
  EXPECT_EQ(names.Get(c.kernel),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_FALSE(c.seq.has_value());
  EXPECT_FALSE(c.group.has_value());
  EXPECT_EQ(c.offset, 3u);  // rowid of the kernel row

  // ProfilerStep#7 twice (two threads): the earlier range is kept; the
  // "step 9" mark has no end; "forward" is no step.
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].step, 7);
  EXPECT_EQ(t.steps[0].start_ns, kSessionStart + 0);
  EXPECT_EQ(t.steps[0].end_ns, kSessionStart + 5000);
  EXPECT_EQ(t.steps[1].step, 8);
  EXPECT_EQ(t.steps[1].start_ns, kSessionStart + 5000);
  EXPECT_EQ(t.steps[1].end_ns, kSessionStart + 10000);

  EXPECT_EQ(t.events_total, 6u + 2u + 1u + 4u);  // kernels, memcpy, memset, NVTX ranges
  EXPECT_EQ(r.taken, 8u + 2u);
  EXPECT_EQ(Count(r.run, DiagCode::kTraceBadEvent), 1u);  // end < start
  EXPECT_EQ(Count(r.run, DiagCode::kTraceNoRank), 0u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kSkippedFile), 0u);

  auto info = ReadNsysExportInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->product_version, "2024.5.1.113");
  EXPECT_EQ(info->schema_version, "3.15.1");
  EXPECT_EQ(info->session_start_ns, kSessionStart);
  ASSERT_EQ(info->gpus.size(), 1u);
  EXPECT_EQ(info->gpus[0].name, "NVIDIA H100 80GB HBM3");
}

TEST(NsysReaderTest, AStepMarkerNamesTheNvtxRangesThatAreSteps) {
  TempDir dir;
  std::string path = dir.File("report.sqlite");
  WriteModernExport(path);
  // "step" alone: 'step 8' (step 9's range never closed), not ProfilerStep#7.
  ReadResult step = ReadNsys(path, std::nullopt, "step");
  ASSERT_EQ(step.run.traces.size(), 1u);
  ASSERT_EQ(step.run.traces[0].steps.size(), 1u);
  EXPECT_EQ(step.run.traces[0].steps[0].step, 8);
  EXPECT_EQ(step.run.traces[0].steps[0].start_ns, kSessionStart + 5000);
  // A range without a number is step 0, 1, ... by start.
  ReadResult forward = ReadNsys(path, std::nullopt, "forward");
  ASSERT_EQ(forward.run.traces[0].steps.size(), 1u);
  EXPECT_EQ(forward.run.traces[0].steps[0].step, 0);
  EXPECT_EQ(forward.run.traces[0].steps[0].end_ns, kSessionStart + 200);
  EXPECT_EQ(Count(forward.run, DiagCode::kTraceNoStepMarker), 0u);
  // A marker no range has: the built-in steps, and a note.
  ReadResult none = ReadNsys(path, std::nullopt, "train_step");
  EXPECT_EQ(none.run.traces[0].steps.size(), 2u);
  EXPECT_EQ(Count(none.run, DiagCode::kTraceNoStepMarker), 1u);
  // No NVTX table at all (nsys writes only tables with rows): a note too.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "DROP TABLE NVTX_EVENTS;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ReadResult no_table = ReadNsys(path, std::nullopt, "train_step");
  EXPECT_TRUE(no_table.run.traces[0].steps.empty());
  EXPECT_EQ(Count(no_table.run, DiagCode::kTraceNoStepMarker), 1u);
}

TEST(NsysReaderTest, LeanExportWithoutNameColumnsOrSessionStart) {
  TempDir dir;
  std::string path = dir.File("report.sqlite");
  WriteLeanExport(path);
  ReadResult r = ReadNsys(path, /*rank_from_path=*/5);
  ASSERT_EQ(r.run.traces.size(), 1u);
  const RankTrace& t = r.run.traces[0];
  const NameTable& names = r.run.names;

  EXPECT_EQ(t.rank, 5);  // no environment: the path's rank
  EXPECT_FALSE(t.world_size.has_value());
  EXPECT_FALSE(t.host.has_value());
  EXPECT_EQ(t.device, 1);
  ASSERT_EQ(t.ops.size(), 3u);
  // No session start: times stay capture-relative.
  EXPECT_EQ(t.ops[0].start_ns, 100);
  EXPECT_EQ(names.Get(t.ops[0].name), "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize96x64x64");
  EXPECT_EQ(t.ops[0].cls, OpClass::kGemm);
  EXPECT_EQ(t.ops[1].start_ns, 500);
  EXPECT_EQ(t.ops[1].cls, OpClass::kAttention);
  EXPECT_EQ(t.ops[2].start_ns, 2000);
  EXPECT_EQ(t.ops[2].cls, OpClass::kCommunication);
  EXPECT_EQ(t.ops[2].stream, 20);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(names.Get(t.collectives[0].collective), "allgather");
  EXPECT_EQ(names.Get(t.collectives[0].kernel), "ncclKernel_AllGather_RING_LL_Sum_int8_t");
  EXPECT_EQ(t.collectives[0].dur_ns, 600);

  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].step, 1);
  EXPECT_EQ(t.steps[0].start_ns, 50);
  EXPECT_EQ(t.steps[0].end_ns, 1000);
  EXPECT_EQ(t.steps[1].step, 2);
  EXPECT_EQ(t.steps[1].end_ns, 2700);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  auto info = ReadNsysExportInfo(path);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->product_version, "2021.3.1.54");
  EXPECT_FALSE(info->session_start_ns.has_value());
}

TEST(NsysReaderTest, WithoutRankAnywhereTheTraceHasNoRankAndANote) {
  TempDir dir;
  std::string path = dir.File("report.sqlite");
  WriteLeanExport(path);
  ReadResult r = ReadNsys(path);
  ASSERT_EQ(r.run.traces.size(), 1u);
  EXPECT_FALSE(r.run.traces[0].rank.has_value());
  EXPECT_EQ(Count(r.run, DiagCode::kTraceNoRank), 1u);
}

TEST(NsysReaderTest, ProcessEnvironmentOfNewerExportsNamesTheRank) {
  TempDir dir;
  std::string path = dir.File("report.sqlite");
  {
    SqliteFile db(path);
    db.Exec(R"sql(
      CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT);
      CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL,
        name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, demangledName INTEGER NOT NULL);
      INSERT INTO META_DATA_CAPTURE VALUES
        ('DEVICE_DISPLAY_NAME', 'gpu-node-17'),
        ('PROCESS_0:ENVIRONMENT_VARIABLE', 'OMPI_COMM_WORLD_SIZE="16"'),
        ('PROCESS_0:ENVIRONMENT_VARIABLE', 'OMPI_COMM_WORLD_RANK="12"');
      INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES
        (1, 'Local (CLI)', 'DeviceEnvironment', 610, 'SLURM_PROCID=1;SLURM_NTASKS=2');
      INSERT INTO StringIds VALUES (1, 'my_kernel');
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 2, 7, 1);
    )sql");
  }
  ReadResult r = ReadNsys(path, /*rank_from_path=*/0);
  ASSERT_EQ(r.run.traces.size(), 1u);
  EXPECT_EQ(r.run.traces[0].rank, 12);  // Open MPI before Slurm, and before the path
  EXPECT_EQ(r.run.traces[0].world_size, 16);
  EXPECT_EQ(r.run.traces[0].host, "gpu-node-17");
  EXPECT_EQ(r.run.traces[0].device, 2);
}

TEST(NsysReaderTest, CorpusCuckooHash2023HasKernelsMemcpyAndMemset) {
  std::string path = CorpusFile("cuckoo_hash_report1.sqlite");
  REQUIRE_CORPUS_FILE(path);
  constexpr TimeNs kStart = 1705545250348969766;  // TARGET_INFO_SESSION_START_TIME

  auto info = ReadNsysExportInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->product_version, "2023.1.2.43");
  EXPECT_EQ(info->schema_version, "3.1.2");
  EXPECT_EQ(info->host, "fff");
  EXPECT_EQ(info->session_start_ns, kStart);
  EXPECT_FALSE(info->times_normalized);
  ASSERT_EQ(info->gpus.size(), 1u);
  EXPECT_EQ(info->gpus[0].name, "NVIDIA GeForce GTX 1660 SUPER");
  EXPECT_EQ(info->gpus[0].bus_location, "0000:01:00.0");
  EXPECT_EQ(info->gpus[0].cuda_device, 0);

  ReadResult r = ReadNsys(path);
  ASSERT_EQ(r.run.traces.size(), 1u);
  const RankTrace& t = r.run.traces[0];
  EXPECT_EQ(t.producer, "nsys");
  EXPECT_EQ(t.host, "fff");
  EXPECT_EQ(t.device, 0);
  EXPECT_FALSE(t.rank.has_value());  // a single-process run: no RANK anywhere
  EXPECT_EQ(Count(r.run, DiagCode::kTraceNoRank), 1u);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);

  EXPECT_EQ(t.ops.size(), 61u + 188u + 127u);
  EXPECT_EQ(CountClass(t, OpClass::kOtherCompute), 61u);
  EXPECT_EQ(CountClass(t, OpClass::kMemcpy), 188u);
  EXPECT_EQ(CountClass(t, OpClass::kMemset), 127u);
  EXPECT_EQ(CountName(r.run, "Memcpy HtoD"), 127u);
  EXPECT_EQ(CountName(r.run, "Memcpy DtoH"), 61u);
  EXPECT_EQ(CountName(r.run,
                      "d_insert_arr(const int *, unsigned int, const unsigned int *, const "
                      "unsigned int *, unsigned int, unsigned int, unsigned int, int *, unsigned "
                      "int, bool *)"),
            61u);
  EXPECT_TRUE(t.collectives.empty());
  EXPECT_TRUE(t.steps.empty());  // no NVTX_EVENTS table
  EXPECT_EQ(t.events_total, 376u);
  EXPECT_EQ(r.taken, 376u);

  DurationNs kernel_ns = 0;
  for (const TraceOp& op : t.ops) {
    if (op.cls == OpClass::kOtherCompute) kernel_ns += op.dur_ns;
    EXPECT_EQ(op.stream, 7);
  }
  EXPECT_EQ(kernel_ns, 1341742681);
  // The first op is a memset at 420313688 ns into the capture.
  EXPECT_EQ(t.ops.front().start_ns, kStart + 420313688);
  EXPECT_TRUE(std::is_sorted(t.ops.begin(), t.ops.end(), [](const TraceOp& a, const TraceOp& b) {
    return a.start_ns < b.start_ns;
  }));

  ReadResult ranked = ReadNsys(path, /*rank_from_path=*/4);
  ASSERT_EQ(ranked.run.traces.size(), 1u);
  EXPECT_EQ(ranked.run.traces[0].rank, 4);
}

// A real export's only kernel, d_insert_arr, named as a communication
// kernel: every launch becomes a collective call.
TEST(NsysReaderTest, CorpusKernelNamedByCommKernelIsACollective) {
  std::string path = CorpusFile("cuckoo_hash_report1.sqlite");
  REQUIRE_CORPUS_FILE(path);
  auto reader = MakeNsysTraceReader();
  RunBuilder builder;
  ReaderContext ctx;
  ctx.path = path;
  ctx.out = &builder;
  const std::vector<std::string> comm = {"insert_arr"};
  ctx.comm_kernels = comm;
  reader->Read(path, ctx);
  laggard::Run run;
  builder.Finalize(run);
  ASSERT_EQ(run.traces.size(), 1u);
  EXPECT_EQ(CountClass(run.traces[0], OpClass::kCommunication), 61u);
  EXPECT_EQ(run.traces[0].collectives.size(), 61u);
  EXPECT_EQ(CountClass(ReadNsys(path).run.traces[0], OpClass::kCommunication), 0u);
}

TEST(NsysReaderTest, CorpusUvmTorch2025WithoutKernelTable) {
  std::string path = CorpusFile("uvmTorch_report1_nokernels.sqlite");
  REQUIRE_CORPUS_FILE(path);

  auto info = ReadNsysExportInfo(path);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->product_version, "2025.3.2.367");  // from META_DATA_EXPORT (renamed)
  EXPECT_EQ(info->schema_version, "3.20.3");
  EXPECT_EQ(info->host, "synerg");
  EXPECT_EQ(info->session_start_ns, 1768502473094187634);
  ASSERT_EQ(info->gpus.size(), 1u);
  EXPECT_EQ(info->gpus[0].name, "NVIDIA RTX A5000");
  EXPECT_EQ(std::count(info->tables.begin(), info->tables.end(), "CUPTI_ACTIVITY_KIND_KERNEL"), 0);

  ReadResult r = ReadNsys(path);
  ASSERT_EQ(r.run.traces.size(), 1u);
  const RankTrace& t = r.run.traces[0];
  EXPECT_TRUE(t.ops.empty());
  EXPECT_TRUE(t.collectives.empty());
  EXPECT_TRUE(t.steps.empty());
  EXPECT_EQ(t.host, "synerg");
  EXPECT_EQ(t.device, 0);  // the export's only GPU
  EXPECT_FALSE(t.rank.has_value());
  EXPECT_EQ(r.taken, 0u);
  EXPECT_EQ(Count(r.run, DiagCode::kTraceNoEvents), 1u);
  EXPECT_EQ(Count(r.run, DiagCode::kTraceNoRank), 1u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kBadRecord), 0u);
  EXPECT_EQ(r.run.diagnostics.TotalOfKind(DiagKind::kSkippedFile), 0u);
}

TEST(NsysReaderTest, IngestHandsSqliteToTheNsysReader) {
  std::string path = CorpusFile("cuckoo_hash_report1.sqlite");
  REQUIRE_CORPUS_FILE(path);
  laggard::Run run = IngestWithNsys({path});
  ASSERT_EQ(run.files.size(), 1u);
  EXPECT_EQ(run.files[0].format, "nsys-sqlite");
  EXPECT_TRUE(run.files[0].used);
  ASSERT_EQ(run.traces.size(), 1u);
  EXPECT_EQ(run.traces[0].ops.size(), 376u);
}

// nsys writes the schema last (cuckoo_hash_report1: pages 1..202 of 205), so
// a real export cut short loses its schema: nothing is readable.
TEST(NsysReaderTest, CorpusExportCutBeforeItsSchemaEndIsUnsupported) {
  std::string path = CorpusFile("cuckoo_hash_report1.sqlite");
  REQUIRE_CORPUS_FILE(path);
  std::string bytes = ReadFile(path);
  TempDir dir;
  for (size_t cut : {size_t{50}, size_t{4096}, bytes.size() / 2, size_t{200} * 4096}) {
    SCOPED_TRACE(cut);
    std::string copy = WriteFile(dir.File("cut.sqlite"), bytes.substr(0, cut));
    ReadResult r = ReadNsys(copy);
    EXPECT_TRUE(r.run.traces.empty());
    EXPECT_EQ(r.taken, 0u);
    ASSERT_EQ(Count(r.run, DiagCode::kTraceUnsupported), 1u);
    EXPECT_EQ(Count(r.run, DiagCode::kTraceTruncated), 0u);
    EXPECT_NE(r.run.diagnostics.examples(DiagCode::kTraceUnsupported)[0].message.find("file cut"),
              std::string::npos);
  }
}

// Cut inside its last page (EXPORT_META_DATA): every activity row is there.
TEST(NsysReaderTest, CorpusExportCutInItsLastTableKeepsEveryOp) {
  std::string path = CorpusFile("cuckoo_hash_report1.sqlite");
  REQUIRE_CORPUS_FILE(path);
  std::string bytes = ReadFile(path);
  TempDir dir;
  std::string copy = WriteFile(dir.File("cut.sqlite"), bytes.substr(0, bytes.size() - 4096));
  ReadResult r = ReadNsys(copy);
  EXPECT_EQ(Count(r.run, DiagCode::kTraceTruncated), 1u);
  ASSERT_EQ(r.run.traces.size(), 1u);
  EXPECT_TRUE(r.run.traces[0].truncated);
  EXPECT_EQ(r.run.traces[0].ops.size(), 376u);
}

// An export whose kernel table grows after the schema: a cut leaves the
// kernels before it.
TEST(NsysReaderTest, TruncatedKernelTableKeepsRowsBeforeTheCut) {
  TempDir dir;
  std::string path = dir.File("big.sqlite");
  constexpr int kKernels = 8000;
  {
    SqliteFile db(path);
    std::string sql = R"sql(
      CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, shortName INTEGER NOT NULL);
      INSERT INTO StringIds VALUES (1, 'ampere_sgemm_128x64_tn');
      BEGIN;
    )sql";
    for (int i = 0; i < kKernels; ++i) {
      sql += "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + std::to_string(i * 1000) + ", " +
             std::to_string(i * 1000 + 500) + ", 0, 7, 1);";
    }
    sql += "COMMIT;";
    db.Exec(sql);
  }
  std::string bytes = ReadFile(path);
  for (size_t cut : {bytes.size() / 4, bytes.size() / 2, bytes.size() * 9 / 10}) {
    SCOPED_TRACE(cut);
    std::string copy = WriteFile(dir.File("cut.sqlite"), bytes.substr(0, cut));
    ReadResult r = ReadNsys(copy, 0);
    EXPECT_EQ(Count(r.run, DiagCode::kTraceTruncated), 1u);
    EXPECT_EQ(Count(r.run, DiagCode::kTraceUnsupported), 0u);
    ASSERT_EQ(r.run.traces.size(), 1u);
    const RankTrace& t = r.run.traces[0];
    EXPECT_TRUE(t.truncated);
    EXPECT_GT(t.ops.size(), 0u);
    EXPECT_LT(t.ops.size(), static_cast<size_t>(kKernels));
    // The rows kept are the first ones, whole: the page the cut goes
    // through is not read as zeros.
    for (size_t i = 0; i < t.ops.size(); ++i) {
      ASSERT_EQ(t.ops[i].start_ns, static_cast<TimeNs>(i) * 1000);
      ASSERT_EQ(t.ops[i].dur_ns, 500);
    }
    EXPECT_EQ(Count(r.run, DiagCode::kTraceBadEvent), 0u);
  }
}

TEST(NsysReaderTest, RandomBytesNamedSqliteAreCountedNotRead) {
  TempDir dir;
  std::mt19937 rng(42);
  std::string junk(64 * 1024, '\0');
  for (char& c : junk) c = static_cast<char>(rng() & 0xff);
  std::string plain = WriteFile(dir.File("junk.sqlite"), junk);
  // With the SQLite magic in front: the reader is offered it and refuses it.
  std::string faked =
      WriteFile(dir.File("fake.sqlite"), std::string("SQLite format 3\0", 16) + junk);

  laggard::Run run = IngestWithNsys({plain, faked});
  ASSERT_EQ(run.files.size(), 2u);
  EXPECT_TRUE(run.traces.empty());
  EXPECT_EQ(Count(run, DiagCode::kFileBinary), 1u);        // junk.sqlite: not sniffed as SQLite
  EXPECT_EQ(Count(run, DiagCode::kTraceUnsupported), 1u);  // fake.sqlite: SQLite cannot read it
  EXPECT_FALSE(run.files[1].used);

  ReadResult direct = ReadNsys(plain);
  EXPECT_TRUE(direct.run.traces.empty());
  EXPECT_EQ(direct.taken, 0u);
  EXPECT_EQ(Count(direct.run, DiagCode::kTraceUnsupported), 1u);
}

TEST(NsysReaderTest, SqliteThatIsNotAnNsysExportIsUnsupported) {
  TempDir dir;
  std::string path = dir.File("app.sqlite");
  {
    SqliteFile db(path);
    db.Exec("CREATE TABLE users (id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'a');");
  }
  ReadResult r = ReadNsys(path);
  EXPECT_TRUE(r.run.traces.empty());
  EXPECT_EQ(r.taken, 0u);
  ASSERT_EQ(Count(r.run, DiagCode::kTraceUnsupported), 1u);
  EXPECT_NE(r.run.diagnostics.examples(DiagCode::kTraceUnsupported)[0].message.find(
                "not an Nsight Systems export"),
            std::string::npos);
  EXPECT_FALSE(ReadNsysExportInfo(path).ok());
}

TEST(NsysReaderTest, GzippedExportIsUnsupportedWithAHint) {
  TempDir dir;
  std::string path = dir.File("report.sqlite");
  WriteLeanExport(path);
  std::string gz = WriteGzip(dir.File("report.sqlite.gz"), ReadFile(path));
  ReadResult r = ReadNsys(gz);
  EXPECT_TRUE(r.run.traces.empty());
  ASSERT_EQ(Count(r.run, DiagCode::kTraceUnsupported), 1u);
  EXPECT_NE(r.run.diagnostics.examples(DiagCode::kTraceUnsupported)[0].message.find("gzip"),
            std::string::npos);
}

TEST(NsysReaderTest, PathsWithUriCharactersOpen) {
  TempDir dir;
  std::string path = dir.File("run #1 ?50%.sqlite");
  WriteLeanExport(path);
  ReadResult r = ReadNsys(path, 0);
  ASSERT_EQ(r.run.traces.size(), 1u);
  EXPECT_EQ(r.run.traces[0].ops.size(), 3u);
}

}  // namespace
}  // namespace laggard
