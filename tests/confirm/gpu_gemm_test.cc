// The GPU GEMM (confirm/gpu_gemm.h) through the real dlopen path, against
// tests/fake_cuda: a stand-in CUDA runtime and cuBLAS whose GPUs run at
// given speeds and which check every call. Devices are named as NVML
// numbers them, a GPU that fails is reported apart, and the half and
// bfloat16 conversions of the random fill round as IEEE does. Then the
// read-back: a suspect GPU against its peers and a control on another host.

#include "confirm/gpu_gemm.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "agent/clock.h"
#include "agent/fake_gpu.h"
#include "confirm/read_back.h"
#include "confirm/run.h"
#include "test_paths.h"

namespace laggard::confirm {
namespace {

// The fake's settings for one test, cleared after it.
class FakeCudaEnv {
 public:
  FakeCudaEnv(const char* tflops, const char* bus = nullptr, const char* fail = nullptr) {
    Set("FAKE_CUDA_TFLOPS", tflops);
    Set("FAKE_CUDA_BUS", bus);
    Set("FAKE_CUDA_FAIL", fail);
  }
  ~FakeCudaEnv() {
    for (const char* n : {"FAKE_CUDA_TFLOPS", "FAKE_CUDA_BUS", "FAKE_CUDA_FAIL"}) unsetenv(n);
  }

