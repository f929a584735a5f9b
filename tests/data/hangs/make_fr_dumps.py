#!/usr/bin/env python3
"""Writes the PyTorch Flight Recorder dumps of tests/data/hangs/.

No real dump is at hand, so these are made to be byte-for-byte what torch's
writer lays out for one made-up hang, per dump version:

  a 4-rank job, default group "0" (default_pg, ranks [0, 1, 2, 3]) and a
  subgroup "1" (dp_shard, ranks [0, 2]); ranks 0, 1, 3 enqueued and started
  all_reduce #6 of group 0 and wait in it; rank 2 never enqueued it (its
  last enqueued / completed collective is #5), so the watchdog of the others
  times out at #6 and they dump.

How torch writes a pickle dump (checked in pytorch/pytorch):
  - torch/csrc/distributed/c10d/FlightRecorder*.{hpp,cpp} (older:
    NCCLUtils.hpp, NCCLTraceBuffer::dump) build a c10::Dict of c10::IValue
    and pickle it with pickle_str(): torch::jit::Pickler(writer, nullptr,
    nullptr, nullptr, nullptr, /*tag_aggregates=*/false), protocol(),
    pushIValue(), stop(). That is torch's own C++ pickler
    (torch/csrc/jit/serialization/pickler.cpp), not Python's, so
    TorchPickler below writes its opcodes: PROTO 2; a dict as EMPTY_DICT
    MARK k v ... SETITEMS; a list as EMPTY_LIST MARK ... APPENDS; tuples of
    2 as TUPLE2; every string memoized by value (BINUNICODE + BINPUT, then
    BINGET on repeats); a dict or list held twice (the frame dicts shared by
    entries' stacks) memoized by identity after it is written (BINPUT, then
    BINGET); ints as BININT1 / BININT2 (unsigned) / BININT / LONG1 of 8
    bytes; floats as BINFLOAT; None, NEWTRUE, NEWFALSE; STOP. Memo ids past
    255 use LONG_BINPUT / LONG_BINGET. Insertion order is kept (c10::Dict).
  - Each file is checked with Python's own pickle.loads(), which must give
    back the dict that was written.

Dump versions written (the DEFINE_CONSTANT(version_val, ...) of the file):
  "2.3"   NCCLUtils.hpp NCCLTraceBuffer (torch 2.4): top level version,
          pg_config, pg_status, entries; entry keys frames, record_id,
          pg_id, process_group, collective_seq_id, p2p_seq_id, op_id,
          profiling_name, time_created_ns, [duration_ms], input_sizes,
          input_dtypes, output_sizes, output_dtypes, state,
          time_discovered_started_ns, time_discovered_completed_ns, retired,
          timeout_ms, is_p2p.
  "2.7"   FlightRecorder.hpp FlightRecorder<EventType>::get_dump: as 2.3
          plus a top-level nccl_version string after pg_config.
  "2.10"  FlightRecorderDetail.hpp dump_dict: comm_lib_version (instead of
          nccl_version) after pg_config; entries gain thread_name and
          thread_id after process_group.
  JSON    FlightRecorderDetail.hpp dump_json ("2.10"): nlohmann::json, keys
          sorted (std::map), compact; pg_status values are decimal strings;
          time_discovered_*_ns is 0 when not discovered; no frames;
          "entries" left out when empty.
Common to all: pg_config maps the group name to {name, desc, ranks}, ranks a
string from ranks_str(): "[0, 1, 2, 3]"; pg_status maps the group's uid
(std::to_string(pg_id)) to {last_enqueued_collective,
last_started_collective, last_completed_collective} (ints, -1 for none);
duration_ms is a C++ float (written as a double); state is "scheduled",
"started" or "completed" from the discovered times.

Damaged and foreign files:
  damaged/nccl_trace_rank_3_cut   rank 3's 2.10 dump cut inside its 6th entry
  damaged/nccl_trace_rank_5_global  a 2.10 dump whose frames hold a GLOBAL +
                                  REDUCE (posix.system): must be refused
  python_p5/nccl_trace_rank_2     rank 2's 2.10 dict re-pickled by Python
                                  with protocol 5 (FRAME, MEMOIZE,
                                  SHORT_BINUNICODE): not what torch writes,
                                  what a script that loads and saves a dump
                                  gives; read all the same

Multi-group dump sets (version 2.10), one folder of 16 dumps each, for a
16-rank job laid out as Megatron lays out tp=2, dp=4, pp=2 (rank = tp + 2 *
dp + 8 * pp); see mg_groups() and tests/data/hangs/README.md for the answers:
  fr_multigroup_host_stop/        rank 5's host stops issuing after the
                                  second all_reduce of its last step
  fr_multigroup_never_completed/  tensor-parallel group [6, 7]'s third
                                  all_reduce of the last step is enqueued
                                  and started by both, never completed
What makes them real dumps' shape and not the 4-rank one's:
  - a group's pg_status key and entries' pg_id are the process's own
    counter (ProcessGroupNCCL's local id: the n-th group this process is a
    member of), while pg_config keys and entries' process_group[0] are the
    group's name (torch's group counter, which every rank advances for every
    new_group() call). Stage-0 ranks are members of one more group
    (POSITION_EMBEDDING_GROUP) than stage-1 ranks, created early, so
    "PG 2" is DATA_PARALLEL_GROUP on ranks 0-7 and
    TENSOR_MODEL_PARALLEL_GROUP on ranks 8-15;
  - four DATA_PARALLEL_GROUPs share one description with different ranks;
  - pg_config holds only the rank's own groups, in std::map order of (name,
    desc); pg_status only groups that recorded a collective (all_pg_status_
    is filled by record()), in id order;
  - the ring buffer keeps the last steps only: the POSITION_EMBEDDING_GROUP
    collective of the job's start has left it, so its pg_status id is tied
    to no entry.
The hang itself comes from a small model of the job run to a fixed point:
each rank's host enqueues its ops in order and blocks at a .item() (after
the grads' reduce-scatter and at the step's end) until its GPU finished
everything before; each rank's GPU runs its collectives one at a time in
the order enqueued; a collective completes once every member's GPU
started it.

Run from anywhere: python3 tests/data/hangs/make_fr_dumps.py
"""

