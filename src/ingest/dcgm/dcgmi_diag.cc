// `dcgmi diag` results: the boxed table (DCGM 2.x-4.x) and the JSON of
// `dcgmi diag -j`, turned into per-GPU facts: facts.diag_failed and
// facts.diag_messages ("<test>: <result>: <message>", one line each), plus
// the driver version.
//
// The table (dcgmi/Diag.cpp), DCGM 3.x:
//
//   +---------------------------+------------------------------------------------+
//   | Diagnostic                | Result                                         |
//   +===========================+================================================+
//   |-----  Metadata  ----------+------------------------------------------------|
//   | Driver Version Detected   | 550.127.08                                     |
//   | GPU Device IDs Detected   | 2335,2335,2335,2335                            |
//   |-----  Deployment  --------+------------------------------------------------|
//   | Persistence Mode          | Fail                                           |
//   | Error                     | Persistence mode for GPU 0 is currently disab  |
//   |                           | led. ...                                       |
//   +-----  Hardware  ----------+------------------------------------------------+
//   | GPU Memory                | Pass - GPUs: 0, 1                              |
//   |                           | Fail - GPU: 2                                  |
//   | Warning                   | GPU 2 ...                                      |
//   +---------------------------+------------------------------------------------+
//
// DCGM 4.x prints lower-case test names and one "GPU<n>: <result>" row per
// GPU under each test. Messages ("Error", "Warning", "Info" rows) are cut
// into 45-character pieces on the following rows: the pieces are joined
// back exactly (a piece may end or start inside a word).
//
// Which GPUs a result is about:
//   - per-GPU results ("Fail - GPU: 2", "GPU2: Fail", JSON gpu_id) name them;
//   - a result without GPUs (Deployment tests, "Fail - All") is about every
//     GPU of the run, as dcgmi prints one line for the group;
//   - the GPUs of the run are those named by per-GPU results; without any,
//     GPUs 0..n-1 for the n "GPU Device IDs Detected" (assumption: the run
//     covered the host's first n GPUs, true unless it was run with -i);
//   - a message is given to the GPUs it names ("Persistence mode for GPU 0
//     ..."; several errors in one message are split at "., "), else to the
//     GPUs the test failed or warned on. "Info" messages are not kept.
// A GPU is diag_failed when a test failed on it; warnings are messages only.
// Tables may repeat (dcgmi diag --iterations); results accumulate. The
// output names no host: it comes from the file's path.

#include <simdjson.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/dcgm/dcgm_readers.h"
#include "ingest/dcgm/gpu_record_table.h"

