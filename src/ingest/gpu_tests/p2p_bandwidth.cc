// p2pBandwidthLatencyTest's output, as cuda-samples prints it:
//
//   [P2P (Peer-to-Peer) GPU Bandwidth Latency Test]
//   Device: 0, NVIDIA A100-SXM4-80GB, pciBusID: 65, pciDeviceID: 1, pciDomainID:0
//   Device=0 CAN Access Peer Device=1
//   P2P Connectivity Matrix
//        D\D     0     1
//        0	     1     1
//   Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
//      D\D     0      1
//        0 1551.64 424.90
//        1  426.59 1608.34
//   P2P=Enabled Latency (P2P Writes) Matrix (us)
//      GPU     0      1
//        0   2.86   3.24
//      ...
//      CPU     0      1        (host-timed latency: not kept)
//
// Columns are not fixed-width (%6.02f overflows at 1000 GB/s) and pasted
// copies re-align them, expand tabs, or cut rows with "...": rows are split
// on blanks, and a cell not printed stays NaN. Older versions print
// "Matrix (GB/s)" headers without "(P2P Writes)" and "D\D" above latency
// matrices: headers are matched by their leading words. A row whose cell
// count differs from its header's, or whose values are not numbers, is
// p2p.bad_row (skipped, with its line). The output names no host: it comes
// from the path (network.no_host otherwise). A second banner starts a
// second run.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/text.h"
#include "ingest/common/sniff.h"
#include "ingest/gpu_tests/gpu_test_readers.h"

namespace laggard {
namespace {

constexpr std::string_view kBanner = "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]";
// A test of more GPUs than this is not a node's: a garbled header.
constexpr int32_t kMaxGpus = 1024;

// The matrix a header line names; nullopt for other lines.
std::optional<P2pMatrixKind> MatrixKind(std::string_view t) {
  const bool reads = t.find("(P2P Reads)") != std::string_view::npos;
  if (StartsWith(t, "Unidirectional P2P=Disabled Bandwidth")) return P2pMatrixKind::kUniDisabled;
  if (StartsWith(t, "Unidirectional P2P=Enabled Bandwidth")) {
    return reads ? P2pMatrixKind::kUniEnabledReads : P2pMatrixKind::kUniEnabled;
  }
  if (StartsWith(t, "Bidirectional P2P=Disabled Bandwidth")) return P2pMatrixKind::kBiDisabled;
  if (StartsWith(t, "Bidirectional P2P=Enabled Bandwidth")) return P2pMatrixKind::kBiEnabled;
  if (StartsWith(t, "P2P=Disabled Latency")) return P2pMatrixKind::kLatencyDisabled;
  if (StartsWith(t, "P2P=Enabled Latency")) {
    return reads ? P2pMatrixKind::kLatencyEnabledReads : P2pMatrixKind::kLatencyEnabled;
  }
  return std::nullopt;
}

int Sniff(std::string_view head) {
  // Below a step log's kSniffLikely: a training log that ran the test
  // before training keeps its steps.
  if (head.find(kBanner) != std::string_view::npos) return kSniffPlausible;
  int score = kSniffNo;
  ForEachHeadLine(head, {}, [&](std::string_view line) {
    std::string_view t = Trim(line);
    if (t == "P2P Connectivity Matrix" ||
        (MatrixKind(t) && (EndsWith(t, "Matrix (GB/s)") || EndsWith(t, "Matrix (us)")))) {
      score = kSniffPart;
      return false;
    }
    return true;
  });
  return score;
}

class P2pFile {
 public:
  explicit P2pFile(ReaderContext& ctx) : ctx_(ctx) {}

  uint64_t Read(LineReader& lines) {
    ForEachNonBlankLine(lines, [&](const TextLine& line) { Line(line.trimmed, line.number); });
    Finish();
    if (taken_ > 0 && !ctx_.host_from_path) {
      ctx_.diag().Add(DiagCode::kNetNoHost, ctx_.path, 0,
                      "p2pBandwidthLatencyTest names no host and the path names none");
    }
    return taken_;
  }

