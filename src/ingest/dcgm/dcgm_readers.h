// The DCGM family: GPU metrics and health, into RunBuilder::AddGpu().
// Registered by ingest/readers.cc.

#ifndef LAGGARD_INGEST_DCGM_DCGM_READERS_H_
#define LAGGARD_INGEST_DCGM_DCGM_READERS_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// `dcgmi dmon` tables (dcgmi_dmon.cc).
std::unique_ptr<TextReader> MakeDcgmiDmonReader();

// `dcgmi diag` results, table or -j JSON (dcgmi_diag.cc).
std::unique_ptr<TextReader> MakeDcgmiDiagReader();

// dcgm-exporter's Prometheus text (/metrics, one or more scrapes;
// dcgm_exporter.cc).
std::unique_ptr<TextReader> MakeDcgmExporterReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_DCGM_DCGM_READERS_H_