namespace laggard {
namespace {

constexpr size_t kMaxJsonBytes = 64u << 20;
constexpr int32_t kMaxGpuIndex = 1024;

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

enum class Result { kPass, kFail, kWarn, kSkip, kNotRun };

std::string_view ResultName(Result r) {
  switch (r) {
    case Result::kPass: return "Pass";
    case Result::kFail: return "Fail";
    case Result::kWarn: return "Warn";
    case Result::kSkip: return "Skip";
    case Result::kNotRun: return "Not run";
  }
  return "?";
}

std::optional<Result> ParseResultWord(std::string_view w) {
  w = Trim(w);
  if (EqualsIgnoreCase(w, "pass") || EqualsIgnoreCase(w, "passed")) return Result::kPass;
  if (EqualsIgnoreCase(w, "fail") || EqualsIgnoreCase(w, "failed")) return Result::kFail;
  if (EqualsIgnoreCase(w, "warn") || EqualsIgnoreCase(w, "warning")) return Result::kWarn;
  if (EqualsIgnoreCase(w, "skip") || EqualsIgnoreCase(w, "skipped")) return Result::kSkip;
  if (EqualsIgnoreCase(w, "not run") || EqualsIgnoreCase(w, "not_run")) return Result::kNotRun;
  return std::nullopt;
}

// GPU indices named in free text: "GPU 3", "GPU3", "GPU: 3", "GPUs: 0, 1",
// "GPU[3]", "GPU #3". "GPU" must be upper case ("<gpuId>" is not a GPU).
std::vector<int32_t> GpuIndicesNamedIn(std::string_view text) {
  std::vector<int32_t> out;
  size_t p = 0;
  while ((p = text.find("GPU", p)) != std::string_view::npos) {
    size_t q = p + 3;
    bool plural = q < text.size() && text[q] == 's';
    if (plural) ++q;
    size_t punct = 0;
    while (q < text.size() && punct < 3 &&
           (text[q] == ' ' || text[q] == ':' || text[q] == '#' || text[q] == '[')) {
      ++q;
      ++punct;
    }
    while (true) {
      size_t d = q;
      while (q < text.size() && IsDigit(text[q]) && q - d < 5) ++q;
      if (q == d) break;
      if (q < text.size() && (IsAlpha(text[q]) || text[q] == '.') &&
          !(text[q] == '.' && (q + 1 >= text.size() || !IsDigit(text[q + 1])))) {
        break;  // "GPU 3D" or a version "GPU 1.2": not an index
      }
      auto n = ParseInt<int32_t>(text.substr(d, q - d));
      if (n && *n < kMaxGpuIndex && std::find(out.begin(), out.end(), *n) == out.end())
        out.push_back(*n);
      if (!plural) break;
      // "GPUs: 0, 1, 2"
      if (q + 1 < text.size() && text[q] == ',' && text[q + 1] == ' ') q += 2;
      else break;
    }
    p += 3;
  }
  return out;
}

// Result cell text: "Pass", "Fail - All", "Pass - GPUs: 0, 1", "GPU3: Fail".
struct CellResult {
  Result result;
  bool all = false;
  std::vector<int32_t> gpus;
};

std::optional<CellResult> ParseResultCell(std::string_view cell) {
  cell = Trim(cell);
  CellResult r;
  if (StartsWith(cell, "GPU")) {  // DCGM 4: "GPU0: Pass"
    size_t colon = cell.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto gpu = ParseInt<int32_t>(cell.substr(3, colon - 3));
    auto result = ParseResultWord(cell.substr(colon + 1));
    if (!gpu || *gpu < 0 || *gpu >= kMaxGpuIndex || !result) return std::nullopt;
    r.result = *result;
    r.gpus.push_back(*gpu);
    return r;
  }
  size_t dash = cell.find(" - ");
  auto result = ParseResultWord(cell.substr(0, dash));
  if (!result) return std::nullopt;
  r.result = *result;
  if (dash == std::string_view::npos) return r;
  std::string_view rest = Trim(cell.substr(dash + 3));
  if (EqualsIgnoreCase(rest, "All")) {
    r.all = true;
    return r;
  }
  if (!StartsWith(rest, "GPU")) return std::nullopt;
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  for (std::string_view id : Split(rest.substr(colon + 1), ',')) {
    auto gpu = ParseInt<int32_t>(id);
    if (!gpu || *gpu < 0 || *gpu >= kMaxGpuIndex) return std::nullopt;
    r.gpus.push_back(*gpu);
  }
  return r;
}

// What a diag run said, collected from the table or the JSON, then turned
// into per-GPU facts by Commit().
class DiagResults {
 public:
  struct Message {
    std::string text;
    std::optional<int32_t> gpu;  // named by the row label or the JSON result
    uint64_t line = 0;
  };
  struct Test {
    std::string name;
    std::optional<Result> overall;  // a result for the whole group
    std::map<int32_t, Result> per_gpu;
    std::vector<Message> messages;
    uint64_t line = 0;
  };

  std::optional<std::string> driver_version;
  std::optional<size_t> device_count;
  std::map<int32_t, std::string> serials;
  std::vector<Test> tests;
  std::optional<uint64_t> first_line;
  std::set<int32_t> gpus_named_by_results;

  Test& AddTest(std::string name, uint64_t line) {
    Test& t = tests.emplace_back();
    t.name = std::move(name);
    t.line = line;
    if (!first_line) first_line = line;
    return t;
  }
  void AddPerGpu(Test& t, int32_t gpu, Result r) {
    auto [it, inserted] = t.per_gpu.emplace(gpu, r);
    if (!inserted && Worse(r, it->second)) it->second = r;
    gpus_named_by_results.insert(gpu);
  }
  void AddOverall(Test& t, Result r) {
    if (!t.overall || Worse(r, *t.overall)) t.overall = r;
  }