 private:
  enum class Block { kNone, kConnectivityHead, kConnectivity, kMatrixHead, kMatrix, kSkip };

  void Line(std::string_view t, uint64_t number) {
    if (t == kBanner) {
      Finish();
      test_.src = ctx_.Ref(number);
      started_ = true;
      block_ = Block::kNone;
      return;
    }
    if (t == "...") return;  // a pasted copy's cut
    if (StartsWith(t, "Device: ")) return DeviceLine(t);
    if (StartsWith(t, "Device=")) return AccessLine(t);
    if (t == "P2P Connectivity Matrix") {
      Start(number);
      block_ = Block::kConnectivityHead;
      return;
    }
    if (auto kind = MatrixKind(t)) {
      Start(number);
      kind_ = *kind;
      header_line_ = number;
      block_ = Block::kMatrixHead;
      return;
    }
    std::vector<std::string_view> words = SplitBlanks(t);
    if (words.empty()) return;
    if (words[0] == "D\\D" || words[0] == "GPU" || words[0] == "CPU") {
      return HeaderLine(words, number);
    }
    if (block_ == Block::kConnectivity || block_ == Block::kMatrix || block_ == Block::kSkip) {
      if (ParseInt<int32_t>(words[0])) return RowLine(words, number);
    }
    block_ = Block::kNone;  // other text ends a matrix
  }

  void Start(uint64_t number) {
    if (!started_) {
      test_.src = ctx_.Ref(number);
      started_ = true;
    }
  }

  void DeviceLine(std::string_view t) {
    // "Device: 0, NVIDIA A100-SXM4-80GB, pciBusID: 65, ..."
    std::vector<std::string_view> parts = Split(t.substr(8), ',');
    std::optional<int32_t> index = parts.size() >= 2 ? ParseInt<int32_t>(parts[0]) : std::nullopt;
    if (!index || *index < 0 || *index >= kMaxGpus) return;
    started_ = true;
    if (test_.gpu_names.size() <= static_cast<size_t>(*index)) test_.gpu_names.resize(*index + 1);
    test_.gpu_names[*index] = std::string(Trim(parts[1]));
  }

  void AccessLine(std::string_view t) {
    // "Device=0 CAN Access Peer Device=1" / "Device=0 CANNOT Access Peer Device=1"
    std::vector<std::string_view> w = SplitBlanks(t);
    if (w.size() != 5 || !StartsWith(w[4], "Device=")) return;
    auto i = ParseInt<int32_t>(w[0].substr(7));
    auto j = ParseInt<int32_t>(w[4].substr(7));
    if (!i || !j || *i < 0 || *j < 0 || *i >= kMaxGpus || *j >= kMaxGpus) return;
    if (w[1] != "CAN" && w[1] != "CANNOT") return;
    started_ = true;
    access_.push_back({*i, *j, static_cast<int8_t>(w[1] == "CAN" ? 1 : 0)});
  }

  void HeaderLine(const std::vector<std::string_view>& words, uint64_t number) {
    if (words[0] == "CPU") {  // the host-timed half of a latency block
      block_ = Block::kSkip;
      return;
    }
    int32_t n = static_cast<int32_t>(words.size()) - 1;
    for (int32_t k = 0; k < n; ++k) {
      if (ParseInt<int32_t>(words[k + 1]) != k) n = -1;
    }
    if (n <= 0 || n > kMaxGpus) {
      BadRow(number, "a matrix header whose columns are not 0, 1, 2, ...");
      block_ = Block::kNone;
      return;
    }
    if (block_ == Block::kConnectivityHead) {
      connectivity_n_ = n;
      connectivity_.assign(static_cast<size_t>(n) * n, -1);
      block_ = Block::kConnectivity;
    } else if (block_ == Block::kMatrixHead) {
      P2pMatrix m;
      m.kind = kind_;
      m.n = n;
      m.cells.assign(static_cast<size_t>(n) * n, std::numeric_limits<double>::quiet_NaN());
      m.src = ctx_.Ref(header_line_ ? header_line_ : number);
      test_.matrices.push_back(std::move(m));
      block_ = Block::kMatrix;
    } else {
      block_ = Block::kNone;
    }
    header_line_ = 0;
  }

