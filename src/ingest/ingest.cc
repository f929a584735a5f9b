#include "ingest/ingest.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <thread>

#include <fmt/format.h>

#include "base/text.h"
#include "formats/sim_truth.h"
#include "ingest/common/input_file.h"
#include "ingest/jobs.h"
#include "ingest/traces/common/clock_alignment.h"
#include "ingest/traces/common/step_marker.h"

namespace laggard {
namespace fs = std::filesystem;
namespace {

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
using Regex = std::unique_ptr<pcre2_code, CodeDeleter>;

StatusOr<Regex> CompileRegex(const std::string& pattern, uint32_t flags) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   flags, &err, &off, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Status::Error(fmt::format("pattern '{}' does not compile at offset {}: {}", pattern, off,
                                     reinterpret_cast<char*>(msg)));
  }
  return Regex(code);
}

// The `rank` group (else group 1) of the first match of `re` in `text`.
std::optional<int32_t> MatchRank(const pcre2_code* re, std::string_view text) {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  std::optional<int32_t> result;
  int rc =
      pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, md, nullptr);
  if (rc > 1) {
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    int n = pcre2_substring_number_from_name(re, reinterpret_cast<PCRE2_SPTR>("rank"));
    if (n <= 0) n = 1;
    if (n < rc && ov[2 * n] != PCRE2_UNSET) {
      auto v = ParseInt<int32_t>(text.substr(ov[2 * n], ov[2 * n + 1] - ov[2 * n]));
      if (v && *v >= 0 && *v <= kMaxRank) result = v;
    }
  }
  pcre2_match_data_free(md);
  return result;
}

// The `host` group (else group 1, else the whole match) of `re` in `text`.
std::optional<std::string> MatchHost(const pcre2_code* re, std::string_view text) {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  std::optional<std::string> result;
  int rc =
      pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0, 0, md, nullptr);
  if (rc > 0) {
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    int n = pcre2_substring_number_from_name(re, reinterpret_cast<PCRE2_SPTR>("host"));
    if (n <= 0) n = rc > 1 ? 1 : 0;
    if (n < rc && ov[2 * n] != PCRE2_UNSET && ov[2 * n + 1] > ov[2 * n]) {
      result = std::string(text.substr(ov[2 * n], ov[2 * n + 1] - ov[2 * n]));
    }
  }
  pcre2_match_data_free(md);
  return result;
}

const pcre2_code* BuiltinRankRegex() {
  // rank3, rank-3, rank_3, rank.3, worker3, proc3 as a word of the name.
  static const Regex re = std::move(
      CompileRegex(R"((?:^|[^a-z])(?:rank|worker|proc)[-_.]?(\d+)(?![\d]))", PCRE2_CASELESS)
          .value());
  return re.get();
}

// truth.json of a simulated run: a JSON object that names the simulator's
// schema (formats/sim_truth.h).
bool IsSimulatorTruth(std::string_view head) {
  size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  return head.find(formats::kSimTruthSchemaPrefix) != std::string_view::npos;
}