  // Builds one record per GPU of the run; returns how many.
  size_t Commit(ReaderContext& ctx) {
    std::set<int32_t> universe = gpus_named_by_results;
    if (universe.empty() && device_count) {
      for (size_t i = 0; i < *device_count && i < static_cast<size_t>(kMaxGpuIndex); ++i)
        universe.insert(static_cast<int32_t>(i));
    }
    if (universe.empty()) {
      // Messages naming GPUs are all that is known of a run without counts.
      for (const Test& t : tests)
        for (const Message& m : t.messages)
          for (int32_t g : GpuIndicesNamedIn(m.text)) universe.insert(g);
    }
    if (universe.empty()) return 0;
    struct Verdict {
      bool failed = false;
      std::vector<std::string> messages;
    };
    std::map<int32_t, Verdict> verdicts;
    for (int32_t g : universe) verdicts[g];
    for (const Test& t : tests) {
      // Each GPU's result for this test.
      std::map<int32_t, Result> result;
      for (int32_t g : universe) {
        auto it = t.per_gpu.find(g);
        if (it != t.per_gpu.end()) result[g] = it->second;
        else if (t.overall && t.per_gpu.empty()) result[g] = *t.overall;
      }
      std::set<int32_t> troubled;  // failed or warned
      for (auto [g, r] : result) {
        if (r == Result::kFail || r == Result::kWarn) troubled.insert(g);
        if (r == Result::kFail) verdicts[g].failed = true;
      }
      std::set<int32_t> told;
      auto tell = [&](int32_t g, std::string_view text) {
        auto r = result.find(g);
        std::string_view status = r != result.end() ? ResultName(r->second) : "Fail";
        verdicts[g].messages.push_back(text.empty()
                                           ? fmt::format("{}: {}", t.name, status)
                                           : fmt::format("{}: {}: {}", t.name, status, text));
        told.insert(g);
      };
      for (const Message& m : t.messages) {
        for (std::string_view segment : Segments(m.text)) {
          std::vector<int32_t> named;
          if (m.gpu) named.push_back(*m.gpu);
          else named = GpuIndicesNamedIn(segment);
          std::erase_if(named, [&](int32_t g) { return universe.count(g) == 0; });
          if (named.empty()) named.assign(troubled.begin(), troubled.end());
          if (named.empty()) named.assign(universe.begin(), universe.end());
          for (int32_t g : named) tell(g, segment);
        }
      }
      for (int32_t g : troubled) {
        if (told.count(g) == 0) tell(g, "");
      }
    }
    GpuRecordTable table(ctx);
    for (auto& [g, v] : verdicts) {
      GpuRecord& r = table.at(table.Get(std::nullopt, g, std::nullopt, first_line.value_or(0)));
      r.facts.diag_failed = v.failed;
      r.facts.diag_messages = std::move(v.messages);
      r.facts.driver_version = driver_version;
      auto serial = serials.find(g);
      if (serial != serials.end()) r.facts.serial = serial->second;
      r.facts.src = ctx.Ref(first_line.value_or(0));
    }
    return table.Commit();
  }

 private:
  static int Rank(Result r) {
    switch (r) {
      case Result::kFail: return 4;
      case Result::kWarn: return 3;
      case Result::kPass: return 2;
      case Result::kSkip: return 1;
      case Result::kNotRun: return 0;
    }
    return 0;
  }
  static bool Worse(Result a, Result b) { return Rank(a) > Rank(b); }

