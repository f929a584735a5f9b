// Transport evidence of a stopped job: NCCL NET / socket errors, an HCA's
// own events, verbs and CUDA failures in NCCL's setup, gloo's lost
// connections. The hang detector (analysis/hangs/hang_detector.h) decides
// hang.transport_error from them when no rank is shown behind.
//
// Which side an error points at (ibv_wc_status, as NET/IB prints it):
//   local      1 LOC_LEN, 2 LOC_QP_OP, 3 LOC_EEC_OP, 4 LOC_PROT, 6 MW_BIND,
//              8 LOC_ACCESS; an HCA's async event ("local access violation
//              work queue error"); ibv_create_qp and other verbs calls that
//              failed; a CUDA error in NCCL's setup: the reporting host
//   remote     7 BAD_RESP, 9 REM_INV_REQ, 10 REM_ACCESS, 11 REM_OP,
//              12 RETRY_EXC, 13 RNR_RETRY_EXC; ncclRemoteError, a socket
//              the peer closed: the link between reporter and peer, or the
//              peer
//   follow-on  5 WR_FLUSH: a connection already in error flushes its
//              queue; counted, never the cause
//   dropped    a peer that is the reporting host itself (a process of the
//              same node closed its socket: a local exit, not a link); CUDA
//              "driver shutting down" (teardown after another failure)
// Location: the one host with a local-side error; else the one host that
// reported (its link towards the peer); else the job. The peer is the NIC
// entity only when every error names the same one.
//
// Thread-safety: pure function.

#ifndef LAGGARD_ANALYSIS_HANGS_HANG_TRANSPORT_H_
#define LAGGARD_ANALYSIS_HANGS_HANG_TRANSPORT_H_

#include <optional>
#include <vector>

#include "analysis/common/finding.h"
#include "model/run.h"

namespace laggard {

std::optional<Finding> DecideTransport(const Run& run, const std::vector<HangEvent>& events);

}  // namespace laggard

#endif  // LAGGARD_ANALYSIS_HANGS_HANG_TRANSPORT_H_