import io
import json
import os
import pickle
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

WORLD = [0, 1, 2, 3]
SHARD = [0, 2]
T0 = 1718000000_000_000_000  # time_created_ns of record 0 (ns since epoch)
TIMEOUT_MS = 600000


def f32(x):
    """A C++ float as the dump carries it (widened to double)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def ranks_str(ranks):
    return "[" + ", ".join(str(r) for r in ranks) + "]"


# Frames are symbolized once per dump and shared by the entries' stacks
# (getCollectiveTrace: all_frames), so the same dict objects recur.
FRAMES = {
    "all_reduce": {"name": "all_reduce", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 2501},
    "wrapper": {"name": "wrapper", "filename": "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py", "line": 83},
    "reduce_grads": {"name": "reduce_grads", "filename": "/job/train.py", "line": 41},
    "all_gather": {"name": "all_gather_into_tensor", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 3712},
    "step": {"name": "train_step", "filename": "/job/train.py", "line": 77},
    "module": {"name": "<module>", "filename": "/job/train.py", "line": 120},
}


def stack(kind):
    first = FRAMES["all_reduce"] if kind == "all_reduce" else FRAMES["all_gather"]
    return [first, FRAMES["wrapper"], FRAMES["reduce_grads"], FRAMES["step"], FRAMES["module"]]


def ops_of(rank):
    """The ops rank `rank` enqueued: (pg, seq, kind, numel, state)."""
    ops = []
    seq0 = 0
    for seq in range(1, 7):
        ops.append(("0", seq, "all_reduce", 1048576))
        if rank in SHARD and seq in (2, 4):
            seq0 += 1
            ops.append(("1", seq0, "_allgather_base", 262144))
    if rank == 2:
        ops = [o for o in ops if not (o[0] == "0" and o[1] == 6)]
    return ops


def entries_of(rank, version, with_frames=True):
    entries = []
    t = T0 + rank * 1000
    for record_id, (pg, seq, kind, numel) in enumerate(ops_of(rank)):
        created = t + record_id * 250_000_000
        last = pg == "0" and seq == 6
        e = {}
        if with_frames:
            e["frames"] = stack("all_reduce" if kind == "all_reduce" else "all_gather")
        e["record_id"] = record_id
        e["pg_id"] = int(pg)
        e["process_group"] = (pg, "default_pg" if pg == "0" else "dp_shard")
        if version == "2.10":
            e["thread_name"] = "pt_main_thread"
            e["thread_id"] = "140213566134080"
        e["collective_seq_id"] = seq
        e["p2p_seq_id"] = 0
        e["op_id"] = seq
        e["profiling_name"] = "nccl:" + ("all_reduce" if kind == "all_reduce" else "_allgather_base")
        e["time_created_ns"] = created
        if not last:
            e["duration_ms"] = f32(3.25 + 0.5 * record_id)
        if kind == "all_reduce":
            e["input_sizes"] = [[numel]]
            e["input_dtypes"] = ["Float"]
            e["output_sizes"] = [[numel]]
            e["output_dtypes"] = ["Float"]
        else:
            e["input_sizes"] = [[numel // 2]]
            e["input_dtypes"] = ["BFloat16"]
            e["output_sizes"] = [[numel]]
            e["output_dtypes"] = ["BFloat16"]
        e["state"] = "started" if last else "completed"
        e["time_discovered_started_ns"] = created + 40_000
        e["time_discovered_completed_ns"] = None if last else created + 4_000_000
        e["retired"] = not last
        e["timeout_ms"] = TIMEOUT_MS
        e["is_p2p"] = False
        entries.append(e)
    return entries


def status_of(rank):
    last0 = 5 if rank == 2 else 6
    status = {
        "0": {
            "last_enqueued_collective": last0,
            "last_started_collective": last0,
            "last_completed_collective": 5,
        }
    }
    if rank in SHARD:
        status["1"] = {
            "last_enqueued_collective": 2,
            "last_started_collective": 2,
            "last_completed_collective": 2,
        }
    return status


def pg_config_of(rank):
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": ranks_str(WORLD)}}
    if rank in SHARD:
        config["1"] = {"name": "1", "desc": "dp_shard", "ranks": ranks_str(SHARD)}
    return config


def dump_of(rank, version):
    d = {"version": version, "pg_config": pg_config_of(rank)}
    if version == "2.7":
        d["nccl_version"] = "2.21.5"
    if version == "2.10":
        d["comm_lib_version"] = "2.27.3"
    d["pg_status"] = status_of(rank)
    d["entries"] = entries_of(rank, version)
    return d


def json_dump_of(rank):
    """dump_json of version 2.10: nlohmann::json (std::map: keys sorted)."""
    entries = []
    for e in entries_of(rank, "2.10", with_frames=False):
        e = dict(e)
        e["process_group"] = list(e["process_group"])
        if e["time_discovered_completed_ns"] is None:
            e["time_discovered_completed_ns"] = 0
        entries.append(e)
    status = {
        pg: {k: str(v) for k, v in s.items()} for pg, s in status_of(rank).items()
    }
    d = {
        "version": "2.10",
        "comm_lib_version": "2.27.3",
        "pg_config": pg_config_of(rank),
        "pg_status": status,
        "entries": entries,
    }
    return json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class TorchPickler:
    """torch::jit::Pickler with tag_aggregates = false (see the docstring)."""

    def __init__(self, root):
        self.out = io.BytesIO()
        self.memo_id = 0
        self.strings = {}
        self.by_identity = {}
        self.uses = {}
        self._count_uses(root)

    def _count_uses(self, v):
        if isinstance(v, (dict, list)):
            self.uses[id(v)] = self.uses.get(id(v), 0) + 1
            if self.uses[id(v)] > 1:
                return
            for x in v.items() if isinstance(v, dict) else v:
                if isinstance(x, tuple) and isinstance(v, dict):
                    self._count_uses(x[0])
                    self._count_uses(x[1])
                else:
                    self._count_uses(x)
        elif isinstance(v, tuple):
            for x in v:
                self._count_uses(x)

    def w(self, b):
        self.out.write(b)

    def next_binput(self):
        if self.memo_id <= 255:
            self.w(b"q" + bytes([self.memo_id]))
        else:
            self.w(b"r" + struct.pack("<I", self.memo_id))
        self.memo_id += 1
        return self.memo_id - 1

    def binget(self, i):
        if i <= 255:
            self.w(b"h" + bytes([i]))
        else:
            self.w(b"j" + struct.pack("<I", i))

    def push(self, v):
        shared = isinstance(v, (dict, list)) and self.uses.get(id(v), 0) > 1
        if shared and id(v) in self.by_identity:
            return self.binget(self.by_identity[id(v)])
        self.push_impl(v)
        if shared:
            self.by_identity[id(v)] = self.next_binput()

    def push_impl(self, v):
        if v is None:
            self.w(b"N")
        elif v is True:
            self.w(b"\x88")
        elif v is False:
            self.w(b"\x89")
        elif isinstance(v, int):
            if 0 <= v <= 0xFF:
                self.w(b"K" + struct.pack("<B", v))
            elif 0 <= v <= 0xFFFF:
                self.w(b"M" + struct.pack("<H", v))
            elif -(2**31) <= v < 2**31:
                self.w(b"J" + struct.pack("<i", v))
            else:
                self.w(b"\x8a\x08" + struct.pack("<q", v))
        elif isinstance(v, float):
            self.w(b"G" + struct.pack(">d", v))
        elif isinstance(v, str):
            if v in self.strings:
                return self.binget(self.strings[v])
            b = v.encode("utf-8")
            self.w(b"X" + struct.pack("<I", len(b)) + b)
            self.strings[v] = self.next_binput()
        elif isinstance(v, tuple):
            if len(v) == 0:
                self.w(b")")
            elif len(v) <= 3:
                for x in v:
                    self.push(x)
                self.w({1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(v)])
            else:
                self.w(b"(")
                for x in v:
                    self.push(x)
                self.w(b"t")
        elif isinstance(v, dict):
            self.w(b"}(")
            for k, x in v.items():
                self.push(k)
                self.push(x)
            self.w(b"u")
        elif isinstance(v, list):
            self.w(b"](")
            for x in v:
                self.push(x)
            self.w(b"e")
        else:
            raise TypeError(type(v))

    def dumps(self, v):
        self.w(b"\x80\x02")
        self.push(v)
        self.w(b".")
        return self.out.getvalue()


def torch_pickle(d):
    data = TorchPickler(d).dumps(d)
    assert pickle.loads(data) == d, "Python's unpickler reads back another dict"
    return data


def write(rel, data):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


# --- Multi-group dumps: a 16-rank tp=2, dp=4, pp=2 job --------------------

MG_WORLD = 16
MG_STEPS_BEFORE = 11311  # steps completed before the ring buffer's window
MG_WINDOW_STEPS = 3      # steps enqueued in the window; the last one hangs
MG_T0 = 1721000000_000_000_000
MG_STEP_NS = 900_000_000
MG_THREAD_ID = "139872120207168"
SYNC = None  # the host waits (a .item()) for everything its GPU was given


def mg_groups():
    """(name, desc, ranks) in the order every rank calls new_group()."""
    made = [("default_pg", list(range(MG_WORLD)))]
    made += [("POSITION_EMBEDDING_GROUP", [r]) for r in range(8)]
    for pp in range(2):
        for tp in range(2):
            made.append(("DATA_PARALLEL_GROUP", [tp + 2 * dp + 8 * pp for dp in range(4)]))
    made += [("TENSOR_MODEL_PARALLEL_GROUP", [2 * k, 2 * k + 1]) for k in range(8)]
    made += [("PIPELINE_MODEL_PARALLEL_GROUP", [r, r + 8]) for r in range(8)]
    made += [("EMBEDDING_GROUP", [r, r + 8]) for r in range(8)]
    return [(str(i), desc, ranks) for i, (desc, ranks) in enumerate(made)]


def mg_member_groups(rank):
    """The groups `rank` is a member of, with its process's local id."""
    mine = [g for g in mg_groups() if rank in g[2]]
    return {g[0]: (local_id, g) for local_id, g in enumerate(mine)}