  // Several errors in one message are joined with ", " after a sentence.
  static std::vector<std::string_view> Segments(std::string_view text) {
    std::vector<std::string_view> out;
    size_t start = 0;
    size_t p;
    while ((p = text.find("., ", start)) != std::string_view::npos) {
      out.push_back(Trim(text.substr(start, p + 1 - start)));
      start = p + 3;
    }
    std::string_view last = Trim(text.substr(start));
    if (!last.empty() || out.empty()) out.push_back(last);
    return out;
  }
};

// The table.

bool IsMessageLabel(std::string_view name, std::optional<int32_t>& gpu, bool& info) {
  static constexpr std::string_view kLabels[] = {"Error", "Warning", "Info"};
  for (std::string_view l : kLabels) {
    if (name.size() >= l.size() && EqualsIgnoreCase(name.substr(0, l.size()), l) &&
        (name.size() == l.size() || name[l.size()] == ':' || name[l.size()] == ' ')) {
      info = l == "Info";
      std::vector<int32_t> named = GpuIndicesNamedIn(name.substr(l.size()));
      gpu = named.size() == 1 ? std::optional<int32_t>(named.front()) : std::nullopt;
      return true;
    }
  }
  return false;
}

// "|-----  Metadata  ----------+---...|" -> "Metadata"; "" when not a section line.
std::string_view SectionName(std::string_view t) {
  if (t.size() < 7 || (t[0] != '|' && t[0] != '+') || t.substr(1, 5) != "-----") return {};
  size_t b = 6;
  while (b < t.size() && t[b] == ' ') ++b;
  size_t e = b;
  while (e < t.size() && t[e] != ' ' && t[e] != '-' && t[e] != '+' && t[e] != '|') ++e;
  return t.substr(b, e - b);
}

bool IsRule(std::string_view t) {
  if (t.size() < 3 || t.front() != '+') return false;
  for (char c : t) {
    if (c != '+' && c != '-' && c != '=') return false;
  }
  return true;
}

void ReadTable(std::string_view first, LineReader& lines, ReaderContext& ctx, DiagResults& out) {
  bool in_table = false;
  std::string section;
  enum class Last { kNone, kTest, kMessage, kDeviceIds } last = Last::kNone;
  // Indices into out.tests / its messages (the vectors grow while reading).
  std::optional<size_t> test;
  std::optional<size_t> message;
  std::string device_ids;
  auto close_message = [&] {
    if (test && message) {
      auto& messages = out.tests[*test].messages;
      std::string& text = messages[*message].text;
      text = std::string(Trim(text));
      if (text.empty()) messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(*message));
    }
    message.reset();
  };
  auto close_device_ids = [&] {
    if (last != Last::kDeviceIds) return;
    size_t count = 0;
    for (std::string_view id : Split(device_ids, ',')) count += !Trim(id).empty();
    out.device_count = count;
  };
  auto bad = [&](uint64_t n, std::string_view what, std::string_view t) {
    ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, n,
                   fmt::format("{}: \"{}\"", what, Printable(t, 100)));
  };
  auto add_result = [&](const CellResult& r) {
    for (int32_t g : r.gpus) out.AddPerGpu(out.tests[*test], g, r.result);
    if (r.all || r.gpus.empty()) out.AddOverall(out.tests[*test], r.result);
  };
  std::string_view line = first;
  uint64_t n = lines.line_number();
  while (true) {
    std::string_view t = Trim(line);
    if (!in_table) {
      if (StartsWith(t, "| Diagnostic") && t.find("| Result") != std::string_view::npos) {
        in_table = true;
        section.clear();
        last = Last::kNone;
      }
    } else if (t.empty()) {
      // tolerated inside a table (copied output)
    } else if (std::string_view s = SectionName(t); !s.empty()) {
      close_message();
      close_device_ids();
      section.assign(s);
      last = Last::kNone;
    } else if (IsRule(t)) {
      if (t.find('=') == std::string_view::npos) {  // the footer; "+===" is under the header
        close_message();
        close_device_ids();
        in_table = false;
        last = Last::kNone;
      }
    } else if (t.size() >= 2 && t.front() == '|' && t.back() == '|' &&
               t.find('|', 1) < t.size() - 1) {
      size_t sep = t.find('|', 1);
      std::string_view name = Trim(t.substr(1, sep - 1));
      std::string_view cell = t.substr(sep + 1, t.size() - 1 - (sep + 1));
      // The cell is " " + text padded to 46 + " ": a message piece is the
      // text without the padding column, its own trailing blanks kept.
      std::string_view piece = cell;
      if (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
      if (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
      if (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
      std::string_view info = Trim(cell);
      std::optional<int32_t> label_gpu;
      bool is_info = false;
      if (EqualsIgnoreCase(section, "Metadata")) {
        if (name.empty()) {
          if (last == Last::kDeviceIds) device_ids.append(piece);
        } else {
          close_device_ids();
          last = Last::kNone;
          if (EqualsIgnoreCase(name, "Driver Version Detected") && !info.empty()) {
            out.driver_version = std::string(info);
          } else if (EqualsIgnoreCase(name, "GPU Device IDs Detected")) {
            device_ids.assign(piece);
            last = Last::kDeviceIds;
          }
        }
      } else if (name.empty()) {
        if (last == Last::kMessage) {
          if (message) out.tests[*test].messages[*message].text.append(piece);
        } else if (last == Last::kTest) {
          if (auto r = ParseResultCell(info)) add_result(*r);
          else bad(n, "dcgmi diag result not understood", t);
        } else {
          bad(n, "dcgmi diag row without a test", t);
        }
      } else if (IsMessageLabel(name, label_gpu, is_info)) {
        close_message();
        if (!test) {
          out.AddTest(section.empty() ? "dcgmi diag" : section, n);
          test = out.tests.size() - 1;
        }
        if (!is_info) {  // "Info" rows are not kept, nor their continuation
          auto& messages = out.tests[*test].messages;
          messages.push_back(DiagResults::Message{std::string(piece), label_gpu, n});
          message = messages.size() - 1;
        }
        last = Last::kMessage;
      } else {
        close_message();
        out.AddTest(std::string(name), n);
        test = out.tests.size() - 1;
        last = Last::kTest;
        if (auto r = ParseResultCell(info)) add_result(*r);
        else bad(n, "dcgmi diag result not understood", t);
      }
    } else {
      bad(n, "not a dcgmi diag table row", t);
    }
    if (!lines.Next(line)) break;
    n = lines.line_number();
  }
  close_message();
  close_device_ids();
}

// The JSON.

namespace dom = simdjson::dom;

std::optional<std::string_view> StringOf(dom::element e) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) return s;
  return std::nullopt;
}

std::optional<int64_t> IntOf(dom::element e) {
  // simdjson's get(x) assigns x even on failure (an unset value): read the
  // result only after checking its error.
  auto as_int = e.get_int64();
  if (as_int.error() == simdjson::SUCCESS) return as_int.value_unsafe();
  auto as_uint = e.get_uint64();
  if (as_uint.error() == simdjson::SUCCESS) {
    uint64_t u = as_uint.value_unsafe();
    if (u <= INT64_MAX) return static_cast<int64_t>(u);
    return std::nullopt;
  }
  if (auto s = StringOf(e)) {
    std::string_view v = Trim(*s);
    if (StartsWith(v, "gpu") || StartsWith(v, "GPU")) v.remove_prefix(3);
    return ParseInt<int64_t>(v);
  }
  return std::nullopt;
}

std::optional<dom::element> Member(dom::object o, std::string_view key) {
  dom::element e;
  if (o.at_key(key).get(e) == simdjson::SUCCESS) return e;
  return std::nullopt;
}

// Member `key` of `o` when it is an array.
std::optional<dom::array> ArrayMember(dom::object o, std::string_view key) {
  auto m = Member(o, key);
  dom::array a;
  if (!m || m->get_array().get(a) != simdjson::SUCCESS) return std::nullopt;
  return a;
}

// `e` when it is an object.
std::optional<dom::object> ObjectOf(dom::element e) {
  dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;
  return o;
}

// The text of a warning: a string, or an object's "warning"/"msg"/... .
std::optional<std::string_view> WarningText(dom::element w) {
  if (auto s = StringOf(w)) return s;
  dom::object o;
  if (w.get_object().get(o) != simdjson::SUCCESS) return std::nullopt;
  for (std::string_view k : {"warning", "msg", "message", "error", "text"}) {
    if (auto e = Member(o, k)) {
      if (auto s = StringOf(*e)) return s;
    }
  }
  return std::nullopt;
}

class JsonWalker {
 public:
  JsonWalker(DiagResults& out, uint64_t line) : out_(out), line_(line) {}

