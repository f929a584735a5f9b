// The raw vocabulary of Kineto / torch.profiler traces (Chrome trace event
// JSON): the keys and the values laggard reads or writes, in one typed
// catalogue, grouped by where they appear in a trace. The Kineto reader
// (ingest/traces/kineto/) matches them; the simulator's trace writer
// (simulator/writers/kineto_traces.cc) writes them, so what the one writes the other
// reads by the same names.
//
//   {"schemaVersion": 1, "deviceProperties": [{"id": 0, ...}],    top, device
//    "distributedInfo": {"backend": "nccl", "rank": 3, ...},      distributed
//    "traceEvents": [
//      {"ph": "X", "cat": "kernel", "name": "...", "pid": 0,      event, phase,
//       "tid": 7, "ts": 1.000, "dur": 2.000,                       category
//       "args": {"correlation": 12, "Seq": 4, ...}},              args
//      ...],
//    "baseTimeNanoseconds": 1712195495000000000}
//
// Constants are std::string_views of the unquoted text; the reader also
// compares raw bytes of the file, so a few have their JSON-quoted form
// beside them (kFooQuoted, checked against kFoo at compile time). Where
// PyTorch writes a key in two spellings, both are here.
//
// Header-only, no dependencies (laggard_formats, an INTERFACE library);
// constants only, so any thread may use them.

#ifndef LAGGARD_FORMATS_KINETO_KEYS_H_
#define LAGGARD_FORMATS_KINETO_KEYS_H_

#include <string_view>

