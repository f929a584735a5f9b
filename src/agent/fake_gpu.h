// FakeGpuBackend: scripted GPUs behind the GpuBackend seam (nvml.h), for the
// agent's tests, the benchmark, the integration test of `laggard watch` and
// demos on machines without a GPU (`laggard agent --fake-gpus SCRIPT.json`).
//
// Each field of each GPU is a function of the time since the backend was
// created (read from the agent's Clock), returning a value or an NVML error
// code. A field the script does not mention answers NOT_SUPPORTED, as an
// older GPU would.
//
// Script format (JSON):
//
//   {"gpus": [
//     {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5d6e...", "bus_id": "00000000:18:00.0",
//      "fields": {
//        "temp_c": 45,                                         constant
//        "ecc_uncorrected_volatile": "NOT_SUPPORTED",          an NVML error, always
//        "sm_clock_mhz": [{"from_s": 0, "value": 1980},        piecewise in time;
//                         {"from_s": 30, "value": 1980, "to_value": 1410},   linear to the
//                         {"from_s": 40, "value": 1410},       next segment's start
//                         {"from_s": 90, "error": "TIMEOUT"}]},
//      "nvlinks": 18, "nvlink_down": [{"link": 3, "from_s": 40}],
//      "xids": [{"at_s": 50, "xid": 79}],
//      "lost_from_s": 120,                                     GPU_IS_LOST from then on
//      "delay_ms": 0}                                          each query sleeps this long
//   ]}
//
// Field names are GpuFieldName()'s ("temp_c", "sm_clock_mhz", "power_w",
// "pcie_tx_kb_s", "clock_events", ...); error names NvmlErrorName()'s
// ("NOT_SUPPORTED", "GPU_IS_LOST", "TIMEOUT", ...). Before a field's first
// segment it is NOT_SUPPORTED. A GPU without "uuid" gets
// "GPU-fake-0000-<index>"; "name" and "bus_id" are absent unless given.
//
// Thread-safety: like every backend, one thread at a time.

#ifndef LAGGARD_AGENT_FAKE_GPU_H_
#define LAGGARD_AGENT_FAKE_GPU_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/clock.h"
#include "agent/nvml.h"
#include "base/status.h"

namespace laggard::agent {

struct FakeReading {
  int code = kNvmlSuccess;
  double value = 0;
};
// A field as a function of seconds since the backend started.
using FakeField = std::function<FakeReading(double t_s)>;

FakeField FakeConstant(double value);
FakeField FakeError(int code);
struct FakeSegment {
  double from_s = 0;
  int code = kNvmlSuccess;  // an error for the whole segment, or success
  double value = 0;
  std::optional<double> to_value;  // linear from value to to_value until the next segment
};
FakeField FakePiecewise(std::vector<FakeSegment> segments);

struct FakeGpu {
  std::optional<std::string> uuid, bus_id, name;
  std::map<GpuField, FakeField> fields;
  unsigned nvlinks = 0;
  std::vector<std::pair<unsigned, double>> nvlink_down;  // (link, from_s)
  bool xid_events = true;                                // false: PollXids answers NOT_SUPPORTED
  std::vector<std::pair<double, uint64_t>> xids;         // (at_s, xid)
  std::optional<double> lost_from_s;
  int delay_ms = 0;
};

class FakeGpuBackend final : public GpuBackend {
 public:
  FakeGpuBackend(std::vector<FakeGpu> gpus, const Clock& clock);

  std::string_view kind() const override { return "fake"; }
  unsigned DeviceCount() const override { return static_cast<unsigned>(gpus_.size()); }
  int Read(unsigned gpu, GpuField field, double& value) override;
  int ReadText(unsigned gpu, GpuText what, std::string& value) override;
  int NvLinkActive(unsigned gpu, unsigned link, bool& active) override;
  int PollXids(unsigned gpu, std::vector<uint64_t>& xids) override;

  uint64_t calls() const { return calls_; }

 private:
  double Elapsed() const;
  // kNvmlSuccess, or the error every query of `gpu` gets now.
  int Gate(unsigned gpu);

  std::vector<FakeGpu> gpus_;
  std::vector<double> xid_polled_s_;  // time of the previous PollXids per GPU
  const Clock& clock_;
  TimeNs start_;
  uint64_t calls_ = 0;
};

// Parses a script (format above). Errors name the GPU and key at fault.
StatusOr<std::vector<FakeGpu>> ParseFakeGpuScript(std::string_view json);
StatusOr<std::vector<FakeGpu>> LoadFakeGpuScript(const std::string& path);

// The GPU backend of a command taking --fake-gpus and --nvml-lib: the
// fake GPUs of `fake_script` when given (a script that does not load is
// the error), else NVML from `nvml_library`; NVML that does not open
// leaves `backend` null and `note` saying why. With a script, `note`
// names it.
struct GpuBackendChoice {
  std::unique_ptr<GpuBackend> backend;
  std::string note;
};
StatusOr<GpuBackendChoice> OpenGpuBackend(const std::optional<std::string>& fake_script,
                                          const std::string& nvml_library, const Clock& clock);

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_FAKE_GPU_H_
