#include "ingest/traces/nsys/export_facts.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"

namespace laggard::nsys_sqlite {
namespace {

class EnvCollector {
 public:
  void Add(std::string_view name, std::string_view value) {
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    for (std::string_view key : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) {
      if (name == key && !values_.count(std::string(key))) {
        if (auto v = ParseInt<int32_t>(value)) values_[std::string(key)] = *v;
      }
    }
  }

  // "K=V;K=V;..." (TARGET_INFO_SYSTEM_ENV.DeviceEnvironment). A value may
  // hold ';' itself (LS_COLORS): its pieces have no valid name and are
  // skipped.
  void AddList(std::string_view list) {
    for (std::string_view item : Split(list, ';')) {
      size_t eq = item.find('=');
      if (eq == std::string_view::npos || eq == 0) continue;
      Add(item.substr(0, eq), item.substr(eq + 1));
    }
  }

  EnvRank Result() const {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kPairs{{
        {"RANK", "WORLD_SIZE"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS"},
    }};
    EnvRank r;
    for (const auto& [rank_key, size_key] : kPairs) {
      auto rank = values_.find(std::string(rank_key));
      if (rank == values_.end() || rank->second < 0 || rank->second > kMaxRank) continue;
      r.rank = rank->second;
      auto size = values_.find(std::string(size_key));
      if (size != values_.end() && size->second > rank->second) r.world_size = size->second;
      break;
    }
    return r;
  }

 private:
  std::map<std::string, int32_t> values_;
};

// The first `n` bytes of `path` (fewer when it is shorter or unreadable).
std::string FileHead(const std::string& path, size_t n) {
  std::string head(n, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(head.data(), static_cast<std::streamsize>(n));
  head.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return head;
}

// " (file cut: N of M bytes)" when the file is shorter than its header's
// page size x page count; "" otherwise.
std::string CutNote(const std::string& path) {
  std::string h = FileHead(path, 32);
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (h.size() < 32 || ec) return "";
  auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(h[i])); };
  uint64_t page_size = (byte(16) << 8) | byte(17);
  if (page_size == 1) page_size = 65536;
  uint64_t pages = (byte(28) << 24) | (byte(29) << 16) | (byte(30) << 8) | byte(31);
  uint64_t expected = page_size * pages;
  if (expected <= size) return "";
  return fmt::format(" (file cut: {} of {} bytes)", size, expected);
}

bool IsNsysExport(const std::vector<std::string>& tables) {
  if (Has(tables, "EXPORT_META_DATA") || Has(tables, "META_DATA_EXPORT")) return true;
  if (!Has(tables, "StringIds")) return false;
  return std::any_of(tables.begin(), tables.end(), [](const std::string& t) {
    return StartsWith(t, "CUPTI_ACTIVITY_KIND_") || t == kNvtxTable ||
           StartsWith(t, "TARGET_INFO_");
  });
}

// Runs `sql`, whose rows are (name, value), and calls fn(name, value) for
// each row where both are text.
template <typename Fn>
QueryResult ForEachNameValue(sqlite3* h, const std::string& sql, Fn&& fn) {
  return ForEachRow(h, sql, [&](sqlite3_stmt* s) {
    auto name = TextAt(s, 0);
    auto value = TextAt(s, 1);
    if (name && value) fn(*name, *value);
  });
}

// The rank and world size from the launched process's environment (or the
// device's), and the host name, into `facts`.
void ReadEnvironment(
    sqlite3* h, ExportFacts& facts,
    const std::function<void(std::string_view, const QueryResult&)>& note_failure) {
  NsysExportInfo& info = facts.info;
  EnvCollector env;
  std::optional<std::string> display_name;
  if (Has(info.tables, "META_DATA_CAPTURE")) {
    // PROCESS_0:ENVIRONMENT_VARIABLE | RANK="3": the launched process's own
    // environment, more specific than the device's below.
    note_failure("META_DATA_CAPTURE",
                 ForEachNameValue(h,
                                  "SELECT name, value FROM META_DATA_CAPTURE WHERE name LIKE "
                                  "'PROCESS_%:ENVIRONMENT_VARIABLE' OR name = "
                                  "'DEVICE_DISPLAY_NAME'",
                                  [&](std::string_view name, std::string_view value) {
                                    if (name == "DEVICE_DISPLAY_NAME") {
                                      if (!Trim(value).empty())
                                        display_name = std::string(Trim(value));
                                      return;
                                    }
                                    size_t eq = value.find('=');
                                    if (eq != std::string_view::npos && eq > 0) {
                                      env.Add(value.substr(0, eq), value.substr(eq + 1));
                                    }
                                  }));
  }
  if (Has(info.tables, "TARGET_INFO_SYSTEM_ENV")) {
    std::vector<std::string> cols = ColumnsOf(h, "TARGET_INFO_SYSTEM_ENV");
    if (Has(cols, "name") && Has(cols, "value")) {
      note_failure("TARGET_INFO_SYSTEM_ENV",
                   ForEachNameValue(h,
                                    "SELECT name, value FROM TARGET_INFO_SYSTEM_ENV WHERE name "
                                    "IN ('Hostname', 'DeviceEnvironment')",
                                    [&](std::string_view name, std::string_view value) {
                                      if (name != "Hostname") {
                                        env.AddList(value);
                                      } else if (!info.host && !Trim(value).empty()) {
                                        info.host = std::string(Trim(value));
                                      }
                                    }));
    }
  }
  if (!info.host) info.host = display_name;
  facts.env = env.Result();
}

}  // namespace

StatusOr<ExportFacts> ReadExportFacts(const std::string& path, Db& db_out) {
  // SQLite cannot read gzip; say so rather than "not a database".
  if (FileHead(path, 2) == "\x1f\x8b") {
    return Status::Error("gzip-compressed SQLite cannot be read in place; decompress it first");
  }
  auto db = OpenReadOnly(path);
  if (!db.ok()) return db.status();
  sqlite3* h = db->get();

  ExportFacts facts;
  std::error_code ec;
  facts.file_bytes = std::filesystem::file_size(path, ec);
  if (ec) facts.file_bytes = 0;
  NsysExportInfo& info = facts.info;
  QueryResult schema = ForEachRow(
      h, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", [&](sqlite3_stmt* s) {
        if (auto name = TextAt(s, 0)) info.tables.emplace_back(*name);
      });
  if (schema.error) {
    return Status::Error(fmt::format("unreadable SQLite: {}{}", *schema.error, CutNote(path)));
  }
  if (!IsNsysExport(info.tables)) {
    return Status::Error(
        "SQLite database is not an Nsight Systems export (no export metadata table, no "
        "StringIds with CUPTI_*, NVTX_EVENTS or TARGET_INFO_* tables)");
  }
  auto note_failure = [&](std::string_view table, const QueryResult& r) {
    if (r.error) facts.failures.push_back(fmt::format("{}: {}", table, *r.error));
  };