namespace laggard::kineto_keys {

// Whether `quoted` is `text` in double quotes: the two spellings of one key.
constexpr bool IsQuotedForm(std::string_view quoted, std::string_view text) {
  return quoted.size() == text.size() + 2 && quoted.front() == '"' && quoted.back() == '"' &&
         quoted.substr(1, text.size()) == text;
}

// Members of the top-level object (the JSON Object Format).
namespace top {
inline constexpr std::string_view kSchemaVersion = "schemaVersion";
inline constexpr std::string_view kDeviceProperties = "deviceProperties";
inline constexpr std::string_view kDistributedInfo = "distributedInfo";
inline constexpr std::string_view kTraceEvents = "traceEvents";
inline constexpr std::string_view kTraceName = "traceName";
inline constexpr std::string_view kDisplayTimeUnit = "displayTimeUnit";
inline constexpr std::string_view kBaseTimeNanoseconds = "baseTimeNanoseconds";
inline constexpr std::string_view kHostName = "host_name";  // Meta's job metadata
inline constexpr std::string_view kHostname = "hostname";

inline constexpr std::string_view kSchemaVersionQuoted = "\"schemaVersion\"";
inline constexpr std::string_view kDevicePropertiesQuoted = "\"deviceProperties\"";
inline constexpr std::string_view kDistributedInfoQuoted = "\"distributedInfo\"";
inline constexpr std::string_view kTraceEventsQuoted = "\"traceEvents\"";
static_assert(IsQuotedForm(kSchemaVersionQuoted, kSchemaVersion));
static_assert(IsQuotedForm(kDevicePropertiesQuoted, kDeviceProperties));
static_assert(IsQuotedForm(kDistributedInfoQuoted, kDistributedInfo));
static_assert(IsQuotedForm(kTraceEventsQuoted, kTraceEvents));
}  // namespace top

// Members of one deviceProperties entry (one per GPU, as cudaDeviceProp).
namespace device {
inline constexpr std::string_view kId = "id";
inline constexpr std::string_view kName = "name";
inline constexpr std::string_view kTotalGlobalMem = "totalGlobalMem";
inline constexpr std::string_view kComputeMajor = "computeMajor";
inline constexpr std::string_view kComputeMinor = "computeMinor";
inline constexpr std::string_view kMaxThreadsPerBlock = "maxThreadsPerBlock";
inline constexpr std::string_view kMaxThreadsPerMultiprocessor = "maxThreadsPerMultiprocessor";
inline constexpr std::string_view kRegsPerBlock = "regsPerBlock";
inline constexpr std::string_view kWarpSize = "warpSize";
inline constexpr std::string_view kSharedMemPerBlock = "sharedMemPerBlock";
inline constexpr std::string_view kNumSms = "numSms";
inline constexpr std::string_view kRegsPerMultiprocessor = "regsPerMultiprocessor";
inline constexpr std::string_view kSharedMemPerBlockOptin = "sharedMemPerBlockOptin";
inline constexpr std::string_view kSharedMemPerMultiprocessor = "sharedMemPerMultiprocessor";
}  // namespace device

// Members of distributedInfo (torch.distributed's view of the process), and
// of its pg_config entries.
namespace distributed {
inline constexpr std::string_view kBackend = "backend";
inline constexpr std::string_view kRank = "rank";
inline constexpr std::string_view kWorldSize = "world_size";
inline constexpr std::string_view kPgCount = "pg_count";
inline constexpr std::string_view kPgConfig = "pg_config";
inline constexpr std::string_view kNcclVersion = "nccl_version";
inline constexpr std::string_view kHostname = "hostname";
inline constexpr std::string_view kHostName = "host_name";
inline constexpr std::string_view kHost = "host";
// pg_config entries
inline constexpr std::string_view kPgName = "pg_name";
inline constexpr std::string_view kPgDesc = "pg_desc";
inline constexpr std::string_view kBackendConfig = "backend_config";
inline constexpr std::string_view kPgSize = "pg_size";
inline constexpr std::string_view kRanks = "ranks";
}  // namespace distributed

// Members of a trace event.
namespace event {
inline constexpr std::string_view kPh = "ph";
inline constexpr std::string_view kCat = "cat";
inline constexpr std::string_view kName = "name";
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kTid = "tid";
inline constexpr std::string_view kTs = "ts";    // microseconds, whatever displayTimeUnit says
inline constexpr std::string_view kDur = "dur";  // microseconds
inline constexpr std::string_view kArgs = "args";
inline constexpr std::string_view kId = "id";                    // of a flow event
inline constexpr std::string_view kBindingPoint = "bp";          // of a flow end
inline constexpr std::string_view kBindingPointEnclosing = "e";  // its value: the enclosing slice
inline constexpr std::string_view kScope = "s";                  // of an instant event
inline constexpr std::string_view kScopeGlobal = "g";            // its value: the whole trace

inline constexpr std::string_view kPhQuoted = "\"ph\"";
inline constexpr std::string_view kCatQuoted = "\"cat\"";
inline constexpr std::string_view kNameQuoted = "\"name\"";
inline constexpr std::string_view kTsQuoted = "\"ts\"";
static_assert(IsQuotedForm(kPhQuoted, kPh));
static_assert(IsQuotedForm(kCatQuoted, kCat));
static_assert(IsQuotedForm(kNameQuoted, kName));
static_assert(IsQuotedForm(kTsQuoted, kTs));
}  // namespace event

// Values of an event's "ph".
namespace phase {
inline constexpr std::string_view kComplete = "X";  // a slice with ts and dur
inline constexpr std::string_view kFlowStart = "s";
inline constexpr std::string_view kFlowEnd = "f";
inline constexpr std::string_view kMetadata = "M";
inline constexpr std::string_view kInstant = "i";

inline constexpr std::string_view kCompleteQuoted = "\"X\"";
static_assert(IsQuotedForm(kCompleteQuoted, kComplete));
}  // namespace phase

// Values of an event's "cat". Kineto's own names first, then the older
// spellings (PyTorch 1.x, and ROCm's roctracer) that mean the same.
namespace category {
inline constexpr std::string_view kKernel = "kernel";
inline constexpr std::string_view kGpuMemcpy = "gpu_memcpy";
inline constexpr std::string_view kGpuMemset = "gpu_memset";
inline constexpr std::string_view kCpuOp = "cpu_op";
inline constexpr std::string_view kUserAnnotation = "user_annotation";
inline constexpr std::string_view kCudaRuntime = "cuda_runtime";
inline constexpr std::string_view kCudaDriver = "cuda_driver";
inline constexpr std::string_view kFlow = "ac2g";    // launch -> kernel arrows
inline constexpr std::string_view kTrace = "Trace";  // the profiler's own span
// older spellings
inline constexpr std::string_view kKernelLegacy = "Kernel";
inline constexpr std::string_view kMemcpyLegacy = "Memcpy";
inline constexpr std::string_view kMemsetLegacy = "Memset";
inline constexpr std::string_view kOperatorLegacy = "Operator";  // cpu_op
inline constexpr std::string_view kRuntimeLegacy = "Runtime";    // cuda_runtime
}  // namespace category

// Members of an event's "args", by the events that carry them.
namespace args {
// every event PyTorch records
inline constexpr std::string_view kExternalId = "External id";
inline constexpr std::string_view kExternalIdLegacy = "external id";
// cpu_op / user_annotation
inline constexpr std::string_view kRecordFunctionId = "Record function id";
inline constexpr std::string_view kEvIdx = "Ev Idx";
inline constexpr std::string_view kInputDims = "Input Dims";  // [[8, 1024], [], ...]
// cuda_runtime
inline constexpr std::string_view kCbid = "cbid";
inline constexpr std::string_view kCorrelation = "correlation";  // kernel <-> its launch call
// kernel / gpu_memcpy / gpu_memset
inline constexpr std::string_view kQueued = "queued";
inline constexpr std::string_view kDevice = "device";
inline constexpr std::string_view kContext = "context";
inline constexpr std::string_view kStream = "stream";
inline constexpr std::string_view kRegistersPerThread = "registers per thread";
inline constexpr std::string_view kSharedMemory = "shared memory";
inline constexpr std::string_view kBlocksPerSm = "blocks per SM";
inline constexpr std::string_view kWarpsPerSm = "warps per SM";
inline constexpr std::string_view kGrid = "grid";    // [x, y, z]
inline constexpr std::string_view kBlock = "block";  // [x, y, z]
inline constexpr std::string_view kEstAchievedOccupancy = "est. achieved occupancy %";
inline constexpr std::string_view kBytes = "bytes";
inline constexpr std::string_view kMemoryBandwidth = "memory bandwidth (GB/s)";
// communication: NCCL kernels and record_param_comms
inline constexpr std::string_view kCollectiveName = "Collective name";
inline constexpr std::string_view kInMsgNelems = "In msg nelems";
inline constexpr std::string_view kOutMsgNelems = "Out msg nelems";
inline constexpr std::string_view kGroupSize = "Group size";
inline constexpr std::string_view kDtype = "dtype";
inline constexpr std::string_view kInSplitSize = "In split size";
inline constexpr std::string_view kOutSplitSize = "Out split size";
inline constexpr std::string_view kProcessGroupName = "Process Group Name";
inline constexpr std::string_view kProcessGroupId = "Process Group ID";
inline constexpr std::string_view kProcessGroupDesc = "Process Group Description";
inline constexpr std::string_view kProcessGroupRanks = "Process Group Ranks";
inline constexpr std::string_view kSeq = "Seq";
inline constexpr std::string_view kRank = "Rank";
inline constexpr std::string_view kGlobalRankStart = "Global rank start";
inline constexpr std::string_view kGlobalRankStride = "Global rank stride";
// the profiler's own span (cat Trace)
inline constexpr std::string_view kOpCount = "Op count";
// metadata events (ph M)
inline constexpr std::string_view kName = "name";
inline constexpr std::string_view kLabels = "labels";
inline constexpr std::string_view kSortIndex = "sort_index";
}  // namespace args

// Event names with a meaning of their own.
namespace name {
inline constexpr std::string_view kProfilerStep = "ProfilerStep#";  // then the step number
// a collective's CPU side: its args say what the kernel's may not
inline constexpr std::string_view kRecordParamComms = "record_param_comms";
// metadata events (ph M)
inline constexpr std::string_view kProcessName = "process_name";
inline constexpr std::string_view kProcessLabels = "process_labels";
inline constexpr std::string_view kProcessSortIndex = "process_sort_index";
inline constexpr std::string_view kThreadName = "thread_name";
inline constexpr std::string_view kThreadSortIndex = "thread_sort_index";

// The raw bytes a JSON string naming a profiler step starts with.
inline constexpr std::string_view kProfilerStepQuotedPrefix = "\"ProfilerStep#";
inline constexpr std::string_view kRecordParamCommsQuoted = "\"record_param_comms\"";
static_assert(kProfilerStepQuotedPrefix.substr(1) == kProfilerStep);
static_assert(IsQuotedForm(kRecordParamCommsQuoted, kRecordParamComms));
}  // namespace name

}  // namespace laggard::kineto_keys

#endif  // LAGGARD_FORMATS_KINETO_KEYS_H_