def mg_group_of(kind, rank):
    for name, desc, ranks in mg_groups():
        if rank not in ranks:
            continue
        if (kind, desc) in (("WORLD", "default_pg"), ("TP", "TENSOR_MODEL_PARALLEL_GROUP"),
                            ("DP", "DATA_PARALLEL_GROUP"), ("EMB", "EMBEDDING_GROUP"),
                            ("POS", "POSITION_EMBEDDING_GROUP")):
            return (name, desc, ranks)
    return None


MG_FRAMES = {
    "all_reduce": FRAMES["all_reduce"],
    "reduce_scatter": {"name": "reduce_scatter_tensor", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 3984},
    "all_gather": FRAMES["all_gather"],
    "wrapper": FRAMES["wrapper"],
    "forward": {"name": "reduce_from_tensor_model_parallel_region", "filename": "/job/megatron/core/tensor_parallel/mappings.py", "line": 446},
    "backward": {"name": "backward", "filename": "/job/megatron/core/tensor_parallel/layers.py", "line": 517},
    "reduce_grads": {"name": "finish_grad_sync", "filename": "/job/megatron/core/distributed/param_and_grad_buffer.py", "line": 455},
    "embedding": {"name": "_allreduce_word_embedding_grads", "filename": "/job/megatron/core/distributed/finalize_model_grads.py", "line": 120},
    "gather": {"name": "start_param_sync", "filename": "/job/megatron/core/distributed/param_and_grad_buffer.py", "line": 390},
    "log": {"name": "training_log", "filename": "/job/megatron/training/training.py", "line": 1034},
    "train_step": {"name": "train_step", "filename": "/job/megatron/training/training.py", "line": 742},
    "module": {"name": "<module>", "filename": "/job/pretrain_gpt.py", "line": 260},
}