  // Returns false when the document is not a dcgmi diag result.
  bool Walk(dom::element root) {
    dom::object o;
    if (root.get_object().get(o) != simdjson::SUCCESS) return false;
    if (auto it = Member(o, "iterations")) {
      dom::array a;
      bool any = false;
      if (it->get_array().get(a) == simdjson::SUCCESS) {
        for (dom::element e : a) any = Walk(e) || any;
      }
      return any;
    }
    bool found = false;
    Metadata(o);
    if (auto m = Member(o, "metadata")) {
      dom::object mo;
      if (m->get_object().get(mo) == simdjson::SUCCESS) Metadata(mo);
    }
    EntityGroups(o);
    for (std::string_view key : {"DCGM GPU Diagnostic", "DCGM Diagnostic", "Diagnostic"}) {
      if (auto d = Member(o, key)) {
        dom::object diag;
        if (d->get_object().get(diag) != simdjson::SUCCESS) continue;
        found = true;
        Metadata(diag);
        EntityGroups(diag);
        Categories(diag);
        if (auto err = Member(diag, "runtime_error")) {
          if (auto s = StringOf(*err)) {
            DiagResults::Test& t = out_.AddTest("dcgmi diag", line_);
            out_.AddOverall(t, Result::kFail);
            t.messages.push_back(DiagResults::Message{std::string(*s), std::nullopt, line_});
          }
        }
      }
    }
    if (!found && Member(o, "test_categories")) {
      found = true;
      Categories(o);
    }
    return found;
  }