  for (std::string_view table : {"EXPORT_META_DATA", "META_DATA_EXPORT"}) {
    if (!Has(info.tables, table)) continue;
    note_failure(table, ForEachNameValue(h, fmt::format("SELECT name, value FROM {}", Quote(table)),
                                         [&](std::string_view name, std::string_view value) {
                                           if (name == "EXPORT_PRODUCT_VERSION") {
                                             info.product_version = std::string(value);
                                           } else if (name == "EXPORT_SCHEMA_VERSION") {
                                             info.schema_version = std::string(value);
                                           } else if (name == "EXPORT_PARAM_TIME_NORMALIZE") {
                                             info.times_normalized =
                                                 EqualsIgnoreCase(Trim(value), "true");
                                           }
                                         }));
  }

  if (Has(info.tables, "TARGET_INFO_SESSION_START_TIME") &&
      Has(ColumnsOf(h, "TARGET_INFO_SESSION_START_TIME"), "utcEpochNs")) {
    note_failure("TARGET_INFO_SESSION_START_TIME",
                 ForEachRow(h, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
                            [&](sqlite3_stmt* s) {
                              if (auto v = IntAt(s, 0); v && *v > 0) info.session_start_ns = *v;
                            }));
  }

  ReadEnvironment(h, facts, note_failure);

  if (Has(info.tables, "TARGET_INFO_GPU")) {
    std::vector<std::string> cols = ColumnsOf(h, "TARGET_INFO_GPU");
    std::string sql = fmt::format("SELECT {}, {}, {}, {}, {} FROM TARGET_INFO_GPU ORDER BY 1",
                                  ColumnOrNull(cols, "id"), ColumnOrNull(cols, "cuDevice"),
                                  ColumnOrNull(cols, "name"), ColumnOrNull(cols, "busLocation"),
                                  ColumnOrNull(cols, "uuid"));
    note_failure("TARGET_INFO_GPU", ForEachRow(h, sql, [&](sqlite3_stmt* s) {
                   NsysGpu gpu;
                   gpu.id = IntAt(s, 0).value_or(static_cast<int64_t>(info.gpus.size()));
                   if (auto cu = IntAt(s, 1); cu && *cu >= 0 && *cu <= INT32_MAX) {
                     gpu.cuda_device = static_cast<int32_t>(*cu);
                   }
                   gpu.name = std::string(TextAt(s, 2).value_or(""));
                   gpu.bus_location = std::string(TextAt(s, 3).value_or(""));
                   gpu.uuid = std::string(TextAt(s, 4).value_or(""));
                   info.gpus.push_back(std::move(gpu));
                 }));
  }
  db_out = std::move(db.value());
  return facts;
}

}  // namespace laggard::nsys_sqlite