void ReadOneFile(const std::string& path, uint32_t index,
                 const std::optional<std::string>& host_of_path, std::optional<int32_t> mapped_rank,
                 const std::vector<const TextReader*>& readers,
                 const std::vector<const TraceReader*>& trace_readers, const pcre2_code* rank_from,
                 std::string_view step_marker, std::span<const std::string> comm_kernels,
                 Decode gzip_decode, IngestFileResult& result) {
  Diagnostics& diag = result.builder.diagnostics();
  std::optional<StreamDamage> head_damage;
  auto head = ReadHead(path, kSniffBytes, &head_damage);
  if (!head.ok()) {
    diag.Add(DiagCode::kFileUnreadable, path, 0, head.status().message());
    return;
  }
  if (head->empty() && head_damage) {
    diag.AddAtOffset(head_damage->kind == StreamDamage::kTruncated ? DiagCode::kGzipTruncated
                                                                   : DiagCode::kGzipCorrupt,
                     path, head_damage->compressed_offset, head_damage->message);
    return;
  }
  if (head->empty()) {
    diag.Add(DiagCode::kFileEmpty, path, 0, "empty file");
    return;
  }
  if (IsSimulatorTruth(*head)) {
    diag.Add(DiagCode::kFileUnrecognised, path, 0,
             "the simulator's answer key (laggard simulate's truth.json), not read: a diagnosis "
             "never sees the answer; bench/accuracy scores verdicts against it");
    std::error_code ec;
    result.bytes = std::filesystem::file_size(path, ec);
    return;
  }
  auto rank_of_path = [&] {
    if (mapped_rank) return mapped_rank;
    return rank_from != nullptr ? MatchRank(rank_from, path) : BuiltinRankFromPath(path);
  };
  // Trace readers first: they also take binary files (SQLite).
  const TraceReader* best_trace = nullptr;
  int best_trace_score = 0;
  for (const TraceReader* r : trace_readers) {
    int score = r->Sniff(*head);
    if (score > best_trace_score) best_trace = r, best_trace_score = score;
  }
  const TextReader* best = nullptr;
  int best_score = 0;
  if (!LooksBinary(*head)) {
    for (const TextReader* r : readers) {
      int score = r->Sniff(*head);
      if (score > best_score) best = r, best_score = score;
    }
  }
  if (best_trace != nullptr && best_trace_score >= best_score) {
    ReaderContext ctx;
    ctx.file_index = index;
    ctx.path = path;
    ctx.rank_from_path = rank_of_path();
    ctx.host_from_path = host_of_path;
    ctx.step_marker = step_marker;
    ctx.comm_kernels = comm_kernels;
    ctx.out = &result.builder;
    ctx.gzip_decode = gzip_decode;
    result.records = best_trace->Read(path, ctx);
    result.format = std::string(best_trace->name());
    if (host_of_path) result.builder.SetHostWhereUnknown(*host_of_path);
    std::error_code ec;
    result.bytes = std::filesystem::file_size(path, ec);
    return;
  }
  if (LooksBinary(*head)) {
    diag.Add(DiagCode::kFileBinary, path, 0, "binary data (NUL or control bytes)");
    return;
  }
  if (best == nullptr) {
    diag.Add(DiagCode::kFileUnrecognised, path, 0, "no step-time reader recognised the content");
    return;
  }
  auto source = OpenByteSource(path, gzip_decode);
  if (!source.ok()) {
    diag.Add(DiagCode::kFileUnreadable, path, 0, source.status().message());
    return;
  }
  ReaderContext ctx;
  ctx.file_index = index;
  ctx.path = path;
  ctx.rank_from_path = rank_of_path();
  ctx.host_from_path = host_of_path;
  ctx.out = &result.builder;
  ctx.gzip_decode = gzip_decode;
  LineReader lines(**source);
  result.records = best->Read(lines, ctx);
  result.builder.FlushSteps();  // on the reading thread: files scatter in parallel
  result.bytes = lines.bytes();
  if (host_of_path) result.builder.SetHostWhereUnknown(*host_of_path);
  result.format = std::string(best->name());
  if (lines.long_lines() > 0) {
    for (size_t i = 0; i < lines.long_line_numbers().size(); ++i) {
      diag.Add(DiagCode::kLineTooLong, path, lines.long_line_numbers()[i],
               "line over 1 MiB skipped",
               i + 1 == lines.long_line_numbers().size()
                   ? lines.long_lines() - lines.long_line_numbers().size() + 1
                   : 1);
    }
  }
  if (const auto& damage = (*source)->damage()) {
    diag.AddAtOffset(damage->kind == StreamDamage::kTruncated ? DiagCode::kGzipTruncated
                                                              : DiagCode::kGzipCorrupt,
                     path, damage->compressed_offset, damage->message);
  }
  if (result.records == 0 && result.format == "text-log" &&
      diag.TotalOfKind(DiagKind::kBadRecord) == 0) {
    // Text with no step line at all is some other file, not a damaged log.
    diag = Diagnostics();
    diag.Add(DiagCode::kFileUnrecognised, path, 0, "text file without step-time records");
    result.format.clear();
  }
}

}  // namespace

