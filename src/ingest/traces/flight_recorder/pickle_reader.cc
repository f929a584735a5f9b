#include "ingest/traces/flight_recorder/pickle_reader.h"

#include <algorithm>
#include <bit>
#include <unordered_map>

#include <fmt/format.h>

namespace laggard::pickle {
namespace {

// Every opcode of protocols 0-5 (Python's Lib/pickle.py names them).
struct OpInfo {
  uint8_t code;
  std::string_view name;
};
constexpr OpInfo kOpcodes[] = {
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'L', "LONG"},
    {'M', "BININT2"},
    {'N', "NONE"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'R', "REDUCE"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},
    {'X', "BINUNICODE"},
    {'a', "APPEND"},
    {'b', "BUILD"},
    {'c', "GLOBAL"},
    {'d', "DICT"},
    {'}', "EMPTY_DICT"},
    {'e', "APPENDS"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'i', "INST"},
    {'j', "LONG_BINGET"},
    {'l', "LIST"},
    {']', "EMPTY_LIST"},
    {'o', "OBJ"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},
    {'t', "TUPLE"},
    {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"},
    {'G', "BINFLOAT"},
    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"},
    {0x94, "MEMOIZE"},
    {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

// Why the reading loop stopped early.
struct Stopped {
  UnpickleResult::Stop why;
  std::string message;
};

class Unpickler {
 public:
  explicit Unpickler(std::string_view data) : data_(data) {}

  UnpickleResult Run() {
    UnpickleResult r;
    std::optional<Stopped> stop = Loop(r);
    if (!stop) {
      r.complete = true;
      return r;
    }
    r.stop = stop->why;
    r.error_offset = op_offset_;
    uint8_t op = op_offset_ < data_.size() ? static_cast<uint8_t>(data_[op_offset_]) : 0;
    std::string_view name = OpcodeName(op);
    std::string at = op_offset_ < data_.size()
                         ? fmt::format("{} (0x{:02x}) at offset {}",
                                       name.empty() ? "undefined opcode" : name, op, op_offset_)
                         : fmt::format("offset {}", op_offset_);
    r.error = fmt::format("{}: {}", at, stop->message);
    if (stop->why != UnpickleResult::Stop::kForbidden) r.value = Salvage();
    return r;
  }

 private:
  using Stop = UnpickleResult::Stop;

  std::optional<Stopped> Truncated() {
    return Stopped{Stop::kTruncated, "the data ends inside it (the dump was cut)"};
  }
  static std::optional<Stopped> Malformed(std::string message) {
    return Stopped{Stop::kMalformed, std::move(message)};
  }

  bool Take(size_t n, std::string_view& out) {
    if (data_.size() - pos_ < n) return false;
    out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool TakeLe(T& v) {
    std::string_view b;
    if (!Take(sizeof(T), b)) return false;
    uint64_t u = 0;
    for (size_t k = 0; k < sizeof(T); ++k) u |= uint64_t(static_cast<uint8_t>(b[k])) << (8 * k);
    v = static_cast<T>(u);
    return true;
  }

  std::optional<Stopped> New(Value::Kind kind, ValuePtr& out) {
    if (++nodes_ > kMaxNodes) {
      return Malformed(fmt::format("more than {} values; refused as too large", kMaxNodes));
    }
    out = std::make_shared<Value>();
    out->kind = kind;
    out->offset = op_offset_;
    return std::nullopt;
  }
  std::optional<Stopped> Push(Value::Kind kind, ValuePtr* made = nullptr) {
    ValuePtr v;
    if (auto s = New(kind, v)) return s;
    stack_.push_back(v);
    if (made) *made = std::move(v);
    return std::nullopt;
  }

  // Makes `child` part of `parent` (not yet in anything else).
  std::optional<Stopped> Adopt(Value& parent, const ValuePtr& child) {
    if (parent.frozen || child.get() == &parent) {
      return Malformed(
          fmt::format("changes a {} that is already inside another value", KindName(parent.kind)));
    }
    // Limits first: a refused child leaves the parent as it was (Salvage()
    // keeps what was added before).
    const uint64_t expanded = parent.expanded + child->expanded;
    const uint32_t depth = std::max(parent.depth, child->depth + 1);
    if (expanded > kMaxExpandedNodes) {
      return Malformed(
          fmt::format("memo references expand past {} values; refused", kMaxExpandedNodes));
    }
    if (depth > kMaxDepth) {
      return Malformed(fmt::format("values nest deeper than {}", kMaxDepth));
    }
    child->frozen = true;
    parent.expanded = expanded;
    parent.depth = depth;
    return std::nullopt;
  }

  std::optional<Stopped> PopMark(size_t& mark) {
    if (marks_.empty()) return Malformed("no MARK before it");
    mark = marks_.back();
    marks_.pop_back();
    return std::nullopt;
  }

  std::optional<Stopped> AddItems(Value& target, size_t from) {
    if (target.kind == Value::Kind::kList) {
      for (size_t k = from; k < stack_.size(); ++k) {
        if (auto s = Adopt(target, stack_[k])) return s;
        target.items.push_back(stack_[k]);
      }
    } else if (target.kind == Value::Kind::kDict) {
      if ((stack_.size() - from) % 2 != 0) return Malformed("a key without its value");
      for (size_t k = from; k + 1 < stack_.size(); k += 2) {
        if (auto s = Adopt(target, stack_[k])) return s;
        if (auto s = Adopt(target, stack_[k + 1])) return s;
        target.dict.emplace_back(stack_[k], stack_[k + 1]);
      }
    } else {
      return Malformed(fmt::format("adds items to a {}", KindName(target.kind)));
    }
    stack_.resize(from);
    return std::nullopt;
  }

  std::optional<Stopped> MakeTuple(size_t from) {
    ValuePtr t;
    if (auto s = New(Value::Kind::kTuple, t)) return s;
    for (size_t k = from; k < stack_.size(); ++k) {
      if (auto s = Adopt(*t, stack_[k])) return s;
      t->items.push_back(stack_[k]);
    }
    stack_.resize(from);
    stack_.push_back(std::move(t));
    return std::nullopt;
  }

  std::optional<Stopped> Memo(uint64_t id) {
    if (stack_.empty()) return Malformed("memoizes with an empty stack");
    if (memo_.size() >= nodes_ + 1 && memo_.find(id) == memo_.end()) {
      return Malformed("a memo larger than the values made");
    }
    memo_[id] = stack_.back();
    return std::nullopt;
  }
  std::optional<Stopped> Get(uint64_t id) {
    auto it = memo_.find(id);
    if (it == memo_.end()) return Malformed(fmt::format("memo entry {} was never stored", id));
    if (++nodes_ > kMaxNodes) {
      return Malformed(fmt::format("more than {} values; refused as too large", kMaxNodes));
    }
    stack_.push_back(it->second);
    return std::nullopt;
  }

  std::optional<Stopped> String(size_t n) {
    std::string_view b;
    if (!Take(n, b)) return Truncated();
    ValuePtr v;
    if (auto s = Push(Value::Kind::kString, &v)) return s;
    v->s.assign(b);
    return std::nullopt;
  }

  static bool IsAccepted(uint8_t op) {
    static constexpr std::string_view kAccepted =
        "(.01}])t\x85\x86\x87"
        "dlsuae"
        "X\x8c\x8d"
        "JKM\x8a"
        "GN\x88\x89"
        "\x94qrhj\x80\x95";
    return kAccepted.find(static_cast<char>(op)) != std::string_view::npos;
  }

  std::optional<Stopped> Loop(UnpickleResult& r) {
    for (;;) {
      op_offset_ = pos_;
      if (pos_ >= data_.size()) return Truncated();
      uint8_t op = static_cast<uint8_t>(data_[pos_++]);
      if (!IsAccepted(op)) {
        if (OpcodeName(op).empty()) return Malformed("no pickle protocol defines this byte");
        return Stopped{Stop::kForbidden,
                       "Flight Recorder dumps never hold this opcode; the pickle is refused and "
                       "nothing of it is run"};
      }
      if (auto s = Step(op, r)) return s;
      if (op == '.') return std::nullopt;
    }
  }

  std::optional<Stopped> Step(uint8_t op, UnpickleResult& r) {
    switch (op) {
      case 0x80: {  // PROTO
        std::string_view b;
        if (!Take(1, b)) return Truncated();
        if (static_cast<uint8_t>(b[0]) > 5) {
          return Malformed(fmt::format("protocol {} (5 is the newest)", uint8_t(b[0])));
        }
        return std::nullopt;
      }
      case 0x95: {  // FRAME: a length; the opcodes follow as usual
        uint64_t n;
        if (!TakeLe(n)) return Truncated();
        return std::nullopt;
      }
      case '.': {  // STOP
        if (stack_.empty()) return Malformed("STOP with nothing on the stack");
        r.value = stack_.back();
        return std::nullopt;
      }
      case '(':
        if (marks_.size() >= kMaxNodes) return Malformed("too many MARKs");
        marks_.push_back(stack_.size());
        return std::nullopt;
      case '0':  // POP
        if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) {
          return Malformed("pops an empty stack");
        }
        stack_.pop_back();
        return std::nullopt;
      case '1': {  // POP_MARK
        size_t m;
        if (auto s = PopMark(m)) return s;
        stack_.resize(m);
        return std::nullopt;
      }
      case '}': return Push(Value::Kind::kDict);
      case ']': return Push(Value::Kind::kList);
      case ')': return Push(Value::Kind::kTuple);
      case 'N': return Push(Value::Kind::kNone);
      case 0x88:
      case 0x89: {
        ValuePtr v;
        if (auto s = Push(Value::Kind::kBool, &v)) return s;
        v->b = op == 0x88;
        return std::nullopt;
      }
      case 't': {
        size_t m;
        if (auto s = PopMark(m)) return s;
        return MakeTuple(m);
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        size_t n = op - 0x84u;
        size_t floor = marks_.empty() ? 0 : marks_.back();
        if (stack_.size() < floor + n) return Malformed("fewer items on the stack than it takes");
        return MakeTuple(stack_.size() - n);
      }
      case 'd':
      case 'l': {  // DICT / LIST: the items since the mark
        size_t m;
        if (auto s = PopMark(m)) return s;
        ValuePtr c;
        if (auto s = New(op == 'd' ? Value::Kind::kDict : Value::Kind::kList, c)) return s;
        std::vector<ValuePtr> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
        stack_.resize(m);
        stack_.push_back(c);
        size_t from = stack_.size();
        stack_.insert(stack_.end(), items.begin(), items.end());
        return AddItems(*c, from);
      }
      case 's':
      case 'a': {  // SETITEM / APPEND: one item (or pair) into the value below
        size_t n = op == 's' ? 2 : 1;
        size_t floor = marks_.empty() ? 0 : marks_.back();
        if (stack_.size() < floor + n + 1)
          return Malformed("fewer items on the stack than it takes");
        return AddItems(*stack_[stack_.size() - n - 1], stack_.size() - n);
      }
      case 'u':
      case 'e': {  // SETITEMS / APPENDS: the items since the mark
        size_t m;
        if (auto s = PopMark(m)) return s;
        if (m == 0) return Malformed("no value below the MARK to add items to");
        return AddItems(*stack_[m - 1], m);
      }
      default: return StepValue(op);
    }
  }

  // Opcodes that push a scalar, or put / get the memo.
  std::optional<Stopped> StepValue(uint8_t op) {
    switch (op) {
      case 'X': {
        uint32_t n;
        if (!TakeLe(n)) return Truncated();
        return String(n);
      }
      case 0x8c: {
        std::string_view b;
        if (!Take(1, b)) return Truncated();
        return String(static_cast<uint8_t>(b[0]));
      }
      case 0x8d: {
        uint64_t n;
        if (!TakeLe(n)) return Truncated();
        if (n > data_.size()) return Truncated();
        return String(static_cast<size_t>(n));
      }
      case 'J': {
        int32_t n;
        if (!TakeLe(n)) return Truncated();
        return Int(n);
      }
      case 'K': {
        uint8_t n;
        if (!TakeLe(n)) return Truncated();
        return Int(n);
      }
      case 'M': {
        uint16_t n;
        if (!TakeLe(n)) return Truncated();
        return Int(n);
      }
      case 0x8a: {  // LONG1: n bytes, little-endian two's complement
        std::string_view len, b;
        if (!Take(1, len)) return Truncated();
        size_t n = static_cast<uint8_t>(len[0]);
        if (!Take(n, b)) return Truncated();
        if (n > 8) return Malformed(fmt::format("an integer of {} bytes (over 64 bits)", n));
        uint64_t u = 0;
        for (size_t k = 0; k < n; ++k) u |= uint64_t(static_cast<uint8_t>(b[k])) << (8 * k);
        if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * n);
        return Int(static_cast<int64_t>(u));
      }
      case 'G': {  // BINFLOAT: big-endian double
        std::string_view b;
        if (!Take(8, b)) return Truncated();
        uint64_t u = 0;
        for (size_t k = 0; k < 8; ++k) u = (u << 8) | static_cast<uint8_t>(b[k]);
        ValuePtr v;
        if (auto s = Push(Value::Kind::kFloat, &v)) return s;
        v->f = std::bit_cast<double>(u);
        return std::nullopt;
      }
      case 0x94: return Memo(memo_.size());
      case 'q': {
        uint8_t id;
        if (!TakeLe(id)) return Truncated();
        return Memo(id);
      }
      case 'r': {
        uint32_t id;
        if (!TakeLe(id)) return Truncated();
        return Memo(id);
      }
      case 'h': {
        uint8_t id;
        if (!TakeLe(id)) return Truncated();
        return Get(id);
      }
      case 'j': {
        uint32_t id;
        if (!TakeLe(id)) return Truncated();
        return Get(id);
      }
      default: break;
    }
    return Malformed("not handled");
  }

  std::optional<Stopped> Int(int64_t n) {
    ValuePtr v;
    if (auto s = Push(Value::Kind::kInt, &v)) return s;
    v->i = n;
    return std::nullopt;
  }

  // Closes the containers still open, innermost first, with the complete
  // items above each MARK (a key without its value is dropped); the items
  // of a MARK with no open list or dict below it make a tuple.
  ValuePtr Salvage() {
    while (!marks_.empty()) {
      size_t m = std::min(marks_.back(), stack_.size());
      marks_.pop_back();
      Value* target = m > 0 ? stack_[m - 1].get() : nullptr;
      bool open = target != nullptr && !target->frozen &&
                  (target->kind == Value::Kind::kList || target->kind == Value::Kind::kDict);
      if (open) {
        if (target->kind == Value::Kind::kDict && (stack_.size() - m) % 2 != 0) stack_.pop_back();
        if (AddItems(*target, m)) stack_.resize(m);
        target->partial = true;
      } else {
        if (MakeTuple(m)) stack_.resize(m);
        if (stack_.size() > m) stack_.back()->partial = true;
      }
    }
    if (stack_.empty()) return nullptr;
    return stack_.front();
  }

  std::string_view data_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  uint64_t nodes_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
};

}  // namespace

const Value* Value::Get(std::string_view key) const {
  if (kind != Kind::kDict) return nullptr;
  for (const auto& [k, v] : dict) {
    if (k->kind == Kind::kString && k->s == key) return v.get();
  }
  return nullptr;
}

std::string_view KindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList: return "list";
    case Value::Kind::kTuple: return "tuple";
    case Value::Kind::kDict: return "dict";
  }
  return "?";
}

std::string_view OpcodeName(uint8_t op) {
  for (const OpInfo& o : kOpcodes) {
    if (o.code == op) return o.name;
  }
  return "";
}

UnpickleResult Unpickle(std::string_view data) { return Unpickler(data).Run(); }

}  // namespace laggard::pickle