 private:
  static void Set(const char* name, const char* value) {
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
};

GpuGemmOptions Quick(const char* dtype = "fp16") {
  GpuGemmOptions o;
  o.dtype = dtype;
  o.n = 2048;
  o.seconds = 0.25;
  o.warmup_s = 0.05;
  o.burst_s = 0.04;
  o.sample_s = 0.03;
  return o;
}

std::shared_ptr<Cuda> LoadFake() {
  auto cuda = Cuda::Load(LAGGARD_FAKE_CUDA_LIB, LAGGARD_FAKE_CUDA_LIB);
  EXPECT_TRUE(cuda.ok()) << cuda.status().message();
  return cuda.ok() ? *cuda : nullptr;
}

agent::FakeGpu NvmlGpu(const char* bus, const char* uuid, double mhz, uint64_t events) {
  agent::FakeGpu g;
  g.bus_id = bus;
  g.uuid = uuid;
  g.name = "NVIDIA H100 80GB HBM3";
  g.fields[agent::GpuField::kSmClockMhz] = agent::FakeConstant(mhz);
  g.fields[agent::GpuField::kTempC] = agent::FakeConstant(mhz < 1900 ? 88 : 61);
  g.fields[agent::GpuField::kPowerW] = agent::FakeConstant(650);
  g.fields[agent::GpuField::kClockEvents] = agent::FakeConstant(static_cast<double>(events));
  return g;
}

TEST(GpuGemmTest, EachGpuIsTimedAndNamedAsNvmlNumbersIt) {
  // CUDA's device 0 sits at bus 28, device 1 (the slow one) at bus 18:
  // NVML, numbering by bus, calls the slow one GPU 0.
  FakeCudaEnv env("400,280,400", "0000:28:00.0,0000:18:00.0,0000:38:00.0");
  auto cuda = LoadFake();
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->version(), "cuBLAS 12.2.5 (CUDA runtime 12020)");
  agent::SystemClock clock;
  agent::FakeGpuBackend nvml({NvmlGpu("00000000:18:00.0", "GPU-aaaa", 1410, 0x20 | 0x1),
                              NvmlGpu("00000000:28:00.0", "GPU-bbbb", 1980, 0x1),
                              NvmlGpu("00000000:38:00.0", "GPU-cccc", 1980, 0)},
                             clock);
  auto run = RunGpuGemm(*cuda, &nvml, std::nullopt, Quick());
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->failures.empty());
  ASSERT_EQ(run->results.size(), 3u);
  const double expected[] = {280e3, 400e3, 400e3};  // GFLOP/s
  const char* uuids[] = {"GPU-aaaa", "GPU-bbbb", "GPU-cccc"};
  for (size_t i = 0; i < 3; ++i) {
    const GemmResult& r = run->results[i];
    EXPECT_EQ(r.device, "gpu:" + std::to_string(i));
    EXPECT_NEAR(r.gflops, expected[i], expected[i] * 0.03) << r.device;
    EXPECT_GE(r.reps, 10) << r.device;
    EXPECT_EQ(r.dtype, "fp16");
    EXPECT_EQ(r.n, 2048);
    EXPECT_EQ(r.model, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(r.uuid, uuids[i]);
    EXPECT_EQ(r.power_w_max, 650);
  }
  EXPECT_EQ(run->results[0].sm_mhz, 1410);
  EXPECT_EQ(run->results[0].temp_c_max, 88);
  // Thermal slowdown is a reason; an idle GPU between bursts is not.
  EXPECT_EQ(run->results[0].throttle, "sw_thermal_slowdown");
  EXPECT_EQ(run->results[1].throttle, "");
  EXPECT_EQ(run->results[1].sm_mhz, 1980);
}

TEST(GpuGemmTest, EveryTypeRunsAndAChosenGpuAlone) {
  for (const char* dtype : {"bf16", "fp16", "fp32"}) {
    FakeCudaEnv env("100,50");
    auto cuda = LoadFake();
    ASSERT_NE(cuda, nullptr);
    auto run = RunGpuGemm(*cuda, nullptr, std::vector<int>{1}, Quick(dtype));
    ASSERT_TRUE(run.ok()) << dtype << ": " << run.status().message();
    ASSERT_EQ(run->results.size(), 1u) << dtype;
    EXPECT_EQ(run->results[0].device, "gpu:1");
    EXPECT_NEAR(run->results[0].gflops, 50e3, 50e3 * 0.03) << dtype;
    EXPECT_FALSE(run->results[0].model.has_value()) << "no NVML, no model";
  }
}

TEST(GpuGemmTest, AGpuThatFailsIsReportedApartFromTheOthers) {
  FakeCudaEnv env("400,400,400", nullptr, "malloc@1");
  auto cuda = LoadFake();
  ASSERT_NE(cuda, nullptr);
  auto run = RunGpuGemm(*cuda, nullptr, std::nullopt, Quick());
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->results.size(), 2u);
  EXPECT_EQ(run->results[0].device, "gpu:0");
  EXPECT_EQ(run->results[1].device, "gpu:2");
  ASSERT_EQ(run->failures.size(), 1u);
  EXPECT_EQ(run->failures[0].device, "gpu:1");
  EXPECT_EQ(run->failures[0].what, "cudaMalloc: out of memory (error 2)");
}

TEST(GpuGemmTest, AGpuThatNeverFinishesIsAFailureNotAHang) {
  FakeCudaEnv env("400,400");
  setenv("FAKE_CUDA_HANG", "1", 1);
  auto cuda = LoadFake();
  ASSERT_NE(cuda, nullptr);
  GpuGemmOptions o = Quick();
  o.stuck_s = 0.2;
  auto run = RunGpuGemm(*cuda, nullptr, std::nullopt, o);
  unsetenv("FAKE_CUDA_HANG");
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->results.size(), 1u);
  EXPECT_EQ(run->results[0].device, "gpu:0");
  EXPECT_NEAR(run->results[0].seconds, 0.25, 0.1);  // the timed bursts, not the warm-up
  ASSERT_EQ(run->failures.size(), 1u);
  EXPECT_EQ(run->failures[0].device, "gpu:1");
  EXPECT_NE(run->failures[0].what.find("did not end within 0 s"), std::string::npos)
      << run->failures[0].what;
  EXPECT_FALSE(run->stuck);  // its thread gave up on the GPU, and ended
}