TraceFacts FactsOfTrace(const RankTrace& t) {
  TraceFacts tf;
  tf.producer = t.producer;
  tf.rank = t.rank;
  tf.world_size = t.world_size;
  tf.host = t.host;
  tf.device = t.device;
  tf.cpu_only = t.cpu_only;
  tf.truncated = t.truncated;
  tf.steps = t.steps.size();
  tf.events = t.events_total;
  tf.events_lost = t.events_lost;
  tf.ops = t.ops.size();
  for (const TraceOp& op : t.ops) {
    ++tf.ops_by_class[static_cast<size_t>(op.cls)];
    if (op.device >= 0 && op.cls != OpClass::kMemcpy && op.cls != OpClass::kMemset) ++tf.kernels;
  }
  tf.collectives = t.collectives.size();
  return tf;
}

DumpFacts FactsOfDump(const FlightRecorderDump& d) {
  DumpFacts f;
  f.rank = d.rank;
  f.version = d.version;
  f.format = d.format;
  f.comm_lib_version = d.comm_lib_version;
  f.truncated = d.truncated;
  f.entries = d.entries.size();
  f.status = d.status;
  size_t first = d.entries.size() - std::min(d.entries.size(), DumpFacts::kLastEntries);
  for (size_t i = first; i < d.entries.size(); ++i) {
    CollectiveRecord r = d.entries[i];
    r.frames.clear();
    f.last_entries.push_back(std::move(r));
  }
  return f;
}

