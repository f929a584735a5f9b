// Where the tests find their inputs and the binaries they run: the source
// tree, the shared corpus, the laggard binary, the fake NVML and CUDA libraries and
// the folder tests may write to.
//
// The paths are compiled into test_paths.cc alone, so that every other test
// unit is the same in any clone: a second clone in another folder finds
// them in ccache (cmake/ccache.cmake) and only this unit is compiled anew.

#ifndef LAGGARD_TESTS_TEST_PATHS_H_
#define LAGGARD_TESTS_TEST_PATHS_H_

namespace laggard::test_paths {

const char* SourceDir();      // the project's root
const char* CorpusDir();      // ../shared/corpus beside it (may be absent)
const char* LaggardBinary();  // the built `laggard`
const char* FakeNvmlLib();    // tests/fake_nvml, built as a module
const char* FakeCudaLib();    // tests/fake_cuda: CUDA runtime and cuBLAS in one module
const char* TestOutputDir();  // a folder under the build tree

}  // namespace laggard::test_paths

#define LAGGARD_SOURCE_DIR (::laggard::test_paths::SourceDir())
#define LAGGARD_CORPUS_DIR (::laggard::test_paths::CorpusDir())
#define LAGGARD_BINARY (::laggard::test_paths::LaggardBinary())
#define LAGGARD_FAKE_NVML_LIB (::laggard::test_paths::FakeNvmlLib())
#define LAGGARD_FAKE_CUDA_LIB (::laggard::test_paths::FakeCudaLib())
#define LAGGARD_TEST_OUTPUT_DIR (::laggard::test_paths::TestOutputDir())

#endif  // LAGGARD_TESTS_TEST_PATHS_H_
