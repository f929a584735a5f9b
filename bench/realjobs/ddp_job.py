"""One rank of a real PyTorch DDP training job with an injected fault.

Run by bench/realjobs/realjobs.py, one process per rank, with the usual
torch.distributed environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
Uses Debian's python3-torch (/usr/bin/python3), gloo, CPU only.

It writes exactly what a user of such a job has, into --out:
  rank<R>.log           the article's lines: "rank R, step S, time T.TTTTs"
  steps_rank<R>.csv     the same loop's step table: rank,step,step_time_ms,cpu_ms,
                        cpu_wait_ms,cpu_probe_us (the training thread's time on
                        a CPU and waiting for one in the step, and the time of
                        a fixed probe after it: laggard_step.thread_cpu(),
                        laggard_step.cpu_probe())
  trace_rank<R>.json    torch.profiler's trace of the profiled steps

Faults (--fault, this rank only; several may be given):
  compute:F             every GEMM sees F times the rows; the extra rows are
                        sliced off before the loss, so every rank runs the same
                        op sequence and only durations (and shapes) change, as
                        on a down-clocked GPU
  data_stall:MS         the dataset's __getitem__ sleeps MS per batch, inside
                        torch's DataLoader
  host_stall:MS         the loop sleeps MS between the batch and forward
  periodic:MS:K         the loop sleeps MS every K-th step
  onset:S               faults act only from loop step S on
  hang_after:S          at step S, after the backward's all-reduce and the
                        optimizer, the rank stops for good before its step
                        ends (no step line): the others report step S and
                        block in step S+1's all-reduce
  hang_before:S         at step S the rank stops before its forward: every
                        rank's last step is S-1
  die:S                 at step S the rank raises before its forward and its
                        process exits (a Python traceback in its stderr): the
                        others lose their connections to it
  skip_metric:S         with --metric-allreduce on every rank (an all-reduce of
                        the loss after each step, as a job that logs a global
                        loss does), this rank skips that all-reduce at step S:
                        its next collective meets the others' metric one
A communication-throttled rank needs no flag here: the launcher runs it in
its own network namespace behind a `tc` rate limit.

The training itself is ordinary: an MLP on random data, SGD, one process
thread (torch.set_num_threads(1)) so that N ranks share this host's cores
as evenly as the kernel schedules them.
"""

import argparse
import csv
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import laggard_step  # noqa: E402  (python/laggard_step.py)


def hang_forever():
    """A hung rank: alive, holding its sockets, doing nothing (the launcher kills it)."""
    while True:
        time.sleep(3600)


def parse_faults(specs):
    faults = {"compute": 1.0, "data_stall_ms": 0.0, "host_stall_ms": 0.0,
              "periodic_ms": 0.0, "periodic_every": 0, "onset": 0,
              "hang_after": None, "hang_before": None, "die": None, "skip_metric": None}
    for spec in specs:
        kind, _, rest = spec.partition(":")
        args = rest.split(":") if rest else []
        if kind == "compute":
            faults["compute"] = float(args[0])
        elif kind == "data_stall":
            faults["data_stall_ms"] = float(args[0])
        elif kind == "host_stall":
            faults["host_stall_ms"] = float(args[0])
        elif kind == "periodic":
            faults["periodic_ms"] = float(args[0])
            faults["periodic_every"] = int(args[1])
        elif kind == "onset":
            faults["onset"] = int(args[0])
        elif kind in ("hang_after", "hang_before", "die", "skip_metric"):
            faults[kind] = int(args[0])
        else:
            sys.exit(f"ddp_job.py: unknown fault {spec!r}")
    return faults


