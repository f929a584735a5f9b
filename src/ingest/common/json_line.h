// Parsing one line of a JSON-lines file with simdjson's on-demand API,
// for the line-by-line JSON readers (step_logs/jsonl_reader.cc,
// agent_log/agent_log.cc). The line is copied into one reused buffer with
// the padding simdjson reads past the end, so parsing a file allocates only
// when a line is longer than any before it.
//
// Thread-safety: one object per file being read.

#ifndef LAGGARD_INGEST_COMMON_JSON_LINE_H_
#define LAGGARD_INGEST_COMMON_JSON_LINE_H_

#include <simdjson.h>

#include <string>
#include <string_view>

namespace laggard {

class JsonLineParser {
 public:
  // Starts parsing `line` into `doc`; false when simdjson rejects it at once
  // (on-demand parsing finds most errors later, while `doc` is read). `doc`
  // is valid until the next call.
  bool Start(std::string_view line, simdjson::ondemand::document& doc) {
    buf_.assign(line);
    buf_.reserve(buf_.size() + simdjson::SIMDJSON_PADDING);
    return !parser_.iterate(simdjson::padded_string_view(buf_.data(), buf_.size(), buf_.capacity()))
                .get(doc);
  }

 private:
  simdjson::ondemand::parser parser_;
  std::string buf_;
};

}  // namespace laggard

#endif  // LAGGARD_INGEST_COMMON_JSON_LINE_H_
