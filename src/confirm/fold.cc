#include "confirm/fold.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "confirm/json_fields.h"

namespace laggard::confirm {
namespace {

using Json = nlohmann::json;

std::string FileOf(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return path + "/confirmation.json";
  return path;
}

bool Matches(const ConfirmationEntry& e, const Culprit& c) {
  const Entity& x = c.entity;
  if (!e.host || !x.host || *e.host != *x.host) return false;
  if (e.cause_class && *e.cause_class != CauseClassName(c.cause_class)) return false;
  if (e.gpu != x.gpu) return false;
  if (e.nic && x.nic && *e.nic != *x.nic) return false;
  if (e.switch_name && x.switch_name && *e.switch_name != *x.switch_name) return false;
  if (e.rank && x.rank && *e.rank != *x.rank) return false;
  return true;
}

std::string Line(const ConfirmationEntry& e) {
  return fmt::format("confirm: {}{} — {}", e.verdict,
                     e.locus.empty() ? "" : fmt::format(" ({})", e.locus), e.figures);
}

// The summary's "confidence WORD" for the top culprit, after a change.
void MendSummary(Verdict& v, std::string_view before) {
  if (v.culprits.empty()) return;
  std::string old = fmt::format("confidence {}", before);
  std::string now = fmt::format("confidence {}", ConfidenceWord(v.culprits.front().confidence));
  if (size_t at = v.summary.find(old); at != std::string::npos)
    v.summary.replace(at, old.size(), now);
}

}  // namespace

bool IsConfirmation(const std::string& path) {
  std::error_code ec;
  std::string file = FileOf(path);
  if (std::filesystem::path(file).filename() != "confirmation.json") return false;
  if (!std::filesystem::is_regular_file(file, ec)) return false;
  if (!std::filesystem::is_directory(path, ec)) return true;  // the file itself
  // A folder is a confirmation only when it holds what confirm writes
  // there (confirmation.json, test-N.txt): a run folder that also holds a
  // confirmation.json stays a run.
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    std::string name = e.path().filename().string();
    bool test_output = name.rfind("test-", 0) == 0 && e.path().extension() == ".txt";
    if (name != "confirmation.json" && !test_output) return false;
  }
  return !ec;
}

StatusOr<std::vector<ConfirmationEntry>> ReadConfirmation(const std::string& path) {
  std::string file = FileOf(path);
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::Error(fmt::format("{}: cannot read", file));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseConfirmation(text, file);
}

StatusOr<std::vector<ConfirmationEntry>> ParseConfirmation(std::string_view text,
                                                           const std::string& where) {
  Json j = NestingDepth(text) > kMaxNesting ? Json() : Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || Get<std::string>(j, "schema") != "laggard.confirm/1") {
    return Status::Error(fmt::format(
        "{}: not a confirmation (laggard.confirm/1, as `laggard confirm` writes)", where));
  }
  std::vector<Json> culprits;
  if (auto it = j.find("culprits"); it != j.end() && it->is_array()) {
    culprits.assign(it->begin(), it->end());
  }
  WallSpan job;
  std::optional<TimeNs> confirmed_at;
  if (auto it = j.find("job"); it != j.end() && it->is_object()) {
    if (auto t = Get<std::string>(*it, "first_time")) job.first_ns = ParseTimestamp(*t);
    if (auto t = Get<std::string>(*it, "last_time")) job.last_ns = ParseTimestamp(*t);
  }
  if (auto t = Get<std::string>(j, "confirmed_at")) confirmed_at = ParseTimestamp(*t);
  std::vector<ConfirmationEntry> out;
  auto conf = j.find("confirmation");
  if (conf == j.end() || !conf->is_array()) return out;
  for (const Json& c : *conf) {
    if (!c.is_object()) continue;
    ConfirmationEntry e;
    e.name = Get<std::string>(c, "name").value_or("a culprit");
    e.verdict = Get<std::string>(c, "verdict").value_or("");
    e.locus = Get<std::string>(c, "locus").value_or("");
    e.figures = Get<std::string>(c, "figures").value_or("");
    e.confirmed_host = Get<std::string>(c, "host");
    e.job = job;
    e.confirmed_at = confirmed_at;
    auto index = Get<int32_t>(c, "culprit");
    if (index && static_cast<size_t>(*index) < culprits.size() &&
        culprits[static_cast<size_t>(*index)].is_object()) {
      const Json& k = culprits[static_cast<size_t>(*index)];
      e.host = Get<std::string>(k, "host");
      e.rank = Get<int32_t>(k, "rank");
      e.gpu = Get<int32_t>(k, "gpu");
      e.nic = Get<std::string>(k, "nic");
      e.switch_name = Get<std::string>(k, "switch");
      e.cause_class = Get<std::string>(k, "cause_class");
    }
    if (!e.verdict.empty()) out.push_back(std::move(e));
  }
  return out;
}

