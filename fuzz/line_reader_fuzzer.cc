// Fuzzes input_file.h: LineReader over arbitrary bytes, and OpenByteSource
// over the same bytes as a plain file, as gzip (one or two members), as
// truncated gzip, as gzip with trailing garbage and as gzip with one byte
// flipped.
//
// Input grammar: the bytes as they are, except that 0xFE followed by a byte k
// stands for (k + 1) * 8219 'x' bytes (at most 3.5 MiB in all), so lines over
// LineReader::kMaxLine occur in the LineReader check.
//
// Invariants:
//   - LineReader returns exactly the lines of an independent split, in order
//     and with their numbers, except that lines of kMaxLine bytes or more
//     are skipped, always, and counted in long_lines();
//   - a plain file reads back unchanged, without damage;
//   - gzip of the bytes reads back unchanged, without damage, and splits
//     into the same lines;
//   - truncated gzip reads back a prefix of the bytes and reports damage
//     (unless cut exactly between two members);
//   - gzip followed by garbage reads back all the bytes and reports
//     corruption; a flipped byte either reports damage or reads back
//     the bytes unchanged;
//   - a gzip source decoded ahead on a worker thread (Decode::kAhead)
//     reads back the same lines and damage as one decoded inline (of a cut
//     or corrupt stream, see Agree).

#include <algorithm>

#include "fuzz_support.h"

namespace laggard::fuzz {
namespace {

std::string Expand(std::string_view input) {
  constexpr size_t kMaxExpanded = 3 * 1024 * 1024 + 512 * 1024;
  std::string out;
  for (size_t i = 0; i < input.size(); ++i) {
    if (static_cast<unsigned char>(input[i]) == 0xFE && i + 1 < input.size()) {
      size_t n = (static_cast<unsigned char>(input[i + 1]) + 1u) * 8219u;
      n = std::min(n, kMaxExpanded - std::min(kMaxExpanded, out.size()));
      out.append(n, 'x');
      ++i;
    } else {
      out.push_back(input[i]);
    }
  }
  return out;
}

void CheckLines(ByteSource& source, std::string_view data) {
  LineReader reader(source);
  std::vector<RefLine> ref = ReferenceLines(data);
  std::vector<uint64_t> skipped;
  uint64_t next = 1;
  std::string_view line;
  while (reader.Next(line)) {
    uint64_t n = reader.line_number();
    FUZZ_CHECK(n >= next && n <= ref.size(), "line number {} after {}, {} lines in all", n,
               next - 1, ref.size());
    for (; next < n; ++next) {
      FUZZ_CHECK(ref[next - 1].raw_length >= LineReader::kMaxLine,
                 "line {} ({} bytes) was not returned", next, ref[next - 1].raw_length);
      skipped.push_back(next);
    }
    FUZZ_CHECK(line == ref[n - 1].text, "line {} read as {} bytes, is {} bytes", n, line.size(),
               ref[n - 1].text.size());
    FUZZ_CHECK(ref[n - 1].raw_length < LineReader::kMaxLine,
               "line {} of {} bytes returned, over the {} byte limit", n, ref[n - 1].raw_length,
               LineReader::kMaxLine);
    next = n + 1;
  }
  for (; next <= ref.size(); ++next) {
    FUZZ_CHECK(ref[next - 1].raw_length >= LineReader::kMaxLine,
               "line {} ({} bytes) was not returned", next, ref[next - 1].raw_length);
    skipped.push_back(next);
  }
  FUZZ_CHECK(reader.long_lines() == skipped.size(), "{} long lines counted, {} skipped",
             reader.long_lines(), skipped.size());
  size_t listed = std::min<size_t>(skipped.size(), 5);
  FUZZ_CHECK(
      reader.long_line_numbers() ==
          std::vector<uint64_t>(skipped.begin(), skipped.begin() + static_cast<long>(listed)),
      "long_line_numbers() does not list the first skipped lines");
  FUZZ_CHECK(reader.bytes() == data.size(), "{} bytes read of {}", reader.bytes(), data.size());
  FUZZ_CHECK(!reader.Next(line), "Next() returned a line after the end");
}

// Reads everything, asking for uneven amounts.
std::string Drain(ByteSource& source, uint64_t h) {
  std::string out;
  char buf[4096];
  for (uint64_t i = 0;; ++i) {
    size_t n = 1 + static_cast<size_t>((h + i * 2654435761u) % sizeof buf);
    size_t got = source.Read(buf, n);
    FUZZ_CHECK(got <= n, "Read({}) returned {}", n, got);
    if (got == 0) break;
    out.append(buf, got);
    FUZZ_CHECK(out.size() <= (64u << 20), "more than 64 MiB out of a small input");
  }
  FUZZ_CHECK(source.Read(buf, sizeof buf) == 0, "Read() returned data after the end");
  return out;
}

const char* DamageName(const std::optional<StreamDamage>& d) {
  if (!d) return "none";
  return d->kind == StreamDamage::kCorrupt ? "corrupt" : "truncated";
}

// Opens the file Open() last wrote under `name`.
std::unique_ptr<ByteSource> Reopen(const std::string& name, Decode decode) {
  std::string path = ScratchDir() + "/line_reader/" + name;
  auto source = OpenByteSource(path, decode);
  FUZZ_CHECK(source.ok(), "cannot open {}: {}", path, source.status().message());
  return std::move(source.value());
}

std::unique_ptr<ByteSource> Open(const std::string& name, std::string_view content) {
  WriteFileOrDie(ScratchDir() + "/line_reader/" + name, content);
  return Reopen(name, Decode::kInline);
}

// How decoding ahead must agree with decoding inline.
enum class Agree {
  kExactly,  // the same bytes and damage
  // A cut stream: the same damage, and a prefix of the data (how much isa-l
  // emits before a cut depends on the output buffer sizes).
  kPrefixOfData,
  // A stream with a flipped byte: when it is corrupt inline, it is corrupt
  // ahead too (what isa-l emits before it reports the error depends on the
  // output buffer sizes); otherwise exactly.
  kCorruptOrExactly,
};

// The file under `name` decoded ahead on a worker thread, against
// `inline_out` and the damage of `inline_source`; `data` is what was
// compressed.
void CheckDecodedAhead(const std::string& name, std::string_view data,
                       const std::string& inline_out, const ByteSource& inline_source, uint64_t h,
                       Agree agree) {
  auto ahead = Reopen(name, Decode::kAhead);
  std::string out = Drain(*ahead, h + 1);
  const auto& a = ahead->damage();
  const auto& b = inline_source.damage();
  if (agree == Agree::kCorruptOrExactly && b && b->kind == StreamDamage::kCorrupt) {
    FUZZ_CHECK(a && a->kind == StreamDamage::kCorrupt, "{}: corrupt inline, {} decoded ahead", name,
               DamageName(a));
    return;
  }
  if (agree == Agree::kPrefixOfData) {
    FUZZ_CHECK(data.substr(0, out.size()) == out, "{}: decoded ahead, {} bytes not a prefix", name,
               out.size());
  } else {
    FUZZ_CHECK(out == inline_out, "{}: decoded ahead, {} bytes; inline, {} bytes", name, out.size(),
               inline_out.size());
  }
  FUZZ_CHECK(a.has_value() == b.has_value() &&
                 (!a || (a->kind == b->kind && a->compressed_offset == b->compressed_offset &&
                         a->output_cut == b->output_cut)),
             "{}: damage decoded ahead {} at {}, inline {} at {}", name, DamageName(a),
             a ? a->compressed_offset : 0, DamageName(b), b ? b->compressed_offset : 0);
}

}  // namespace
}  // namespace laggard::fuzz