 private:
  void Metadata(dom::object o) {
    if (auto v = Member(o, "Driver Version Detected")) {
      if (auto s = StringOf(*v); s && !Trim(*s).empty())
        out_.driver_version = std::string(Trim(*s));
    }
    if (auto v = Member(o, "GPU Device IDs")) {
      dom::array a;
      if (v->get_array().get(a) == simdjson::SUCCESS) out_.device_count = a.size();
    }
  }

  void EntityGroups(dom::object o) {
    auto groups = ArrayMember(o, "entity_groups");
    if (!groups) return;
    for (dom::element g : *groups) {
      auto go = ObjectOf(g);
      if (!go || !IsGpuGroup(*go)) continue;
      auto entities = ArrayMember(*go, "entities");
      if (!entities) continue;
      for (dom::element e : *entities) {
        auto entity = ObjectOf(e);
        if (!entity) continue;
        dom::object eo = *entity;
        auto id = Member(eo, "entity_id");
        auto gpu = id ? IntOf(*id) : std::nullopt;
        if (!gpu || *gpu < 0 || *gpu >= kMaxGpuIndex) continue;
        out_.gpus_named_by_results.insert(static_cast<int32_t>(*gpu));
        if (auto serial = Member(eo, "serial_num")) {
          if (auto s = StringOf(*serial); s && !Trim(*s).empty())
            out_.serials[static_cast<int32_t>(*gpu)] = std::string(Trim(*s));
        }
      }
    }
  }

  static bool IsGpuGroup(dom::object o) {
    if (auto g = Member(o, "entity_group")) {
      if (auto s = StringOf(*g)) return EqualsIgnoreCase(*s, "GPU");
    }
    if (auto g = Member(o, "entity_group_id")) {
      if (auto i = IntOf(*g)) return *i == 1;  // DCGM_FE_GPU
    }
    return true;  // no group given: GPUs, as in DCGM 3
  }

  void Categories(dom::object diag) {
    auto cats = ArrayMember(diag, "test_categories");
    if (!cats) return;
    for (dom::element c : *cats) {
      auto co = ObjectOf(c);
      if (!co) continue;
      bool deployment = false;
      if (auto name = Member(*co, "category")) {
        auto s = StringOf(*name);
        deployment = s && (EqualsIgnoreCase(*s, "Deployment") || EqualsIgnoreCase(*s, "software"));
      }
      auto tests = ArrayMember(*co, "tests");
      if (!tests) continue;
      for (dom::element t : *tests) {
        if (auto to = ObjectOf(t)) Test(*to, deployment);
      }
    }
  }