TimelineFacts FactsOfTimeline(const OpTimeline& t) {
  TimelineFacts tf;
  tf.workers = t.workers.size();
  for (const TimelineWorker& w : t.workers) {
    if (w.coord_known) ++tf.workers_placed;
    if (!w.rank) continue;
    if (!tf.first_rank || *w.rank < *tf.first_rank) tf.first_rank = w.rank;
    if (!tf.last_rank || *w.rank > *tf.last_rank) tf.last_rank = w.rank;
  }
  tf.layout = t.layout;
  tf.ops = t.ops.size();
  std::vector<int64_t> steps;
  steps.reserve(t.ops.size());
  for (const TimelineOp& op : t.ops) {
    ++tf.ops_by_kind[static_cast<size_t>(op.kind)];
    steps.push_back(op.step);
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  tf.steps = steps.size();
  if (!steps.empty()) {
    tf.first_step = steps.front();
    tf.last_step = steps.back();
  }
  return tf;
}

NetworkFacts CountNetwork(const NetworkData& n) {
  NetworkFacts f;
  f.ib_ports = n.ib_ports.size();
  f.eth_links = n.eth_links.size();
  f.nccl_tests = n.nccl_tests.size();
  for (const NcclTestRun& r : n.nccl_tests) f.nccl_test_rows += r.rows.size();
  f.nccl_ranks = n.nccl_ranks.size();
  f.topologies = n.topologies.size();
  f.port_counters = n.port_counters.size();
  f.switch_map_hosts = n.switch_of.size();
  f.p2p_tests = n.p2p_tests.size();
  f.node_pairs = n.pair_bandwidths.size();
  return f;
}

std::vector<std::string> NetworkHosts(const NetworkData& n) {
  std::vector<std::string> hosts;
  auto host_of = [&](const std::optional<std::string>& h) {
    if (h && !h->empty()) hosts.push_back(*h);
  };
  for (const IbPort& p : n.ib_ports) host_of(p.host);
  for (const EthLink& e : n.eth_links) host_of(e.host);
  for (const NcclTestRun& r : n.nccl_tests) {
    host_of(r.host_from_path);
    for (const NcclTestRank& rank : r.ranks) host_of(rank.host);
  }
  for (const NcclRankInfo& r : n.nccl_ranks) host_of(r.host);
  for (const TopologyMatrix& m : n.topologies) host_of(m.host);
  for (const IbPortCounters& c : n.port_counters) host_of(c.host);
  for (const P2pBandwidthTest& t : n.p2p_tests) host_of(t.host);
  for (const PairBandwidth& p : n.pair_bandwidths) {
    host_of(p.host_a);
    host_of(p.host_b);
  }
  for (const auto& [host, sw] : n.switch_of) host_of(host);
  return hosts;
}

namespace {

// Counts what `b`, the builder of one file, holds (steps flushed).
FileFacts FactsOf(const RunBuilder& b) {
  FileFacts f;
  f.diagnostics = b.diagnostics();
  std::vector<std::string> hosts;
  std::vector<int64_t> steps;
  auto take_steps = [&](const StepSeries& s) {
    f.step_records += s.steps.size();
    for (const StepRecord& r : s.steps) steps.push_back(r.step);
  };
  for (const StepSeries& s : b.series()) {
    take_steps(s);
    ++f.ranks;
    if (!f.first_rank || s.info.rank < *f.first_rank) f.first_rank = s.info.rank;
    if (!f.last_rank || s.info.rank > *f.last_rank) f.last_rank = s.info.rank;
    if (s.info.host) hosts.push_back(*s.info.host);
  }
  for (const StepSeries& s : b.unattributed()) {
    take_steps(s);
    f.unattributed_steps += s.steps.size();
  }
  std::sort(steps.begin(), steps.end());
  f.distinct_steps = static_cast<uint64_t>(std::unique(steps.begin(), steps.end()) - steps.begin());
  if (!steps.empty()) {
    f.first_step = steps.front();
    f.last_step = steps[f.distinct_steps - 1];
  }

  f.tool_reports = b.tool_reports().size();
  f.nvrx_reports = b.nvrx_reports().size();
  for (const RankTrace& t : b.traces()) {
    f.traces.push_back(FactsOfTrace(t));
    if (t.host) hosts.push_back(*t.host);
  }
  for (const OpTimeline& t : b.op_timelines()) f.op_timelines.push_back(FactsOfTimeline(t));
  for (const FlightRecorderDump& d : b.hang().dumps) f.dumps.push_back(FactsOfDump(d));
  f.groups = b.hang().groups.size();
  for (const GpuRecord& g : b.gpus()) {
    ++f.gpus;
    f.gpu_samples += g.samples.size();
    if (g.host) hosts.push_back(*g.host);
  }
  f.network = CountNetwork(b.network());
  std::vector<std::string> network_hosts = NetworkHosts(b.network());
  hosts.insert(hosts.end(), network_hosts.begin(), network_hosts.end());

  const HangData& hang = b.hang();
  f.hang.events = hang.events.size();
  f.hang.groups = hang.groups.size();
  for (const HangEvent& e : hang.events) {
    ++f.hang.by_kind[static_cast<size_t>(e.kind)];
    if (f.hang.shown.size() < HangFacts::kShownEvents) f.hang.shown.push_back(e);
    if (!e.host.empty()) hosts.push_back(e.host);
  }
  for (const HangLogInfo& log : hang.logs) {
    f.hang.truncated = f.hang.truncated || log.truncated;
    if (f.hang.truncation.empty()) f.hang.truncation = log.truncation;
  }

  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  f.hosts = std::move(hosts);
  return f;
}

}  // namespace

std::optional<int32_t> BuiltinRankFromPath(std::string_view path) {
  // The file name first, then each directory from the nearest.
  fs::path p{std::string(path)};
  for (fs::path cur = p; !cur.empty() && cur.has_filename(); cur = cur.parent_path()) {
    std::string name = cur.filename().string();
    if (auto r = MatchRank(BuiltinRankRegex(), name)) return r;
    if (cur.parent_path() == cur) break;
  }
  return std::nullopt;
}

std::optional<std::string> BuiltinHostFromPath(std::string_view path, std::string_view root) {
  // Folder names that sort data by kind, not by host.
  static constexpr std::string_view kNotHosts[] = {
      "logs",       "log",         "traces",     "trace",      "profiler", "profiles", "metrics",
      "gpu",        "gpus",        "hardware",   "hw",         "network",  "net",      "nvidia_smi",
      "nvidia-smi", "nvsmi",       "dcgm",       "ib",         "ib_eth",   "ethtool",  "ibstat",
      "nccl",       "nccl_tests",  "nccl-tests", "nccl_debug", "topo",     "steps",    "step_logs",
      "tb",         "tensorboard", "data",       "out",        "output",   "outputs",  "results",
      "run",        "runs",        "tmp",        "nodes",      "hosts"};
  if (root.empty() || path.size() <= root.size() || path.substr(0, root.size()) != root) {
    return std::nullopt;
  }
  fs::path rel = fs::path(std::string(path.substr(root.size()))).relative_path().parent_path();
  std::vector<std::string> dirs;
  for (const fs::path& part : rel) dirs.push_back(part.string());
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    std::string lower = ToLower(*it);
    bool kind_folder =
        std::find(std::begin(kNotHosts), std::end(kNotHosts), lower) != std::end(kNotHosts);
    // rank3/ and worker3/ name ranks, not hosts.
    if (kind_folder || MatchRank(BuiltinRankRegex(), *it) || it->empty() || *it == ".") continue;
    return *it;
  }
  return std::nullopt;
}