std::string OfAnotherJob(const ConfirmationEntry& e, const WallSpan& run) {
  constexpr TimeNs kSlack = 60'000'000'000;  // clocks of two hosts, a minute apart at most
  if (!SpansMeet(e.job, run, kSlack)) {
    return fmt::format("it is about another job (that job ran {} to {}; this one {} to {})",
                       FormatTimestamp(*e.job.first_ns), FormatTimestamp(*e.job.last_ns),
                       FormatTimestamp(*run.first_ns), FormatTimestamp(*run.last_ns));
  }
  // Log times without a zone are read as UTC, and confirmed_at is UTC:
  // apart by up to 14 hours for the same moment.
  constexpr TimeNs kZones = 15LL * 3600 * 1'000'000'000;
  if (e.confirmed_at && run.first_ns && *e.confirmed_at + kZones < *run.first_ns) {
    return fmt::format("its tests ran at {}, before this job began ({})",
                       FormatTimestamp(*e.confirmed_at), FormatTimestamp(*run.first_ns));
  }
  return "";
}

size_t FoldConfirmation(const std::vector<ConfirmationEntry>& entries, Verdict& v) {
  size_t matched = 0;
  std::string before =
      v.culprits.empty() ? "" : std::string(ConfidenceWord(v.culprits.front().confidence));
  bool refuted_top = false;
  for (const ConfirmationEntry& e : entries) {
    // A communication-bound verdict's culprit is the job as a whole (or
    // none): the host a bisection confirmed takes its place.
    bool job_only = v.culprits.empty() || (v.culprits.size() == 1 && v.culprits[0].entity.job);
    if (!e.host && e.verdict == "confirmed" && e.confirmed_host &&
        v.status == VerdictStatus::kCommBound && job_only) {
      v.culprits.clear();
      Culprit c;
      c.entity.host = e.confirmed_host;
      c.cause_class = CauseClass::kCommunication;
      c.confidence = 0.7;
      c.evidence.push_back(Line(e));
      v.culprits.push_back(std::move(c));
      v.status = VerdictStatus::kStraggler;
      v.summary = fmt::format(
          "verdict: host {} is the straggler — communication, found by bisection after the job "
          "ran communication-bound, confidence {}",
          *e.confirmed_host, ConfidenceWord(0.7));
      ++matched;
      continue;
    }
    for (Culprit& c : v.culprits) {
      if (!Matches(e, c)) continue;
      if (e.verdict == "confirmed") c.confidence += (1 - c.confidence) / 2;
      if (e.verdict == "refuted") {
        c.confidence /= 2;
        refuted_top |= &c == &v.culprits.front();
      }
      c.evidence.push_back(Line(e));
      ++matched;
    }
  }
  if (!before.empty()) MendSummary(v, before);
  // The first culprit refuted and now weaker than another: the order (and
  // the cost the verdict priced by it) stays the verdict's; the summary
  // says which suspect the measurements leave stronger.
  if (refuted_top && v.status == VerdictStatus::kStraggler) {
    auto stronger = std::max_element(
        v.culprits.begin() + 1, v.culprits.end(),
        [](const Culprit& a, const Culprit& b) { return a.confidence < b.confidence; });
    if (stronger != v.culprits.end() && stronger->confidence > v.culprits.front().confidence) {
      v.summary +=
          fmt::format("; confirm refuted {}: {} is now the stronger suspect (confidence {})",
                      CulpritNameOf(v.culprits.front()), CulpritNameOf(*stronger),
                      ConfidenceWord(stronger->confidence));
    }
  }
  return matched;
}

}  // namespace laggard::confirm
