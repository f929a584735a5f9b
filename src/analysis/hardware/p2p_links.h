// p2pBandwidthLatencyTest's matrices (model/network.h) read for a GPU whose
// links are slow: gpu.p2p_bandwidth_low.
//
// A slow GPU or link shows as its row AND column lower than the cells among
// the other GPUs, while the box's topology makes cells differ by design (a
// DGX-1's hybrid cube-mesh gives 97, 48 and 11 GB/s by NVLink count; a
// link across CPU sockets runs ~10% slower). So each GPU is measured by the
// mean of all its peer-to-peer cells, row and column, against the mean of
// the cells among the others: every GPU of a regular topology has the same
// mix of links, and the ratio stays near 1. Only cells where peer access
// works (the connectivity matrix, "Device=i CAN Access Peer") count: the
// others are host-staged copies. Read in the bidirectional P2P=Enabled
// matrix, else the unidirectional one; the other matrix and the P2P write
// latency are evidence.
//
// A GPU kP2pLowShare or more below its peers, with most of its cells
// (kP2pLowCells) under the others' median, is a warning only where the
// matrix can tell a slow link from the box's wiring: 4 GPUs or more, the
// links among the others alike and the GPU's own alike (p90 - p10 within
// kP2pUniformSpread of the median: one kind of link, as on an NVSwitch
// box), less than kP2pOtherLinkKind below (a PCIe path beside NVLink runs at
// a fraction: wiring or a link down, which nvidia-smi tells), and no cell
// cut from the output. Otherwise the lowest GPU kP2pMildShare or more below
// is information saying which of these held it back. Needs 3 GPUs or more
// (with two, nothing says which one is slow). Limits: two bad GPUs of a
// small box lift each other's "others"; on a box of mixed links a slow GPU
// stays information.

#ifndef LAGGARD_ANALYSIS_HARDWARE_P2P_LINKS_H_
#define LAGGARD_ANALYSIS_HARDWARE_P2P_LINKS_H_

#include <vector>

#include "analysis/common/finding.h"
#include "model/run.h"

namespace laggard {

inline constexpr double kP2pLowShare = 0.15;
inline constexpr double kP2pMildShare = 0.05;
inline constexpr double kP2pLowCells = 0.75;
inline constexpr double kP2pUniformSpread = 0.1;
inline constexpr double kP2pOtherLinkKind = 0.5;
// Confidence of gpu.p2p_bandwidth_low (0..1), a judgement: as a warning, and
// as information.
inline constexpr double kP2pWarnConfidence = 0.6;
inline constexpr double kP2pInfoConfidence = 0.3;

std::vector<Finding> P2pLinkFindings(const Run& run);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HARDWARE_P2P_LINKS_H_
