// The AMD family: the text outputs of AMD's GPU tools into the GPU records
// nvidia-smi's readers fill (model/hardware.h). Registered by
// ingest/readers.cc.

#ifndef LAGGARD_INGEST_AMD_SMI_AMD_SMI_READERS_H_
#define LAGGARD_INGEST_AMD_SMI_AMD_SMI_READERS_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// `rocm-smi` (the Concise Info table) and `rocm-smi -a` / `--showallinfo`
// (rocm_smi.cc): one GPU record per GPU index, one sample per snapshot.
std::unique_ptr<TextReader> MakeRocmSmiReader();

// `amd-smi metric`, the human-readable form (amd_smi_metric.cc): one GPU
// record per GPU index, one sample per snapshot.
std::unique_ptr<TextReader> MakeAmdSmiMetricReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_AMD_SMI_AMD_SMI_READERS_H_