namespace {

struct ListedFile {
  std::string path;
  std::string root;    // the directory given by the user it was found under, else ""
  uint64_t bytes = 0;  // its size when listed (0 when stat failed)
};

// A file reached twice (ListWithRoots): skipped, and noted.
struct DuplicateFile {
  std::string path;
  std::string first;  // the path it was read under
};

// The files under `paths`, each once: a file reached again (the same
// folder given twice, a folder and its subfolder, two spellings of a path,
// a hard link) is the same (device, inode) and goes to `duplicates`.
// Regular files are listed, and so are FIFOs, sockets and devices, which
// reading then refuses without blocking (OpenByteSource), so that the
// report names them instead of skipping them unseen.
StatusOr<std::vector<ListedFile>> ListWithRoots(const std::vector<std::string>& paths,
                                                std::vector<DuplicateFile>* duplicates) {
  std::vector<ListedFile> files;
  std::map<std::pair<dev_t, ino_t>, size_t> seen;  // -> index in files
  auto add = [&](std::string path, const std::string& root) {
    struct stat st;
    uint64_t bytes = 0;
    if (::stat(path.c_str(), &st) == 0) {
      auto [it, fresh] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), files.size());
      if (!fresh) {
        if (duplicates != nullptr) duplicates->push_back({std::move(path), files[it->second].path});
        return;
      }
      bytes = static_cast<uint64_t>(st.st_size);
    }
    files.push_back({std::move(path), root, bytes});
  };
  for (const std::string& given : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(given, ec);
    if (ec == std::errc::too_many_symbolic_link_levels) {
      return Status::Error(fmt::format("{}: symlink loop", given));
    }
    if (ec || !fs::exists(st))
      return Status::Error(fmt::format("{}: no such file or directory", given));
    if (!fs::is_directory(st)) {
      add(given, "");
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(given, fs::directory_options::skip_permission_denied, ec);
    if (ec) return Status::Error(fmt::format("{}: cannot list: {}", given, ec.message()));
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const fs::path& p = it->path();
      std::string name = p.filename().string();
      if (!name.empty() && name[0] == '.') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      fs::file_status entry = it->status(ec);
      if (ec) {
        if (ec == std::errc::too_many_symbolic_link_levels) found.push_back(p.string());
        ec.clear();  // a dangling symlink: nothing to read
        continue;
      }
      if (fs::is_regular_file(entry) || fs::is_fifo(entry) || fs::is_socket(entry) ||
          fs::is_block_file(entry) || fs::is_character_file(entry)) {
        found.push_back(p.string());
      }
    }
    std::sort(found.begin(), found.end());
    for (std::string& f : found) add(std::move(f), given);
  }
  return files;
}