# One step's ops in the order every rank enqueues them: (group kind,
# profiling_name, input sizes, output sizes, dtype, collective frame, the
# Python frame that called it).
MG_STEP = [
    ("TP", "nccl:all_reduce", [[4096, 8192]], [[4096, 8192]], "BFloat16", "all_reduce", "forward"),
    ("TP", "nccl:all_reduce", [[4096, 8192]], [[4096, 8192]], "BFloat16", "all_reduce", "forward"),
    ("TP", "nccl:all_reduce", [[4096, 8192]], [[4096, 8192]], "BFloat16", "all_reduce", "backward"),
    ("TP", "nccl:all_reduce", [[4096, 8192]], [[4096, 8192]], "BFloat16", "all_reduce", "backward"),
    ("DP", "nccl:_reduce_scatter_base", [[16777216]], [[4194304]], "Float", "reduce_scatter", "reduce_grads"),
    SYNC,  # the grad norm's .item()
    ("EMB", "nccl:all_reduce", [[50304, 4096]], [[50304, 4096]], "BFloat16", "all_reduce", "embedding"),
    ("DP", "nccl:_allgather_base", [[4194304]], [[16777216]], "BFloat16", "all_gather", "gather"),
    ("WORLD", "nccl:all_reduce", [[1]], [[1]], "Float", "all_reduce", "log"),
    SYNC,  # loss.item() at the step's end
]
MG_PER_STEP = {"TP": 4, "DP": 2, "EMB": 1, "WORLD": 1}
MG_INIT = {"TP": 0, "DP": 0, "EMB": 0, "WORLD": 3}  # the default group's start-up barriers


