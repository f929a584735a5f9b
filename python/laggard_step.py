"""Report training steps to the local `laggard agent` -- two lines in a loop.

Around the compute part of each step (the module keeps one Reporter):

    import laggard_step
    for step, batch in enumerate(loader):
        with laggard_step.compute(step):                  # the two lines
            loss = model(batch).loss
            loss.backward()
        optimizer.step()

Each block reports its step on exit: the wall time since the previous
block ended (the whole step: data, compute, communication; for the first
block, the block itself) and the block's compute time.

With a Reporter of your own:

    import laggard_step
    reporter = laggard_step.Reporter(rank=rank)          # once
    for step, batch in enumerate(loader):
        t0 = time.perf_counter()
        ...                                               # forward, backward, optimizer
        reporter.step(step, time.perf_counter() - t0)    # each step

Each call sends one datagram in the agent's key=value line format
(docs/agent.md):

    laggard-step rank=3 step=120 time_s=0.810000 compute_s=0.620000 cpu_probe_s=0.000140 cpu_s=0.640000 cpu_wait_s=0.002000 pid=4711 pidns=4026531836 host=node-1 gpu=3

cpu_s and cpu_wait_s are the calling thread's time on a CPU and time
runnable but waiting for one since the previous report (Linux's
/proc/thread-self/schedstat): a rank that waits for a CPU shares its cores
with other work, and laggard names that host contention. cpu_probe_s is
the time of a fixed piece of work run on the same thread at each report
(~0.1-0.3 ms; Reporter(probe=False) turns it off): a rank whose probe runs
slower than its peers' sits on a slower core, or one shared with a
neighbour the guest cannot see. pid is the reporting process's
(os.getpid()) and pidns its PID namespace (/proc/self/ns/pid): the agent
ties the pid to the rank, to tell the job's processes from others on its
cores, when it reads /proc of that namespace (not from another container).

to UDP 127.0.0.1:9401 (the agent's default) or to a Unix datagram socket.
Sending never blocks the training loop and never raises: when no agent
listens the report is dropped and counted in `reporter.dropped`.

Compute-only time (without waiting in collectives) is what finds a straggler
(the slow rank computes longest and waits least). With torch and CUDA
present, wrap the compute part of the step:

    with reporter.compute():
        loss = model(batch).loss
        loss.backward()
    reporter.step(step, seconds)

The CUDA events are read without synchronising: a step's report waits until
its end event has completed and goes out with a later step() call (or
flush()), so the loop is never stalled. Without CUDA, compute() times with
the host clock. torch is imported only when compute() is first used.

Configuration (arguments win over the environment):
    LAGGARD_STEP_ADDR   "127.0.0.1:9401" (UDP) or "unix:/run/laggard/steps.sock"
    RANK, LOCAL_RANK    default rank and local GPU index (torchrun sets them)

Dependency-free: standard library only.
"""

import atexit
import os
import socket
import threading
import time

__all__ = ["Reporter", "compute", "cpu_probe", "format_line", "pid_namespace", "thread_cpu"]

DEFAULT_ADDR = "127.0.0.1:9401"


def thread_cpu():
    """(seconds on a CPU, seconds runnable but waiting for one) of the
    calling thread so far, from /proc/thread-self/schedstat (Linux); None
    where the kernel does not keep them. The wait is what other work on the
    thread's cores costs it: host contention."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            fields = f.read().split()
        on_cpu, wait = int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None
    if on_cpu == 0:
        return None  # a kernel without scheduler statistics reads 0 0
    return on_cpu / 1e9, wait / 1e9


_PROBE_LOOPS = 2000


def cpu_probe():
    """Seconds a fixed piece of work (2,000 loop iterations, ~0.1-0.3 ms)
    takes on the calling thread now. Every rank runs the same work: a rank
    whose probe runs slower than its peers' runs on a slower or shared CPU."""
    t = time.perf_counter()
    x = 0
    for i in range(_PROBE_LOOPS):
        x += i * i
    return time.perf_counter() - t


def _num(seconds):
    return "%.6f" % float(seconds)


def pid_namespace():
    """The inode of this process's PID namespace (/proc/self/ns/pid,
    "pid:[4026531836]"), or None where it cannot be read."""
    try:
        link = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    if not (link.startswith("pid:[") and link.endswith("]")):
        return None
    try:
        return int(link[5:-1])
    except ValueError:
        return None


def format_line(rank, step, seconds, host=None, gpu=None, ts=None, pid=None, pidns=None,
                **phases):
    """The key=value line for one step. Phase keyword arguments end in _s
    (seconds), e.g. compute_s=0.62, data_s=0.01; pid is the reporting
    process's id."""
    parts = ["laggard-step", "rank=%d" % int(rank), "step=%d" % int(step),
             "time_s=" + _num(seconds)]
    for key in sorted(phases):
        value = phases[key]
        if value is None:
            continue
        if not key.endswith("_s"):
            raise ValueError("phase %r must end in _s (seconds)" % key)
        parts.append("%s=%s" % (key, _num(value)))
    if pid is not None:
        parts.append("pid=%d" % int(pid))
    if pidns is not None:
        parts.append("pidns=%d" % int(pidns))
    if host:
        parts.append("host=%s" % host)
    if gpu is not None:
        parts.append("gpu=%d" % int(gpu))
    if ts is not None:
        parts.append("ts=%.6f" % float(ts))
    return " ".join(parts)