// One line of a --file-ranks file.
struct FileRankEntry {
  std::string path;  // as written, without a leading "./"
  int32_t rank = 0;
  uint64_t line = 0;
  bool used = false;
};

StatusOr<std::vector<FileRankEntry>> ReadFileRanks(const std::string& map_path) {
  std::ifstream in(map_path);
  if (!in) return Status::Error(fmt::format("--file-ranks {}: cannot open", map_path));
  std::vector<FileRankEntry> entries;
  std::string text;
  for (uint64_t line = 1; std::getline(in, text); ++line) {
    std::string_view l = Trim(text);
    if (l.empty() || l.front() == '#') continue;
    size_t sep = l.find(',') != std::string_view::npos ? l.rfind(',') : l.find_last_of(" \t");
    auto bad = [&](std::string_view why) {
      return Status::Error(
          fmt::format("--file-ranks {}:{}: {}: '{}' (want 'PATH RANK' or 'PATH,RANK')", map_path,
                      line, why, l.substr(0, 120)));
    };
    if (sep == std::string_view::npos) return bad("no rank after the path");
    std::string_view path = Trim(l.substr(0, sep));
    std::optional<int32_t> rank = ParseInt<int32_t>(Trim(l.substr(sep + 1)));
    if (!rank || *rank < 0 || *rank > kMaxRank)
      return bad("the rank is not an integer in [0, 4194304]");
    while (path.substr(0, 2) == "./") path.remove_prefix(2);
    if (path.empty()) return bad("no path");
    entries.push_back(FileRankEntry{std::string(path), *rank, line});
  }
  if (in.bad()) return Status::Error(fmt::format("--file-ranks {}: read error", map_path));
  return entries;
}

// The rank `entries` give `file`: the longest entry that is the file's
// path, or the end of it after a '/'; nullopt when none is.
StatusOr<std::optional<int32_t>> MappedRank(const std::string& map_path,
                                            std::vector<FileRankEntry>& entries,
                                            std::string_view file) {
  while (file.substr(0, 2) == "./") file.remove_prefix(2);
  FileRankEntry* best = nullptr;
  for (FileRankEntry& e : entries) {
    bool match = file == e.path || (file.size() > e.path.size() && file.ends_with(e.path) &&
                                    file[file.size() - e.path.size() - 1] == '/');
    if (!match) continue;
    if (best != nullptr && best->path.size() == e.path.size() && best->rank != e.rank) {
      return Status::Error(fmt::format("--file-ranks {}: lines {} and {} give {} ranks {} and {}",
                                       map_path, best->line, e.line, file, best->rank, e.rank));
    }
    if (best == nullptr || e.path.size() > best->path.size()) best = &e;
  }
  if (best == nullptr) return std::optional<int32_t>();
  best->used = true;
  return std::optional<int32_t>(best->rank);
}

}  // namespace

StatusOr<std::vector<std::string>> ListInputFiles(const std::vector<std::string>& paths) {
  auto listed = ListWithRoots(paths, nullptr);
  if (!listed.ok()) return listed.status();
  std::vector<std::string> files;
  for (ListedFile& f : *listed) files.push_back(std::move(f.path));
  return files;
}

