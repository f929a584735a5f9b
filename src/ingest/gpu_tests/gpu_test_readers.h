// The GPU-test family: outputs of the test programs users run on a node to
// check its GPUs and their links. Registered by ingest/readers.cc.

#ifndef LAGGARD_INGEST_GPU_TESTS_GPU_TEST_READERS_H_
#define LAGGARD_INGEST_GPU_TESTS_GPU_TEST_READERS_H_

#include <memory>

#include "ingest/common/text_reader.h"

namespace laggard {

// The CUDA sample p2pBandwidthLatencyTest (cuda-samples,
// Samples/5_Domain_Specific/p2pBandwidthLatencyTest): device list, peer
// access, connectivity, bandwidth and latency matrices (p2p_bandwidth.cc).
std::unique_ptr<TextReader> MakeP2pBandwidthReader();

}  // namespace laggard

#endif  // LAGGARD_INGEST_GPU_TESTS_GPU_TEST_READERS_H_
