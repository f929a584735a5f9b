// A small, safe unpickler for the data pickles of PyTorch Flight Recorder
// dumps (flight_recorder_reader.h): it turns the opcodes of plain data
// (None, bools, ints, floats, strings, lists, tuples, dicts, the memo) into
// a value tree, and refuses every opcode that names or calls code (GLOBAL,
// STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID, EXT*, ...) with
// the opcode's name and byte offset. Nothing is ever imported or executed.
//
// Accepted (protocols 2 to 5): PROTO, FRAME, STOP, MARK, POP, POP_MARK,
// EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, TUPLE, TUPLE1-3, DICT, LIST,
// SETITEM(S), APPEND(S), SHORT_BINUNICODE, BINUNICODE, BINUNICODE8, BININT,
// BININT1, BININT2, LONG1 (up to 8 bytes), BINFLOAT, NONE, NEWTRUE,
// NEWFALSE, MEMOIZE, BINPUT, LONG_BINPUT, BINGET, LONG_BINGET. torch's own
// C++ pickler (torch/csrc/jit/serialization/pickler.cpp, with
// tag_aggregates false, as FR's pickle_str() runs it) writes a subset of
// these; Python's pickle.dumps() of the same dict the rest.
//
// Bounds, so that a hostile file cannot crash or exhaust memory: at most
// kMaxNodes values made, kMaxExpandedNodes counted through memo references
// (a BINGET shares its value; a tree that shares itself into billions of
// nodes is refused), kMaxDepth nesting, the memo no larger than the values
// made. A container cannot be changed once it sits inside another one, so
// no value refers to itself (cycles are refused).
//
// A pickle that ends early (a dump cut while written) or meets a malformed
// opcode is not thrown away: Unpickle() closes the containers still open at
// that point, keeping every complete item, and marks each container it
// closed `partial`. Example: torch writes the top dict's SETITEMS last, so a
// dump cut inside its 6th entry gives the top dict (partial) with version,
// pg_config, pg_status and an entries list (partial) of 5 complete entries
// and the 6th as a partial dict.
//
// Thread-safety: pure functions; the values are immutable once returned.

#ifndef LAGGARD_INGEST_TRACES_FLIGHT_RECORDER_PICKLE_READER_H_
#define LAGGARD_INGEST_TRACES_FLIGHT_RECORDER_PICKLE_READER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace laggard::pickle {

inline constexpr uint64_t kMaxNodes = 4'000'000;
inline constexpr uint64_t kMaxExpandedNodes = 64'000'000;
inline constexpr uint32_t kMaxDepth = 64;

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                                    // kString (UTF-8 as written)
  std::vector<ValuePtr> items;                      // kList, kTuple
  std::vector<std::pair<ValuePtr, ValuePtr>> dict;  // kDict, in file order
  bool partial = false;  // a container the end of the data or damage closed
  uint64_t offset = 0;   // of the opcode that made it (pickle; 0 from JSON)
  // Bookkeeping of the bounds: nodes below and including this one (memo
  // references counted again), nesting depth, and whether it sits inside
  // another container (then it no longer changes).
  uint64_t expanded = 1;
  uint32_t depth = 1;
  bool frozen = false;

  bool is_string() const { return kind == Kind::kString; }
  bool is_int() const { return kind == Kind::kInt; }
  bool is_dict() const { return kind == Kind::kDict; }
  bool is_sequence() const { return kind == Kind::kList || kind == Kind::kTuple; }
  // The value of a dict's string key `key`; nullptr when absent or not a dict.
  const Value* Get(std::string_view key) const;
};

std::string_view KindName(Value::Kind kind);

struct UnpickleResult {
  ValuePtr value;  // null when nothing usable was read
  bool complete = false;
  // Why reading stopped before STOP, when it did.
  enum class Stop : uint8_t { kNone, kTruncated, kMalformed, kForbidden } stop = Stop::kNone;
  std::string error;          // with the opcode's name: "GLOBAL (0x63) at offset 1234 ..."
  uint64_t error_offset = 0;  // byte offset of the opcode it stopped at
};

// Reads the pickle in `data`. kForbidden gives no value (the file is
// refused); kTruncated and kMalformed give what was complete before the
// stop (containers closed and marked partial), or null when nothing was.
UnpickleResult Unpickle(std::string_view data);

// The name of opcode byte `op` ("GLOBAL", "BINUNICODE"), or "" when no
// protocol defines it.
std::string_view OpcodeName(uint8_t op);

}  // namespace laggard::pickle

#endif  // LAGGARD_INGEST_TRACES_FLIGHT_RECORDER_PICKLE_READER_H_