// What PlanIngest() works out for every process alike.
struct IngestPlan::State {
  Regex rank_from;
  Regex host_from;
  std::string step_marker;  // "" when not given
  std::vector<std::string> comm_kernels;
  std::optional<std::string> file_ranks_path;  // --file-ranks as given
  std::vector<FileRankEntry> file_ranks;
  std::vector<DuplicateFile> duplicates;
  std::vector<std::string> files;
  std::vector<uint64_t> bytes;  // size of each file when listed
  std::vector<std::optional<std::string>> hosts;
  std::vector<std::optional<int32_t>> mapped_ranks;
  bool split_jobs = false;
  std::optional<int32_t> job;
};

const std::vector<std::string>& IngestPlan::files() const { return state->files; }
const std::vector<uint64_t>& IngestPlan::bytes() const { return state->bytes; }

std::optional<int32_t> IngestPlan::RankOfPath(size_t i) const {
  if (state->mapped_ranks[i]) return state->mapped_ranks[i];
  return state->rank_from ? MatchRank(state->rank_from.get(), state->files[i])
                          : BuiltinRankFromPath(state->files[i]);
}

StatusOr<IngestPlan> PlanIngest(const std::vector<std::string>& paths,
                                const IngestOptions& options) {
  auto state = std::make_shared<IngestPlan::State>();
  if (options.rank_from) {
    auto re = CompileRegex(*options.rank_from, 0);
    if (!re.ok()) return Status::Error("--rank-from: " + re.status().message());
    state->rank_from = std::move(re.value());
  }
  if (options.host_from) {
    auto re = CompileRegex(*options.host_from, 0);
    if (!re.ok()) return Status::Error("--host-from: " + re.status().message());
    state->host_from = std::move(re.value());
  }
  if (options.step_marker) {
    std::string why = CheckStepMarker(*options.step_marker);
    if (!why.empty()) return Status::Error("--step-marker: " + why);
    state->step_marker = *options.step_marker;
  }
  for (const std::string& k : options.comm_kernels) {
    if (Trim(k).empty()) return Status::Error("--comm-kernel: the name is empty");
    state->comm_kernels.push_back(ToLower(k));
  }
  std::error_code ec;
  fs::path file_ranks_path;
  if (options.file_ranks) {
    auto read = ReadFileRanks(*options.file_ranks);
    if (!read.ok()) return read.status();
    state->file_ranks = std::move(read.value());
    state->file_ranks_path = options.file_ranks;
    file_ranks_path = fs::weakly_canonical(*options.file_ranks, ec);
  }
  auto listed = ListWithRoots(paths, &state->duplicates);
  if (!listed.ok()) return listed.status();
  for (const ListedFile& f : *listed) {
    if (options.file_ranks && fs::weakly_canonical(f.path, ec) == file_ranks_path) continue;
    std::optional<int32_t> mapped;
    if (options.file_ranks) {
      auto m = MappedRank(*options.file_ranks, state->file_ranks, f.path);
      if (!m.ok()) return m.status();
      mapped = *m;
    }
    state->files.push_back(f.path);
    state->bytes.push_back(f.bytes);
    state->hosts.push_back(state->host_from ? MatchHost(state->host_from.get(), f.path)
                                            : BuiltinHostFromPath(f.path, f.root));
    state->mapped_ranks.push_back(mapped);
  }
  state->split_jobs = options.split_jobs;
  state->job = options.job;
  IngestPlan plan;
  plan.state = std::move(state);
  return plan;
}