def mg_simulate(stop=None, stuck=None):
    """The job run to a fixed point. stop = (rank, n): that rank's host
    enqueues only the first n ops of the last step. stuck = (rank, n): the
    n-th op of the last step of that rank's group never completes.
    Returns {rank: [op dict]} (SYNC markers dropped) with enqueued /
    started / completed set."""
    plan = {}
    for r in range(MG_WORLD):
        seq = {k: MG_INIT[k] + MG_PER_STEP[k] * MG_STEPS_BEFORE for k in MG_PER_STEP}
        items = []
        for step in range(MG_WINDOW_STEPS):
            at = 0
            for item in MG_STEP:
                if item is SYNC:
                    items.append(SYNC)
                    continue
                kind, op, ins, outs, dtype, coll, caller = item
                seq[kind] += 1
                items.append({"kind": kind, "group": mg_group_of(kind, r), "seq": seq[kind],
                              "op": op, "ins": ins, "outs": outs, "dtype": dtype,
                              "coll": coll, "caller": caller, "step": step, "at": at,
                              "enqueued": False, "started": False, "completed": False})
                at += 1
        plan[r] = items
    last = MG_WINDOW_STEPS - 1
    stuck_key = None
    if stuck is not None:
        op = [o for o in plan[stuck[0]] if o is not SYNC and o["step"] == last][stuck[1]]
        stuck_key = (op["group"][0], op["seq"])
    host = {r: 0 for r in range(MG_WORLD)}
    changed = True
    while changed:
        changed = False
        for r, items in plan.items():
            while host[r] < len(items):
                item = items[host[r]]
                if item is SYNC:
                    if not all(o["completed"] for o in items[: host[r]] if o is not SYNC):
                        break
                elif stop is not None and r == stop[0] and item["step"] == last and item["at"] >= stop[1]:
                    break
                else:
                    item["enqueued"] = True
                host[r] += 1
                changed = True
            for o in items:  # the GPU: one collective at a time, in order
                if o is SYNC or o["completed"]:
                    continue
                if o["enqueued"] and not o["started"]:
                    o["started"] = True
                    changed = True
                break
        by_key = {}
        for r, items in plan.items():
            for o in items:
                if o is not SYNC:
                    by_key.setdefault((o["group"][0], o["seq"]), []).append(o)
        for key, ops in by_key.items():
            if key == stuck_key or ops[0]["completed"]:
                continue
            if len(ops) == len(ops[0]["group"][2]) and all(o["started"] for o in ops):
                for o in ops:
                    o["completed"] = True
                changed = True
    return {r: [o for o in items if o is not SYNC] for r, items in plan.items()}


