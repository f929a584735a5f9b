// Plumbing shared by the network link readers (ibstat.cc, ibstatus.cc,
// ibv_devinfo.cc, ethtool.cc, perfquery.cc): the skeleton of their Read()
// (NetFileReader: one parser state per output stream of a multi-host file,
// host_lines.h), and the host rule for every record they add: the host the
// content names (a pdsh prefix, a dshbak or ansible header), else the host
// of the file's path, else unknown, with one network.no_host note per file.
//
// Thread-safety: one NetFileReader per file being read.

#ifndef LAGGARD_INGEST_NETWORK_NET_STREAMS_H_
#define LAGGARD_INGEST_NETWORK_NET_STREAMS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/host_lines.h"
#include "ingest/common/sniff.h"
#include "ingest/common/text_reader.h"

namespace laggard {

// Per-stream parser states, in order of first appearance (so records come
// out in a deterministic order).
template <typename State>
class StreamStates {
 public:
  State& Get(std::string_view stream) {
    auto it = index_.find(stream);
    if (it != index_.end()) return states_[it->second];
    index_.emplace(std::string(stream), states_.size());
    states_.emplace_back();
    states_.back().stream = std::string(stream);
    return states_.back();
  }
  std::vector<State>& all() { return states_; }

 private:
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<State> states_;
};

// Hands out the hosts of records and counts network.no_host once per file.
class RecordHosts {
 public:
  RecordHosts(HostLines& lines, ReaderContext& ctx) : lines_(lines), ctx_(ctx) {}

  // Calls fn(host) once per host the stream stands for (several for a
  // dshbak -c host list), or once with the path's host or nullopt.
  template <typename Fn>
  void ForEach(std::string_view stream, uint64_t line, Fn&& fn) {
    const std::vector<std::string>& hosts = lines_.HostsOf(stream);
    if (!hosts.empty()) {
      for (const std::string& h : hosts) fn(std::optional<std::string>(h));
      return;
    }
    if (!ctx_.host_from_path && !noted_) {
      noted_ = true;
      ctx_.diag().Add(DiagCode::kNetNoHost, ctx_.path, line,
                      "the output names no host and neither does the file's path");
    }
    fn(ctx_.host_from_path);
  }

 private:
  HostLines& lines_;
  ReaderContext& ctx_;
  bool noted_ = false;
};

// What NetFileReader::Read() does with a line that is blank once its host
// is taken off.
enum class BlankLines : uint8_t {
  kSkip,      // dropped, before a stream state is made for it
  kToStream,  // handed to Parser::Line() (formats whose blocks end at a blank line)
};

// The reading of one file by a network reader: splits each line's host
// off, hands the line to the parser state of its stream, and closes every
// stream at the end. `Parser` derives from NetFileReader<Parser, State> and
// defines
//   void Line(State& s, const TextLine& line);  // a line of stream s, its host off
//   void Close(State& s);  // ends the block open in s (also at the input's end)
// and, when it has more to do after the last Close(), `void Finish()`.
// `State` has a member `std::string stream`, set to the stream's name.
template <typename Parser, typename State>
class NetFileReader {
 public:
  NetFileReader(const NetFileReader&) = delete;
  NetFileReader& operator=(const NetFileReader&) = delete;

  // Reads every line; returns the records taken.
  uint64_t Read(LineReader& lines) {
    Parser& parser = static_cast<Parser&>(*this);
    std::string_view raw;
    while (lines.Next(raw)) {
      HostLine l;
      if (!host_lines_.Split(raw, l)) continue;
      std::string_view trimmed = Trim(l.text);
      if (trimmed.empty() && blanks_ == BlankLines::kSkip) continue;
      parser.Line(streams_.Get(l.stream), TextLine{l.text, trimmed, lines.line_number()});
    }
    for (State& s : streams_.all()) parser.Close(s);
    parser.Finish();
    return taken_;
  }

  // What a Parser without a Finish() of its own does after the last Close().
  void Finish() {}

 protected:
  NetFileReader(HostLines::HeaderTest is_header, BlankLines blanks, ReaderContext& ctx)
      : ctx_(ctx), host_lines_(is_header), hosts_(host_lines_, ctx), blanks_(blanks) {}

  // Counts network.bad_record at `line`.
  void Bad(uint64_t line, std::string message) {
    ctx_.diag().Add(DiagCode::kNetBadRecord, ctx_.path, line, std::move(message));
  }

  // Takes `record`: adds a copy of it to `out` for each host of `stream`
  // (RecordHosts::ForEach), its `host` set.
  template <typename Record>
  void Take(std::string_view stream, uint64_t line, const Record& record,
            std::vector<Record>& out) {
    hosts_.ForEach(stream, line, [&](const std::optional<std::string>& host) {
      Record copy = record;
      copy.host = host;
      out.push_back(std::move(copy));
      ++taken_;
    });
  }

  ReaderContext& ctx_;

 private:
  HostLines host_lines_;
  RecordHosts hosts_;
  BlankLines blanks_;
  StreamStates<State> streams_;
  uint64_t taken_ = 0;
};

// "key: value" split at the first ':' (values may hold more: GUIDs, "4: ACTIVE").
inline bool SplitKeyValue(std::string_view line, std::string_view& key, std::string_view& value) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  key = line.substr(0, colon);
  value = line.substr(colon + 1);
  while (!key.empty() && (key.front() == ' ' || key.front() == '\t')) key.remove_prefix(1);
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r')) {
    value.remove_suffix(1);
  }
  return !key.empty();
}

}  // namespace laggard

#endif  // LAGGARD_INGEST_NETWORK_NET_STREAMS_H_