  void RowLine(const std::vector<std::string_view>& words, uint64_t number) {
    if (block_ == Block::kSkip) return;
    const int32_t n = block_ == Block::kConnectivity ? connectivity_n_ : test_.matrices.back().n;
    int32_t row = *ParseInt<int32_t>(words[0]);
    if (row < 0 || row >= n || static_cast<int32_t>(words.size()) != n + 1) {
      BadRow(number, fmt::format("row {} with {} cells under a header of {} columns", words[0],
                                 words.size() - 1, n));
      return;
    }
    std::vector<double> values(n);
    for (int32_t k = 0; k < n; ++k) {
      std::optional<double> v = ParseDouble(words[k + 1]);
      if (!v || !std::isfinite(*v) || *v < 0) {
        BadRow(number, fmt::format("cell \"{}\" is not a number of zero or more",
                                   Printable(words[k + 1], 20)));
        return;
      }
      values[k] = *v;
    }
    if (block_ == Block::kConnectivity) {
      for (int32_t k = 0; k < n; ++k) connectivity_[row * n + k] = values[k] > 0 ? 1 : 0;
    } else {
      P2pMatrix& m = test_.matrices.back();
      if (!std::isnan(m.cells[row * n + (row + 1) % n])) {
        BadRow(number, fmt::format("row {} again in one matrix (the first was kept)", row));
        return;
      }
      for (int32_t k = 0; k < n; ++k) m.cells[row * n + k] = values[k];
    }
  }

  void BadRow(uint64_t number, std::string why) {
    ctx_.diag().Add(DiagCode::kP2pBadRow, ctx_.path, number,
                    "p2pBandwidthLatencyTest: " + std::move(why) + "; skipped");
  }

  // Closes the run read so far: its size, its peer-access table.
  void Finish() {
    if (!started_) return;
    int32_t n = std::max(static_cast<int32_t>(test_.gpu_names.size()), connectivity_n_);
    for (const P2pMatrix& m : test_.matrices) n = std::max(n, m.n);
    for (const Access& a : access_) n = std::max({n, a.i + 1, a.j + 1});
    if (n > 0 && (!test_.matrices.empty() || connectivity_n_ > 0 || !access_.empty())) {
      test_.n = n;
      test_.can_access.assign(static_cast<size_t>(n) * n, -1);
      for (int32_t i = 0; i < connectivity_n_; ++i) {
        for (int32_t j = 0; j < connectivity_n_; ++j)
          test_.can_access[i * n + j] = connectivity_[i * connectivity_n_ + j];
      }
      for (const Access& a : access_) test_.can_access[a.i * n + a.j] = a.can;
      test_.gpu_names.resize(n);
      if (ctx_.host_from_path) test_.host = *ctx_.host_from_path;
      ctx_.out->network().p2p_tests.push_back(std::move(test_));
      ++taken_;
    }
    test_ = P2pBandwidthTest();
    access_.clear();
    connectivity_.clear();
    connectivity_n_ = 0;
    started_ = false;
    block_ = Block::kNone;
  }

  struct Access {
    int32_t i, j;
    int8_t can;
  };

  ReaderContext& ctx_;
  P2pBandwidthTest test_;
  std::vector<Access> access_;
  std::vector<int8_t> connectivity_;
  int32_t connectivity_n_ = 0;
  bool started_ = false;
  Block block_ = Block::kNone;
  P2pMatrixKind kind_ = P2pMatrixKind::kEnd;
  uint64_t header_line_ = 0;
  uint64_t taken_ = 0;
};

}  // namespace

std::unique_ptr<TextReader> MakeP2pBandwidthReader() {
  return MakeFileReader<P2pFile>("p2p-bandwidth", Sniff);
}

}  // namespace laggard