def mg_dump_of(rank, ops):
    groups = mg_member_groups(rank)
    record_id = sum(MG_PER_STEP.values()) * MG_STEPS_BEFORE + MG_INIT["WORLD"]
    if rank < 8:
        record_id += 1  # its POSITION_EMBEDDING_GROUP all_reduce at start-up
    entries = []
    t_rank = MG_T0 + rank * 37_000
    for o in ops:
        if not o["enqueued"]:
            continue
        name, desc, _ = o["group"]
        created = t_rank + o["step"] * MG_STEP_NS + o["at"] * 90_000_000
        started = created + 40_000 if o["started"] else None
        completed = created + 6_000_000 if o["completed"] else None
        e = {
            "frames": [MG_FRAMES[o["coll"]], MG_FRAMES["wrapper"], MG_FRAMES[o["caller"]],
                       MG_FRAMES["train_step"], MG_FRAMES["module"]],
            "record_id": record_id,
            "pg_id": groups[name][0],
            "process_group": (name, desc),
            "thread_name": "pt_main_thread",
            "thread_id": MG_THREAD_ID,
            "collective_seq_id": o["seq"],
            "p2p_seq_id": 0,
            "op_id": o["seq"],
            "profiling_name": o["op"],
            "time_created_ns": created,
        }
        if completed is not None:
            e["duration_ms"] = f32(5.75)
        e["input_sizes"] = o["ins"]
        e["input_dtypes"] = [o["dtype"]]
        e["output_sizes"] = o["outs"]
        e["output_dtypes"] = [o["dtype"]]
        e["state"] = "completed" if completed else ("started" if started else "scheduled")
        e["time_discovered_started_ns"] = started
        e["time_discovered_completed_ns"] = completed
        e["retired"] = completed is not None
        e["timeout_ms"] = TIMEOUT_MS
        e["is_p2p"] = False
        entries.append(e)
        record_id += 1

    status = {}
    for name, (local_id, (_, desc, _)) in groups.items():
        if desc == "PIPELINE_MODEL_PARALLEL_GROUP":
            continue  # p2p only in this job: no collective recorded
        if desc == "POSITION_EMBEDDING_GROUP":
            status[local_id] = (1, 1, 1)
            continue
        kind = {"default_pg": "WORLD", "TENSOR_MODEL_PARALLEL_GROUP": "TP",
                "DATA_PARALLEL_GROUP": "DP", "EMBEDDING_GROUP": "EMB"}[desc]
        before = MG_INIT[kind] + MG_PER_STEP[kind] * MG_STEPS_BEFORE
        mine = [o for o in ops if o["group"][0] == name]

        def last(flag):
            return max([o["seq"] for o in mine if o[flag]], default=before)

        status[local_id] = (last("enqueued"), last("started"), last("completed"))
    pg_status = {
        str(local_id): {
            "last_enqueued_collective": s[0],
            "last_started_collective": s[1],
            "last_completed_collective": s[2],
        }
        for local_id, s in sorted(status.items())
    }
    pg_config = {
        name: {"name": name, "desc": desc, "ranks": ranks_str(ranks)}
        for name, (_, (_, desc, ranks)) in sorted(groups.items(), key=lambda kv: (kv[0], kv[1][1][1]))
    }
    return {
        "version": "2.10",
        "pg_config": pg_config,
        "comm_lib_version": "2.27.3",
        "pg_status": pg_status,
        "entries": entries,
    }


