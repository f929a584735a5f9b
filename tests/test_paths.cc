// The paths of test_paths.h, as tests/CMakeLists.txt defines them for this
// file only.

#include "test_paths.h"

namespace laggard::test_paths {

const char* SourceDir() { return LAGGARD_TEST_SOURCE_DIR; }
const char* CorpusDir() { return LAGGARD_TEST_CORPUS_DIR; }
const char* LaggardBinary() { return LAGGARD_TEST_BINARY; }
const char* FakeNvmlLib() { return LAGGARD_TEST_FAKE_NVML_LIB; }
const char* FakeCudaLib() { return LAGGARD_TEST_FAKE_CUDA_LIB; }
const char* TestOutputDir() { return LAGGARD_TEST_OUTPUT; }

}  // namespace laggard::test_paths
