// The agent-log family: the hardware log `laggard agent` writes
// (hardware.jsonl). Registered by ingest/readers.cc.

#ifndef LAGGARD_INGEST_AGENT_LOG_AGENT_LOG_READER_H_
#define LAGGARD_INGEST_AGENT_LOG_AGENT_LOG_READER_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// GPU samples and facts, XIDs, lost GPUs, InfiniBand ports and network
// links, one JSON object per line.
std::unique_ptr<TextReader> MakeAgentLogReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_AGENT_LOG_AGENT_LOG_READER_H_
