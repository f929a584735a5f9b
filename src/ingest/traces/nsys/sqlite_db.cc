#include "ingest/traces/nsys/sqlite_db.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/text.h"

namespace laggard::nsys_sqlite {
namespace {

// Largest value SQLite may hand back. nsys stores a few KB per value (the
// environment, a GPU metrics config); a larger one is damage, not data.
constexpr int kMaxValueBytes = 16 << 20;

// A read-only "file:" URI for `path`: bytes other than unreserved ones and
// '/' are percent-encoded so '?', '#' and '%' in file names survive.
// immutable=1: no locks, no journal lookups (exports are never written).
std::string ReadOnlyUri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 IsDigit(static_cast<char>(c)) || c == '/' || c == '-' || c == '_' || c == '.' ||
                 c == '~';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  uri += "?immutable=1";
  return uri;
}

// A VFS over the default one that shows a database file only up to its last
// whole page. SQLite zero-fills a short read, so the rows of a page that a
// cut goes through would read as zeros and NULLs; hidden, that page lies past
// the end, reading it is SQLITE_CORRUPT, and the scan stops there.
struct WholePagesFile {
  sqlite3_file base;   // first: SQLite sees this
  sqlite3_file* real;  // the default VFS's file, stored right after this struct
  bool main_db;
};

sqlite3_vfs* g_real_vfs = nullptr;

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<WholePagesFile*>(f)->real; }

int WpClose(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int WpRead(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int WpWrite(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int WpTruncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int WpSync(sqlite3_file* f, int flags) { return Real(f)->pMethods->xSync(Real(f), flags); }
int WpFileSize(sqlite3_file* f, sqlite3_int64* size) {
  int rc = Real(f)->pMethods->xFileSize(Real(f), size);
  if (rc != SQLITE_OK || !reinterpret_cast<WholePagesFile*>(f)->main_db) return rc;
  unsigned char h[2] = {0, 0};
  if (*size < 100 || Real(f)->pMethods->xRead(Real(f), h, 2, 16) != SQLITE_OK) return rc;
  int64_t page = (int64_t{h[0]} << 8) | h[1];
  if (page == 1) page = 65536;
  if (page >= 512 && (page & (page - 1)) == 0) *size -= *size % page;
  return rc;
}
int WpLock(sqlite3_file* f, int lock) { return Real(f)->pMethods->xLock(Real(f), lock); }
int WpUnlock(sqlite3_file* f, int lock) { return Real(f)->pMethods->xUnlock(Real(f), lock); }
int WpCheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int WpFileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int WpSectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int WpDeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}

// Version 1: no shared memory, no memory mapping (immutable files need
// neither).
constexpr sqlite3_io_methods kWholePagesMethods = {1,
                                                   WpClose,
                                                   WpRead,
                                                   WpWrite,
                                                   WpTruncate,
                                                   WpSync,
                                                   WpFileSize,
                                                   WpLock,
                                                   WpUnlock,
                                                   WpCheckReservedLock,
                                                   WpFileControl,
                                                   WpSectorSize,
                                                   WpDeviceCharacteristics,
                                                   nullptr,
                                                   nullptr,
                                                   nullptr,
                                                   nullptr,
                                                   nullptr,
                                                   nullptr};

int WpOpen(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  auto* w = reinterpret_cast<WholePagesFile*>(file);
  w->base.pMethods = nullptr;
  w->real = reinterpret_cast<sqlite3_file*>(w + 1);
  w->real->pMethods = nullptr;
  w->main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
  int rc = g_real_vfs->xOpen(g_real_vfs, name, w->real, flags, out_flags);
  if (rc == SQLITE_OK) {
    w->base.pMethods = &kWholePagesMethods;
  } else if (w->real->pMethods != nullptr) {
    w->real->pMethods->xClose(w->real);
  }
  return rc;
}

// Registers the VFS once (thread-safe static initialisation); nullptr when
// there is no default VFS to wrap.
const char* WholePagesVfsName() {
  static const char* name = []() -> const char* {
    g_real_vfs = sqlite3_vfs_find(nullptr);
    if (g_real_vfs == nullptr) return nullptr;
    static sqlite3_vfs vfs = *g_real_vfs;  // same pAppData: the other methods work as before
    vfs.zName = "laggard-whole-pages";
    vfs.szOsFile = static_cast<int>(sizeof(WholePagesFile)) + g_real_vfs->szOsFile;
    vfs.xOpen = WpOpen;
    vfs.pNext = nullptr;
    if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) return nullptr;
    return vfs.zName;
  }();
  return name;
}

}  // namespace

std::string Quote(std::string_view identifier) {
  std::string q = "\"";
  for (char c : identifier) {
    if (c == '"') q += '"';
    q += c;
  }
  q += '"';
  return q;
}

StatusOr<Db> OpenReadOnly(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(ReadOnlyUri(path).c_str(), &raw,
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                           WholePagesVfsName());
  Db db(raw);
  if (rc != SQLITE_OK) {
    return Status::Error(fmt::format("cannot open as SQLite: {}",
                                     raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  // The schema comes from the file: never let it run functions with side
  // effects, and bound what one value may cost.
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_limit(raw, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  // A file shorter than its header's page count is SQLITE_CORRUPT at the
  // first query; writable_schema makes SQLite use the (whole) pages that are
  // there, so a cut export yields its rows up to the cut. (The connection is
  // read-only: nothing can be written.)
  sqlite3_exec(raw, "PRAGMA writable_schema = ON", nullptr, nullptr, nullptr);
  return db;
}

std::optional<std::string_view> TextAt(sqlite3_stmt* s, int col) {
  if (sqlite3_column_type(s, col) != SQLITE_TEXT) return std::nullopt;
  const unsigned char* p = sqlite3_column_text(s, col);
  if (p == nullptr) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(p),
                          static_cast<size_t>(sqlite3_column_bytes(s, col)));
}

std::vector<std::string> ColumnsOf(sqlite3* db, std::string_view table) {
  std::vector<std::string> cols;
  ForEachRow(db, fmt::format("PRAGMA table_info({})", Quote(table)), [&](sqlite3_stmt* s) {
    if (auto name = TextAt(s, 1)) cols.emplace_back(*name);
  });
  return cols;
}

bool Has(const std::vector<std::string>& cols, std::string_view name) {
  return std::find(cols.begin(), cols.end(), name) != cols.end();
}

std::string ColumnOrNull(const std::vector<std::string>& cols, std::string_view name) {
  return Has(cols, name) ? Quote(name) : std::string("NULL");
}

std::string TColumnOrNull(const std::vector<std::string>& cols, std::string_view name) {
  return Has(cols, name) ? "t." + Quote(name) : std::string("NULL");
}

}  // namespace laggard::nsys_sqlite
