"""One rank of a real PyTorch pipeline- and data-parallel job (dp x pp).

Run by bench/realjobs/realjobs.py --pipeline, one process per rank, with the
usual torch.distributed environment (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT). Debian's python3-torch, gloo, CPU only.

The job is what Megatron does without tensor parallelism, by hand:
- ranks in Megatron's order (dp fastest, then pp: rank = dp + DP * stage);
- each stage holds its share of an MLP's layers; the microbatches of a step
  run GPipe's schedule (every forward, then every backward in reverse),
  activations and their gradients going between stages by send / recv;
- the gradients of a stage are all-reduced over its data-parallel group
  (torch.distributed.new_group), then SGD steps.
Rank 0 prints Megatron's layout line ("using world size: ..., data-parallel
size: ..."), as a Megatron launch log has it.

It writes what a user of such a job has, into --out:
  rank<R>.log           "rank R, step S, time T.TTTTs" and, on rank 0, the layout line
  trace_rank<R>.json    torch.profiler's trace of the profiled steps

Faults (--fault, several may be given):
  heavy_stage:S:K       stage S holds K times the layers of the others (every
                        rank of that stage: a partitioning imbalance, no rank
                        is faulty)
  compute:F             this rank's GEMMs see F times the rows (sliced off
                        again), as on a down-clocked GPU: one slow worker
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def parse_faults(specs):
    faults = {"heavy_stage": -1, "heavy_factor": 1, "compute": 1.0}
    for spec in specs:
        kind, _, rest = spec.partition(":")
        args = rest.split(":") if rest else []
        if kind == "heavy_stage":
            faults["heavy_stage"] = int(args[0])
            faults["heavy_factor"] = int(args[1])
        elif kind == "compute":
            faults["compute"] = float(args[0])
        else:
            sys.exit(f"pipeline_job.py: unknown fault {spec!r}")
    return faults


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--dp", type=int, required=True)
    p.add_argument("--pp", type=int, required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--profile-steps", type=int, default=8)
    p.add_argument("--microbatches", type=int, default=4)
    p.add_argument("--batch", type=int, default=32, help="rows per microbatch")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2, help="layers per stage")
    p.add_argument("--fault", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    if world != a.dp * a.pp:
        sys.exit(f"pipeline_job.py: world {world} != dp {a.dp} x pp {a.pp}")
    faults = parse_faults(a.fault)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    dp_rank, stage = rank % a.dp, rank // a.dp
    # Every rank creates every group, in the same order (torch's rule).
    dp_groups = [dist.new_group([d + a.dp * s for d in range(a.dp)]) for s in range(a.pp)]
    for d in range(a.dp):  # the pipeline groups, as Megatron creates them
        dist.new_group([d + a.dp * s for s in range(a.pp)])
    dp_group = dp_groups[stage]

    torch.manual_seed(a.seed + stage)  # the replicas of a stage start equal
    layers = a.layers * (faults["heavy_factor"] if stage == faults["heavy_stage"] else 1)
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(a.hidden, a.hidden), nn.ReLU()]
    last = stage == a.pp - 1
    if last:
        blocks.append(nn.Linear(a.hidden, 10))
    model = nn.Sequential(*blocks)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(a.seed + 100 + dp_rank)
    pad_rows = int(round((faults["compute"] - 1.0) * a.batch))
    prev_rank = rank - a.dp if stage > 0 else None
    next_rank = rank + a.dp if not last else None

    os.makedirs(a.out, exist_ok=True)
    trace_path = os.path.join(a.out, f"trace_rank{rank}.json")
    window = min(a.profile_steps, a.steps - 2)
    schedule = torch.profiler.schedule(wait=a.steps - window - 1, warmup=1,
                                       active=window, repeat=1)
    log = open(os.path.join(a.out, f"rank{rank}.log"), "w")
    if rank == 0:
        print(f"using world size: {world}, data-parallel size: {a.dp}, "
              f"context-parallel size: 1, tensor-model-parallel size: 1, "
              f"pipeline-model-parallel size: {a.pp}", file=log, flush=True)

    def run_forward(x):
        if pad_rows > 0:
            x = torch.cat([x, torch.zeros(pad_rows, x.shape[1])])
        return model(x)[: a.batch]

    dist.barrier()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=schedule,
                                on_trace_ready=lambda prof: prof.export_chrome_trace(trace_path)
                                ) as prof:
        for step in range(a.steps):
            t0 = time.perf_counter()
            inputs, outputs = [], []
            for mb in range(a.microbatches):
                if prev_rank is None:
                    x = torch.randn(a.batch, a.hidden, generator=g)
                else:
                    x = torch.empty(a.batch, a.hidden)
                    dist.recv(x, src=prev_rank)
                x.requires_grad_(prev_rank is not None)
                y = run_forward(x)
                if next_rank is not None:
                    dist.send(y.detach().contiguous(), dst=next_rank)
                inputs.append(x)
                outputs.append(y)
            opt.zero_grad()
            for mb in reversed(range(a.microbatches)):
                y = outputs[mb]
                if last:
                    target = torch.randint(0, 10, (a.batch,), generator=g)
                    loss_fn(y, target).backward()
                else:
                    grad = torch.empty_like(y)
                    dist.recv(grad, src=next_rank)
                    y.backward(grad)
                if prev_rank is not None:
                    dist.send(inputs[mb].grad.contiguous(), dst=prev_rank)
            for param in model.parameters():
                dist.all_reduce(param.grad, group=dp_group)
                param.grad /= a.dp
            opt.step()
            dt = time.perf_counter() - t0
            print(f"rank {rank}, step {step}, time {dt:.4f}s", file=log, flush=True)
            prof.step()
    log.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