TEST(GpuGemmTest, NoGpuAnUnknownGpuAndMissingLibrariesAreErrors) {
  {
    FakeCudaEnv env("");
    auto cuda = LoadFake();
    ASSERT_NE(cuda, nullptr);
    auto run = RunGpuGemm(*cuda, nullptr, std::nullopt, Quick());
    ASSERT_FALSE(run.ok());
    EXPECT_NE(run.status().message().find("no CUDA-capable device"), std::string::npos)
        << run.status().message();
  }
  {
    FakeCudaEnv env("400,400");
    auto cuda = LoadFake();
    ASSERT_NE(cuda, nullptr);
    auto run = RunGpuGemm(*cuda, nullptr, std::vector<int>{0, 7}, Quick());
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status().message(), "GPU 7 is not one of this host's CUDA devices (0,1)");
    GpuGemmOptions bad = Quick();
    bad.dtype = "int8";
    EXPECT_FALSE(RunGpuGemm(*cuda, nullptr, std::nullopt, bad).ok());
  }
  auto none = Cuda::Load("/nonexistent/libcudart.so.12", "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("cannot load the CUDA runtime"), std::string::npos);
  // A library without the runtime's functions (NVML's stand-in) is refused.
  auto foreign = Cuda::Load(LAGGARD_FAKE_NVML_LIB, LAGGARD_FAKE_NVML_LIB);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("lacks cudaGetDeviceCount"), std::string::npos)
      << foreign.status().message();
}