std::vector<IngestFileResult> ReadIngestFiles(const IngestPlan& plan,
                                              const std::vector<const TextReader*>& readers,
                                              const std::vector<const TraceReader*>& trace_readers,
                                              const IngestOptions& options,
                                              std::span<const uint32_t> indices) {
  const IngestPlan::State& st = *plan.state;
  std::vector<IngestFileResult> results(indices.size());
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  unsigned threads = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                         : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, indices.size())));
  const Decode gzip_decode =
      options.gzip_decode_ahead && threads < std::thread::hardware_concurrency() ? Decode::kAhead
                                                                                 : Decode::kInline;
  auto worker = [&] {
    for (size_t i = next++; i < indices.size(); i = next++) {
      uint32_t f = indices[i];
      ReadOneFile(st.files[f], f, st.hosts[f], st.mapped_ranks[f], readers, trace_readers,
                  st.rank_from.get(), st.step_marker, st.comm_kernels, gzip_decode, results[i]);
      bytes += results[i].bytes;
      size_t d = ++done;
      if (options.progress) options.progress(d, indices.size(), bytes.load());
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return results;
}

namespace {

// The jobs of the files read (ingest/jobs.h).
JobAssignment SplitJobs(const IngestPlan::State& st, std::vector<IngestFileResult>& results) {
  std::vector<JobKeys> keys;
  keys.reserve(results.size());
  for (IngestFileResult& r : results) {
    r.builder.FlushSteps();
    keys.push_back(KeysOfFile(r.builder, r.bytes));
  }
  return AssignJobs(keys, st.files, st.job);
}

}  // namespace

Run MergeIngest(const IngestPlan& plan, std::vector<IngestFileResult>&& results,
                std::vector<FileFacts>* file_facts) {
  const IngestPlan::State& st = *plan.state;
  if (file_facts != nullptr) file_facts->clear();
  Run run;
  RunBuilder merged;
  JobAssignment jobs = st.split_jobs ? SplitJobs(st, results) : JobAssignment{};
  const int32_t chosen = static_cast<int32_t>(jobs.split.chosen);
  auto left_out = [&](size_t i) { return jobs.split.several() && jobs.job_of_file[i] != chosen; };
  for (size_t i = 0; i < st.files.size(); ++i) {
    InputFileInfo info;
    info.path = st.files[i];
    info.format = results[i].format;
    info.bytes = results[i].bytes;
    info.records = results[i].records;
    info.used = results[i].records > 0 && !left_out(i);
    run.files.push_back(std::move(info));
    if (file_facts != nullptr) {
      results[i].builder.FlushSteps();
      file_facts->push_back(FactsOf(results[i].builder));
    }
    if (!left_out(i)) merged.MergeFrom(std::move(results[i].builder));
  }
  merged.Finalize(run);
  NoteLeftOut(jobs, run);
  // Traces timed from their own start, onto one rank's clock.
  AlignTraceClocks(run);
  for (const DuplicateFile& d : st.duplicates) {
    run.diagnostics.Add(DiagCode::kFileDuplicate, d.path, 0,
                        fmt::format("same file as {} (device and inode): read once", d.first));
  }
  for (const FileRankEntry& e : st.file_ranks) {
    if (e.used) continue;
    run.diagnostics.Add(DiagCode::kFileRanksUnmatched, *st.file_ranks_path, e.line,
                        fmt::format("'{}' (rank {}) names no input file", e.path, e.rank));
  }
  for (const StepSeries& s : run.unattributed) {
    const std::string& path = run.files[*s.file].path;
    run.diagnostics.Add(
        DiagCode::kRankUnknown, path, 0,
        fmt::format("{} step records without a rank (use --rank-from to name it)", s.steps.size()));
  }
  return run;
}

StatusOr<Run> Ingest(const std::vector<std::string>& paths,
                     const std::vector<const TextReader*>& readers, const IngestOptions& options,
                     const std::vector<const TraceReader*>& trace_readers,
                     std::vector<FileFacts>* file_facts) {
  auto plan = PlanIngest(paths, options);
  if (!plan.ok()) return plan.status();
  std::vector<uint32_t> all(plan->files().size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  return MergeIngest(*plan, ReadIngestFiles(*plan, readers, trace_readers, options, all),
                     file_facts);
}

}  // namespace laggard