def mg_write(folder, ops_of):
    for rank in range(MG_WORLD):
        write(f"{folder}/nccl_trace_rank_{rank}", torch_pickle(mg_dump_of(rank, ops_of[rank])))


def main():
    for rank in WORLD:
        write(f"fr_v2.10/nccl_trace_rank_{rank}", torch_pickle(dump_of(rank, "2.10")))
    for rank in (0, 1):
        write(f"fr_v2.3/nccl_trace_rank_{rank}", torch_pickle(dump_of(rank, "2.3")))
    write("fr_v2.7/nccl_trace_rank_0", torch_pickle(dump_of(0, "2.7")))
    text = json_dump_of(1)
    assert json.loads(text)["version"] == "2.10"
    write("fr_json/nccl_trace_rank_1.json", text)

    # Cut inside the 6th entry (record_id 5) of rank 3: the bytes up to the
    # start of its "record_id" value, plus a few.
    whole = torch_pickle(dump_of(3, "2.10"))
    marker = struct.pack("<I", 9) + b"record_id"
    first = whole.index(b"X" + marker)
    # record_id is memoized after its first use: later entries BINGET it;
    # find the 6th "record_id" key occurrence (BINGET of its memo id).
    memo = whole[first + 14 + 1]
    get = b"h" + bytes([memo])
    at = first
    for _ in range(5):
        at = whole.index(get, at + 1)
    write("damaged/nccl_trace_rank_3_cut", whole[: at + 12])

    # A dump whose frames list holds posix.system("true") by GLOBAL + REDUCE:
    # torch never writes either; the reader must refuse it without running it.
    d = dump_of(1, "2.10")
    evil = TorchPickler(d).dumps(d)
    frames_key = evil.index(b"X" + struct.pack("<I", 6) + b"frames")
    inject = b"cposix\nsystem\nX\x04\x00\x00\x00true\x85R0"
    evil = evil[: frames_key] + inject + evil[frames_key:]
    write("damaged/nccl_trace_rank_5_global", evil)

    write("python_p5/nccl_trace_rank_2", pickle.dumps(dump_of(2, "2.10"), protocol=5))

    # Rank 5's host stops after the second all_reduce of the last step.
    mg_write("fr_multigroup_host_stop", mg_simulate(stop=(5, 2)))
    # The third all_reduce of the last step of TENSOR_MODEL_PARALLEL_GROUP
    # [6, 7] (rank 6's third op) never completes.
    mg_write("fr_multigroup_never_completed", mg_simulate(stuck=(6, 2)))


if __name__ == "__main__":
    main()