class RandomBatches(Dataset):
    """Random (x, y) samples; a data stall sleeps once per batch."""

    def __init__(self, samples, features, classes, batch, stall_ms, onset, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(samples, features, generator=g)
        self.y = torch.randint(0, classes, (samples,), generator=g)
        self.batch = batch
        self.stall_ms = stall_ms
        self.onset = onset
        self.current_step = 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if (self.stall_ms > 0 and i % self.batch == 0 and
                self.current_step >= self.onset):
            time.sleep(self.stall_ms / 1000.0)
        return self.x[i], self.y[i]


class Mlp(nn.Module):
    def __init__(self, features, hidden, classes, layers):
        super().__init__()
        dims = [features] + [hidden] * layers
        blocks = []
        for a, b in zip(dims, dims[1:]):
            blocks += [nn.Linear(a, b), nn.ReLU()]
        self.body = nn.Sequential(*blocks)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--profile-steps", type=int, default=10,
                   help="steps in the profiler window, at the end of the run")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--features", type=int, default=256)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--record-shapes", action="store_true")
    p.add_argument("--fault", action="append", default=[])
    p.add_argument("--metric-allreduce", action="store_true",
                   help="all-reduce the loss after each step (a global loss to log)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout-s", type=float, default=None,
                   help="the process group's timeout (torch's default: 30 min)")
    p.add_argument("--report", default=None,
                   help="also report each step to a laggard agent at this UDP address "
                        "(python/laggard_step.py)")
    a = p.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    faults = parse_faults(a.fault)
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    if a.timeout_s is not None:
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=a.timeout_s))
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    reporter = None
    if a.report:
        # No probe of its own: each report carries the step table's probe,
        # so the agent changes nothing the table measures.
        reporter = laggard_step.Reporter(rank=rank, addr=a.report, probe=False)

    classes = 10
    data = RandomBatches(a.batch * (a.steps + 2), a.features, classes, a.batch,
                         faults["data_stall_ms"], faults["onset"], a.seed + rank)
    loader = DataLoader(data, batch_size=a.batch, shuffle=False, num_workers=0)
    model = DDP(Mlp(a.features, a.hidden, classes, a.layers))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    os.makedirs(a.out, exist_ok=True)
    trace_path = os.path.join(a.out, f"trace_rank{rank}.json")

    def on_trace_ready(prof):
        prof.export_chrome_trace(trace_path)

    window = min(a.profile_steps, a.steps - 2)
    schedule = torch.profiler.schedule(wait=a.steps - window - 1, warmup=1,
                                       active=window, repeat=1)
    log = open(os.path.join(a.out, f"rank{rank}.log"), "w")
    table = open(os.path.join(a.out, f"steps_rank{rank}.csv"), "w", newline="")
    rows = csv.writer(table)
    rows.writerow(["rank", "step", "step_time_ms", "cpu_ms", "cpu_wait_ms", "cpu_probe_us"])

    # Same barrier-aligned start on every rank, as torchrun gives.
    dist.barrier()
    batches = iter(loader)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=schedule, on_trace_ready=on_trace_ready,
                                record_shapes=a.record_shapes) as prof:
        for step in range(a.steps):
            faulty = step >= faults["onset"]
            if faults["hang_before"] == step:
                hang_forever()
            if faults["die"] == step:
                raise RuntimeError("injected fault: rank %d dies at step %d" % (rank, step))
            data.current_step = step
            t0 = time.perf_counter()
            cpu0 = laggard_step.thread_cpu()
            x, y = next(batches)
            if faulty and faults["host_stall_ms"] > 0:
                time.sleep(faults["host_stall_ms"] / 1000.0)
            if (faulty and faults["periodic_every"] > 0 and
                    step % faults["periodic_every"] == 0):
                time.sleep(faults["periodic_ms"] / 1000.0)
            factor = faults["compute"] if faulty else 1.0
            pad_rows = int(round((factor - 1.0) * a.batch))
            x = torch.cat([x, torch.zeros(pad_rows, a.features)])
            out = model(x)[: a.batch]
            loss = loss_fn(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if faults["hang_after"] == step:
                hang_forever()
            if a.metric_allreduce and faults["skip_metric"] != step:
                dist.all_reduce(loss.detach())
            dt = time.perf_counter() - t0
            print(f"rank {rank}, step {step}, time {dt:.4f}s", file=log, flush=True)
            cpu1 = laggard_step.thread_cpu()
            cpu = ["", ""] if cpu0 is None or cpu1 is None else \
                [f"{(cpu1[0] - cpu0[0]) * 1000.0:.3f}", f"{(cpu1[1] - cpu0[1]) * 1000.0:.3f}"]
            probe_s = laggard_step.cpu_probe()
            rows.writerow([rank, step, f"{dt * 1000.0:.3f}"] + cpu + [f"{probe_s * 1e6:.1f}"])
            if reporter is not None:
                reporter.step(step, dt, cpu_probe_s=probe_s)
            prof.step()
    log.close()
    table.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