class _Compute(object):
    """Context manager timing the compute part of one step; with a step
    number it also reports that step on exit."""

    def __init__(self, reporter, step=None, phases=None):
        self._r = reporter
        self._step = step
        self._phases = phases or {}
        self._entered = None

    def __enter__(self):
        self._r._compute_begin()  # may import torch: not part of the step
        self._entered = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self._r._compute_end()
        if self._step is not None:
            self._r._report_block(self._step, self._entered, self._phases)
        return False


_default = None
_default_lock = threading.Lock()


def _default_reporter():
    global _default
    with _default_lock:
        if _default is None:
            _default = Reporter()
            atexit.register(_default.close)
        return _default


def compute(step, **phases):
    """`with laggard_step.compute(step): ...` around the compute part of a
    step: times it and reports the step on exit, through one Reporter for
    the process (configured by the environment, see below; flushed at exit).
    Extra phase times in seconds: compute(step, data_s=0.02)."""
    return _default_reporter().compute(step, **phases)


class Reporter(object):
    def __init__(self, rank=None, addr=None, host=None, gpu=None, use_cuda=True, probe=True):
        if rank is None:
            rank = int(os.environ.get("RANK", "0"))
        if gpu is None and os.environ.get("LOCAL_RANK", "").isdigit():
            gpu = int(os.environ["LOCAL_RANK"])
        self.rank = int(rank)
        self.host = host
        self.gpu = gpu
        self.sent = 0
        self.dropped = 0
        self._use_cuda = use_cuda
        self._torch = None      # imported lazily by compute()
        self._cuda = None       # None: not decided yet
        self._start = None      # open compute interval: event or perf_counter
        self._compute = None    # (start, end) of the current step
        self._pending = []      # (line args, start event, end event) waiting on CUDA
        self._last_block_end = None  # perf_counter when compute(step) last reported
        self._cpu = None        # thread_cpu() at the previous step() call
        self._pidns = pid_namespace()
        self._probe = probe     # time cpu_probe() each step
        addr = addr or os.environ.get("LAGGARD_STEP_ADDR", DEFAULT_ADDR)
        self._sock = None
        self._dest = None
        try:
            if addr.startswith("unix:"):
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._dest = addr[len("unix:"):]
            else:
                host_part, _, port = addr.rpartition(":")
                host_part = host_part.strip("[]") or "127.0.0.1"
                family = socket.AF_INET6 if ":" in host_part else socket.AF_INET
                self._sock = socket.socket(family, socket.SOCK_DGRAM)
                self._dest = (host_part, int(port))
            self._sock.setblocking(False)
        except (OSError, ValueError):
            self._sock = None

    def compute(self, step=None, **phases):
        """`with reporter.compute(): ...` times the step's compute, for the
        next step() call. `with reporter.compute(step): ...` also reports
        the step on exit (wall time since the previous such block ended)."""
        return _Compute(self, step, phases)

    def _report_block(self, step, entered, phases):
        now = time.perf_counter()
        since = self._last_block_end if self._last_block_end is not None else entered
        self._last_block_end = now
        self.step(step, now - since, **phases)

    def _cuda_ready(self):
        if self._cuda is None:
            self._cuda = False
            if self._use_cuda:
                try:
                    import torch  # noqa: imported only when asked for
                    if torch.cuda.is_available():
                        self._torch = torch
                        self._cuda = True
                except Exception:
                    self._cuda = False
        return self._cuda

    def _compute_begin(self):
        if self._cuda_ready():
            ev = self._torch.cuda.Event(enable_timing=True)
            ev.record()
            self._start = ev
        else:
            self._start = time.perf_counter()

    def _compute_end(self):
        if self._start is None:
            return
        if self._cuda:
            ev = self._torch.cuda.Event(enable_timing=True)
            ev.record()
            self._compute = (self._start, ev)
        else:
            self._compute = (self._start, time.perf_counter())
        self._start = None

    def step(self, step, seconds, **phases):
        """Reports one step that took `seconds` (wall clock). Extra phase
        times in seconds: reporter.step(i, dt, data_s=0.02)."""
        try:
            args = dict(rank=self.rank, step=step, seconds=seconds, host=self.host,
                        gpu=self.gpu, ts=time.time(), pid=os.getpid(), pidns=self._pidns,
                        **phases)
            # The calling thread's CPU time and run-queue wait since the
            # previous call (none for the first: no start to measure from).
            cpu, prev = thread_cpu(), self._cpu
            self._cpu = cpu
            if cpu is not None and prev is not None:
                args.setdefault("cpu_s", max(0.0, cpu[0] - prev[0]))
                args.setdefault("cpu_wait_s", max(0.0, cpu[1] - prev[1]))
            if self._probe:
                args.setdefault("cpu_probe_s", cpu_probe())
            compute, self._compute = self._compute, None
            if compute is not None and self._cuda:
                self._pending.append((args, compute[0], compute[1]))
            else:
                if compute is not None:
                    args["compute_s"] = compute[1] - compute[0]
                self._send(format_line(**args))
            self._flush_ready(block=False)
        except Exception:
            self.dropped += 1

    def flush(self):
        """Sends reports still waiting on CUDA events (synchronising them)."""
        try:
            self._flush_ready(block=True)
        except Exception:
            self.dropped += len(self._pending)
            self._pending = []

    def _flush_ready(self, block):
        while self._pending:
            args, start, end = self._pending[0]
            if not block and not end.query():
                return
            end.synchronize()
            args["compute_s"] = start.elapsed_time(end) / 1000.0
            self._pending.pop(0)
            self._send(format_line(**args))

    def _send(self, line):
        if self._sock is None:
            self.dropped += 1
            return
        try:
            self._sock.sendto(line.encode("ascii", "replace"), self._dest)
            self.sent += 1
        except OSError:
            self.dropped += 1

    def close(self):
        self.flush()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