TEST(GpuGemmTest, AGpuLineReadsBackWithItsSamples) {
  GemmResult r;
  r.host = "n1";
  r.device = "gpu:3";
  r.dtype = "bf16";
  r.n = 8192;
  r.reps = 1650;
  r.seconds = 3;
  r.gflops = 712011.2;
  r.gflops_min = 698113;
  r.gflops_max = 715233.9;
  r.model = "NVIDIA H100 80GB HBM3";
  r.uuid = "GPU-5d6e";
  r.sm_mhz = 1755;
  r.sm_mhz_min = 1410;
  r.temp_c_max = 88;
  r.power_w_max = 690;
  r.throttle = "sw_power_cap,hw_slowdown";
  r.blas = "cuBLAS 12.2.5 (CUDA runtime 12020)";
  std::string line = GemmLine(r);
  EXPECT_EQ(line,
            "laggard-gemm host=n1 device=gpu:3 dtype=bf16 n=8192 reps=1650 seconds=3.00 "
            "gflops=712011.20 gflops_min=698113.00 gflops_max=715233.90 "
            "model=NVIDIA_H100_80GB_HBM3 uuid=GPU-5d6e sm_mhz=1755 sm_mhz_min=1410 temp_c_max=88 "
            "power_w_max=690 throttle=sw_power_cap,hw_slowdown blas=cuBLAS 12.2.5 (CUDA runtime "
            "12020)");
  auto back = ParseGemmLine(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(back->uuid, "GPU-5d6e");
  EXPECT_EQ(back->sm_mhz_min, 1410);
  EXPECT_EQ(back->power_w_max, 690);
  EXPECT_EQ(back->throttle, "sw_power_cap,hw_slowdown");
  EXPECT_EQ(back->blas, r.blas);
  EXPECT_DOUBLE_EQ(back->gflops, 712011.2);
  // Counts that do not fit an int are not a line of ours (no undefined cast).
  for (const char* bad : {"n=1e300", "n=nan", "reps=-1", "reps=1e12"}) {
    std::string cut = line;
    std::string key = std::string(bad).substr(0, std::string(bad).find('=') + 1);
    size_t at = cut.find(" " + key);
    size_t end = cut.find(' ', at + 1);
    cut.replace(at + 1, end - at - 1, bad);
    EXPECT_FALSE(ParseGemmLine(cut).has_value()) << cut;
  }
  // A CPU line has none of them.
  auto cpu = ParseGemmLine(
      "laggard-gemm host=vm device=cpu:1 dtype=fp32 n=512 reps=41 seconds=1.00 gflops=38.21 "
      "gflops_min=35.90 gflops_max=38.77 blas=OpenBLAS 0.3.21");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_FALSE(cpu->model || cpu->uuid || cpu->sm_mhz);
  EXPECT_EQ(cpu->throttle, "");
}

TEST(GpuGemmTest, HalfAndBfloat16RoundAsIeeeDoes) {
  EXPECT_EQ(HalfBits(1.0f), 0x3c00);
  EXPECT_EQ(HalfBits(-2.0f), 0xc000);
  EXPECT_EQ(HalfBits(0.1f), 0x2e66);
  EXPECT_EQ(HalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(HalfBits(65520.0f), 0x7c00);            // halfway to the next: infinity
  EXPECT_EQ(HalfBits(5.9604645e-8f), 0x0001);       // 2^-24, the least subnormal
  EXPECT_EQ(HalfBits(2.9802322e-8f), 0x0000);       // 2^-25: a tie, to even (zero)
  EXPECT_EQ(HalfBits(6.1035156e-5f), 0x0400);       // 2^-14, the least normal
  EXPECT_EQ(HalfBits(1.0f + 1.0f / 2048), 0x3c00);  // a tie, to even
  EXPECT_EQ(HalfBits(1.0f + 3.0f / 2048), 0x3c02);  // a tie, to even (up)
  EXPECT_EQ(HalfBits(0.0f), 0x0000);
  EXPECT_EQ(Bfloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(Bfloat16Bits(0.1f), 0x3dcd);
  EXPECT_EQ(Bfloat16Bits(-1.5f), 0xbfc0);
}

// A GPU suspect's plan (node-01 GPU 1, its control on node-02) and its GEMM
// lines: the suspect host's GPUs, and the control's.
struct GpuCase {
  ConfirmInput in;
  ConfirmPlan plan;
  std::vector<TestRun> runs;
};

GemmResult Line(int gpu, double tflops, const char* throttle = "", double mhz = 1980) {
  GemmResult g;
  g.device = "gpu:" + std::to_string(gpu);
  g.dtype = "bf16";
  g.gflops = tflops * 1e3;
  g.model = "NVIDIA H100 80GB HBM3";
  g.throttle = throttle;
  g.sm_mhz = mhz;
  return g;
}

GpuCase Case(std::vector<GemmResult> host, std::vector<GemmResult> control) {
  GpuCase c;
  ReportCulprit culprit;
  culprit.host = "node-01";
  culprit.gpu = 1;
  culprit.cause_class = "compute_slow";
  c.in.culprits = {culprit};
  for (const char* h : {"node-01", "node-02"}) {
    for (int g = 0; g < 4; ++g) c.in.gpus.push_back({h, g, std::nullopt, "NVIDIA H100 80GB HBM3"});
  }
  c.plan = PlanConfirm(c.in, {});
  c.runs.resize(c.plan.tests.size());
  for (size_t i = 0; i < c.plan.tests.size(); ++i) {
    const PlannedTest& t = c.plan.tests[i];
    if (t.kind != TestKind::kCompute) continue;
    c.runs[i].ran = true;
    c.runs[i].state = "ran";
    c.runs[i].gemm = t.control ? control : host;
    JudgeGemm(t, c.runs[i]);
  }
  return c;
}

Confirmation Judged(const GpuCase& c) {
  auto out = ReadBack(c.in, c.plan, c.runs);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? Confirmation{} : out[0];
}

TEST(GpuGemmReadBackTest, ASlowSuspectGpuIsConfirmedWithWhatNvmlSaw) {
  GpuCase c =
      Case({Line(0, 700), Line(1, 480, "sw_thermal_slowdown", 1410), Line(2, 705), Line(3, 695)},
           {Line(0, 710)});
  ASSERT_EQ(c.plan.tests.size(), 5u);
  Confirmation got = Judged(c);
  EXPECT_EQ(got.verdict, "confirmed");
  EXPECT_EQ(got.locus, "gpu");
  EXPECT_EQ(got.host, "node-01");
  EXPECT_EQ(got.figures,
            "GPU 1 GEMM 0.68x its peers' (480.0 vs 702.5 TFLOP/s bf16, 4 peers); throttled while "
            "timed: sw_thermal_slowdown; SM clock 1410 MHz (peers 1980)");
}

TEST(GpuGemmReadBackTest, ASuspectAsFastAsItsPeersIsRefuted) {
  GpuCase c = Case({Line(0, 700), Line(1, 698), Line(2, 705), Line(3, 695)}, {Line(0, 710)});
  Confirmation got = Judged(c);
  EXPECT_EQ(got.verdict, "refuted");
  EXPECT_NE(got.figures.find("GPU 1 GEMM 0.99x its peers'"), std::string::npos) << got.figures;
}

TEST(GpuGemmReadBackTest, AHostWhoseGpusAreAllSlowShowsAgainstTheControl) {
  // Every GPU of node-01 at 500, the control at 700: the suspect is slow,
  // and so is its host.
  GpuCase c = Case({Line(0, 500), Line(1, 490), Line(2, 505), Line(3, 495)},
                   {Line(0, 700), Line(1, 705), Line(2, 695), Line(3, 700)});
  Confirmation got = Judged(c);
  EXPECT_EQ(got.verdict, "confirmed") << got.figures;
  EXPECT_EQ(got.locus, "node");
  EXPECT_NE(
      got.figures.find("GPU 1 GEMM 0.70x the control's (490.0 vs 700.0 TFLOP/s bf16, 4 peers)"),
      std::string::npos)
      << got.figures;
  EXPECT_NE(got.figures.find("the host's other GPUs run at 0.71x the control"), std::string::npos)
      << got.figures;
  // One control GPU alone says nothing of a host.
  GpuCase one = Case({Line(0, 500), Line(1, 490), Line(2, 505), Line(3, 495)}, {Line(0, 700)});
  got = Judged(one);
  EXPECT_EQ(got.verdict, "refuted") << got.figures;
  EXPECT_EQ(got.figures.find("the host"), std::string::npos) << got.figures;
}

TEST(GpuGemmReadBackTest, AGpuAnotherCulpritNamesIsNoPeer) {
  GpuCase c = Case({Line(0, 700), Line(1, 560), Line(2, 300), Line(3, 310)}, {});
  // GPUs 2 and 3 of node-01 are other culprits': with them as peers, GPU 1
  // would look faster than its peers (560 against a median of 310).
  for (int g : {2, 3}) {
    ReportCulprit other;
    other.host = "node-01";
    other.gpu = g;
    other.cause_class = "compute_slow";
    c.in.culprits.push_back(other);
  }
  auto out = ReadBack(c.in, c.plan, c.runs);
  ASSERT_GE(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, "confirmed") << out[0].figures;
  EXPECT_NE(
      out[0].figures.find("GPU 1 GEMM 0.80x its peers' (560.0 vs 700.0 TFLOP/s bf16, 1 peer)"),
      std::string::npos)
      << out[0].figures;
}

TEST(GpuGemmReadBackTest, NoPeerOrNoLineIsNeverAVerdict) {
  GpuCase alone = Case({Line(1, 300)}, {});
  Confirmation got = Judged(alone);
  EXPECT_EQ(got.verdict, "inconclusive");
  EXPECT_NE(got.figures.find("no peer of the same model"), std::string::npos) << got.figures;
  GpuCase missing = Case({Line(0, 700), Line(2, 700)}, {Line(0, 700)});
  got = Judged(missing);
  EXPECT_EQ(got.verdict, "inconclusive");
  EXPECT_NE(got.figures.find("GPU 1 was not timed"), std::string::npos) << got.figures;
  // Another model's GPUs are not peers.
  GemmResult other = Line(0, 300);
  other.model = "NVIDIA A100-SXM4-80GB";
  GpuCase models = Case({other, Line(1, 700)}, {});
  got = Judged(models);
  EXPECT_EQ(got.verdict, "inconclusive");
  EXPECT_NE(got.figures.find("no peer of the same model"), std::string::npos) << got.figures;
}

}  // namespace
}  // namespace laggard::confirm