  // A Deployment test's single result stands for the whole group (DCGM 3):
  // dcgmi puts the GPU of the last error in its "gpu_id", so only the
  // messages tell which GPUs. DCGM 4 gives one result per GPU.
  void Test(dom::object to, bool deployment) {
    std::string_view name = "test";
    if (auto n = Member(to, "name")) name = StringOf(*n).value_or(name);
    DiagResults::Test& test = out_.AddTest(std::string(name), line_);
    auto results = ArrayMember(to, "results");
    if (!results) return;
    dom::array ra = *results;
    for (dom::element r : ra) {
      auto result_object = ObjectOf(r);
      if (!result_object) continue;
      dom::object ro = *result_object;
      std::optional<Result> result;
      if (auto s = Member(ro, "status")) {
        if (auto text = StringOf(*s)) result = ParseResultWord(*text);
      }
      if (!IsGpuGroup(ro)) continue;
      std::vector<int32_t> gpus;
      for (std::string_view key : {"gpu_id", "entity_id"}) {
        if (auto g = Member(ro, key)) {
          int64_t i = IntOf(*g).value_or(-1);
          if (i >= 0 && i < kMaxGpuIndex) gpus.push_back(static_cast<int32_t>(i));
        }
      }
      if (auto g = Member(ro, "gpu_ids"); g && gpus.empty()) {
        if (int64_t i = IntOf(*g).value_or(-1); i >= 0 && i < kMaxGpuIndex) {
          gpus.push_back(static_cast<int32_t>(i));
        } else if (auto s = StringOf(*g)) {
          for (std::string_view id : Split(*s, ',')) {
            std::string_view v = Trim(id);
            if (StartsWith(v, "gpu") || StartsWith(v, "GPU")) v.remove_prefix(3);
            if (auto one = ParseInt<int32_t>(v); one && *one >= 0 && *one < kMaxGpuIndex)
              gpus.push_back(*one);
          }
        }
      }
      if (deployment && ra.size() == 1) gpus.clear();
      if (result) {
        if (gpus.empty()) out_.AddOverall(test, *result);
        for (int32_t g : gpus) out_.AddPerGpu(test, g, *result);
      }
      std::optional<int32_t> single =
          gpus.size() == 1 ? std::optional<int32_t>(gpus[0]) : std::nullopt;
      if (auto w = Member(ro, "warnings")) {
        dom::array wa;
        if (w->get_array().get(wa) == simdjson::SUCCESS) {
          for (dom::element e : wa) {
            if (auto text = WarningText(e))
              test.messages.push_back(DiagResults::Message{std::string(*text), single, line_});
          }
        } else if (auto text = WarningText(*w)) {
          test.messages.push_back(DiagResults::Message{std::string(*text), single, line_});
        }
      }
    }
  }

  DiagResults& out_;
  uint64_t line_;
};

void ReadJson(std::string_view first, LineReader& lines, ReaderContext& ctx, DiagResults& out) {
  uint64_t first_line = lines.line_number();
  std::string text(first);
  text.push_back('\n');
  std::string_view line;
  bool too_big = false;
  while (lines.Next(line)) {
    if (text.size() + line.size() > kMaxJsonBytes) {
      too_big = true;
      continue;
    }
    text.append(line);
    text.push_back('\n');
  }
  uint64_t last_line = lines.line_number();
  if (too_big) {
    ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, first_line,
                   "dcgmi diag JSON larger than 64 MiB; not read");
    return;
  }
  dom::parser parser;
  dom::element doc;
  auto error = parser.parse(text).get(doc);
  if (error != simdjson::SUCCESS) {
    ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, last_line,
                   fmt::format("dcgmi diag JSON does not parse ({}); not read",
                               simdjson::error_message(error)));
    return;
  }
  JsonWalker walker(out, first_line);
  if (!walker.Walk(doc)) {
    ctx.diag().Add(DiagCode::kHwBadRecord, ctx.path, first_line,
                   "JSON without dcgmi diag results (no \"test_categories\"); not read");
  }
}

bool LooksLikeDiagJson(std::string_view head) {
  return head.find("\"test_categories\"") != std::string_view::npos ||
         head.find("\"DCGM GPU Diagnostic\"") != std::string_view::npos ||
         head.find("\"DCGM Diagnostic\"") != std::string_view::npos;
}

class DcgmiDiagReader final : public TextReader {
 public:
  std::string_view name() const override { return "dcgmi-diag"; }

  int Sniff(std::string_view head) const override {
    std::string_view t = Trim(head);
    if (!t.empty() && t.front() == '{') return LooksLikeDiagJson(head) ? kSniffSure : kSniffNo;
    size_t at = head.find("| Diagnostic");
    if (at != std::string_view::npos) {
      size_t eol = head.find('\n', at);
      if (head.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at)
              .find("| Result") != std::string_view::npos) {
        return kSniffSure;
      }
    }
    if (head.find("-----  Metadata  ---") != std::string_view::npos) return kSniffStrong;
    return kSniffNo;
  }

  uint64_t Read(LineReader& lines, ReaderContext& ctx) const override {
    DiagResults results;
    std::string_view line;
    while (lines.Next(line)) {
      std::string_view t = Trim(line);
      if (t.empty()) continue;
      if (t.front() == '{') ReadJson(line, lines, ctx, results);
      else ReadTable(line, lines, ctx, results);
      break;
    }
    return results.Commit(ctx);
  }
};

}  // namespace

std::unique_ptr<TextReader> MakeDcgmiDiagReader() { return std::make_unique<DcgmiDiagReader>(); }

}  // namespace laggard