LAGGARD_FUZZ_TARGET(line_reader) {
  using namespace laggard;
  using namespace laggard::fuzz;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t h = Hash(input);

  std::string expanded = Expand(input);
  {
    size_t max_chunk = expanded.size() > 65536 ? 4096 + h % (2u << 20) : 1 + h % 61;
    MemorySource memory(expanded, max_chunk);
    CheckLines(memory, expanded);
  }

  bool gzip_magic = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  {
    auto plain = Open("plain", input);
    std::string out = Drain(*plain, h);
    if (!gzip_magic) {
      FUZZ_CHECK(!plain->compressed() && !plain->damage() && out == input,
                 "plain file read back as {} bytes of {} (damage: {})", out.size(), size,
                 DamageName(plain->damage()));
    }
    LooksBinary(input);
    auto head = ReadHead(ScratchDir() + "/line_reader/plain", 1 + h % 300);
    FUZZ_CHECK(head.ok(), "ReadHead failed");
    if (!gzip_magic) FUZZ_CHECK(input.substr(0, head->size()) == *head, "ReadHead differs");
  }

  size_t split = (h >> 5) % (size + 1);
  std::string gz = Gzip(input, split);
  // A cut right after the first of two members leaves a complete gzip file.
  size_t first_member = split < size ? Gzip(input.substr(0, split)).size() : gz.size();
  {
    auto source = Open("gz", gz);
    std::string out = Drain(*source, h);
    FUZZ_CHECK(source->compressed() && !source->damage() && out == input,
               "gzip read back as {} bytes of {} (damage: {})", out.size(), size,
               DamageName(source->damage()));
    auto again = Open("gz", gz);
    CheckLines(*again, input);
    auto ahead = Reopen("gz", Decode::kAhead);
    CheckLines(*ahead, input);
  }
  {
    size_t cut = 2 + (h >> 13) % (gz.size() - 2);
    auto source = Open("cut", std::string_view(gz).substr(0, cut));
    std::string out = Drain(*source, h);
    FUZZ_CHECK(input.substr(0, out.size()) == out, "truncated gzip is not a prefix ({} bytes)",
               out.size());
    FUZZ_CHECK(source->damage().has_value() || (cut == first_member && out.size() == split),
               "gzip cut at {} of {} bytes reports no damage", cut, gz.size());
    CheckDecodedAhead("cut", input, out, *source, h, Agree::kPrefixOfData);
  }
  {
    auto source = Open("tail", gz + "trailing garbage\n");
    std::string out = Drain(*source, h);
    FUZZ_CHECK(out == input && source->damage() && source->damage()->kind == StreamDamage::kCorrupt,
               "gzip + garbage read back as {} bytes of {} (damage: {})", out.size(), size,
               DamageName(source->damage()));
  }
  {
    std::string flipped = gz;
    size_t at = 2 + (h >> 21) % (gz.size() - 2);
    flipped[at] = static_cast<char>(flipped[at] ^ static_cast<char>(1u << ((h >> 50) % 8)));
    auto source = Open("flip", flipped);
    std::string out = Drain(*source, h);
    FUZZ_CHECK(source->damage() || out == input,
               "gzip with byte {} flipped read back {} bytes without damage", at, out.size());
    CheckDecodedAhead("flip", input, out, *source, h, Agree::kCorruptOrExactly);
  }
  return 0;
}
