// The network family: link state and port counters, appended to
// RunBuilder::network(). Each reader also takes many hosts' outputs in one
// file (pdsh / dshbak / ansible, common/host_lines.h). Registered by
// ingest/readers.cc.

#ifndef LAGGARD_INGEST_NETWORK_NETWORK_READERS_H_
#define LAGGARD_INGEST_NETWORK_NETWORK_READERS_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// `ibstat`, `ibstatus`, `ibv_devinfo`: one IbPort per port.
std::unique_ptr<TextReader> MakeIbstatReader();
std::unique_ptr<TextReader> MakeIbstatusReader();
std::unique_ptr<TextReader> MakeIbvDevinfoReader();

// `ethtool IFACE` / `ethtool -S IFACE`: one EthLink per interface.
std::unique_ptr<TextReader> MakeEthtoolReader();

// A user's `host,switch` CSV map (NetworkData::switch_of).
std::unique_ptr<TextReader> MakeSwitchMapReader();

// `perfquery` / `perfquery -x` port counters (perfquery.cc): one
// IbPortCounters per (host, LID, port), one capture or a timestamped
// sampling loop.
std::unique_ptr<TextReader> MakePerfqueryReader();

// A pasted node-pair bandwidth table, "host1,host2  49.36" per row
// (pair_table.cc): one PairBandwidth per row.
std::unique_ptr<TextReader> MakePairTableReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_NETWORK_NETWORK_READERS_H_
