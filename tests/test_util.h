// Helpers shared by the tests: temporary directories, file writing, and
// running the standard ingest on files.

#ifndef LAGGARD_TESTS_TEST_UTIL_H_
#define LAGGARD_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ingest/ingest.h"
#include "ingest/readers.h"
#include "test_paths.h"

namespace laggard::testing_util {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "laggard-test-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A file of the project's real test inputs: tests/data/<folder>/<name>.
inline std::string TestData(std::string_view folder, std::string_view name = "") {
  std::string path = std::string(LAGGARD_SOURCE_DIR) + "/tests/data/" + std::string(folder);
  return name.empty() ? path : path + "/" + std::string(name);
}

inline std::string WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

inline std::string WriteGzip(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, content.data(), static_cast<unsigned>(content.size()));
  gzclose(f);
  return path;
}

// The decompressed content of a gzip file (a failed test when it cannot be
// opened).
inline std::string ReadGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  std::string out;
  if (f == nullptr) return out;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Ingests `paths` with the standard readers (and `step_pattern`, if any).
inline laggard::Run IngestPaths(const std::vector<std::string>& paths,
                                std::optional<std::string> step_pattern = std::nullopt,
                                std::optional<std::string> rank_from = std::nullopt) {
  auto readers = MakeDefaultTextReaders(step_pattern);
  EXPECT_TRUE(readers.ok()) << readers.status().message();
  IngestOptions options;
  options.rank_from = rank_from;
  options.threads = 2;
  auto run = Ingest(paths, readers->readers, options);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? std::move(run.value()) : laggard::Run();
}

// As IngestPaths, with every trace reader too (Kineto, nsys, Megatron
// timelines, Flight Recorder dumps).
inline laggard::Run IngestAll(const std::vector<std::string>& paths) {
  auto readers = MakeDefaultTextReaders(std::nullopt);
  EXPECT_TRUE(readers.ok()) << readers.status().message();
  laggard::TraceReaderSet traces = laggard::MakeDefaultTraceReaders();
  IngestOptions options;
  options.threads = 2;
  auto run = Ingest(paths, readers->readers, options, traces.readers);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? std::move(run.value()) : laggard::Run();
}

}  // namespace laggard::testing_util

#endif  // LAGGARD_TESTS_TEST_UTIL_H_
