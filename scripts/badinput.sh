#!/usr/bin/env bash
# The bad-input check (docs/reliability.md), repeatable: every real file of
# ../shared/corpus (skipped with a message when absent) and the committed real
# captures in tests/data/ are cut at N offsets and damaged by M mutations, and
# each result is given to `laggard diagnose --json`. Every run must end
# without a crash (no signal) or a hang (a timeout), with exit code 0 or 2
# and a valid JSON report. For Kineto traces, each cut is also read by
# `laggard inspect --json`, and the ops it kept are compared with a reference
# count of the complete events before the cut (device ops; CPU ops when no GPU
# event came before it), which must match exactly. Every other cut inside a
# line is held to the same file cut at that line's start and end: the
# records `inspect` keeps may be one fewer than at its start (the record the
# partial line ends), and no more than the whole line gives, plus one (a
# reader that stops trusting a tail fails).
#
#   scripts/badinput.sh [--short|--long] [--laggard BIN] [--cuts N]
#                       [--mutations M] [--timeout S] [--jobs J] [--seed X]
#
# --short (the default; ctest badinput_short, ~4-5 min on 2 cores): 3 cuts and 2 mutations a file.
# --long: 10,000 cuts and 10,000 mutations a file, over 10^6 runs for the
# 56 corpus files; meant for the ASan+UBSan build (--laggard
# build/asan/src/laggard). Figures: docs/reliability.md. Exit status 0 when
# every run passed, 1 otherwise (the failures are listed), 77 when there is
# no input at all.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec python3 - "$root" "$@" <<'PY'
import argparse, concurrent.futures as cf, gzip, json, os, random, re, subprocess, sys, tempfile, time

root = sys.argv[1]
ap = argparse.ArgumentParser(prog="badinput.sh")
ap.add_argument("--short", action="store_true")
ap.add_argument("--long", action="store_true")
ap.add_argument("--laggard", default=os.path.join(root, "build/release/src/laggard"))
ap.add_argument("--cuts", type=int)
ap.add_argument("--mutations", type=int)
ap.add_argument("--timeout", type=float, default=20.0)
ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
ap.add_argument("--seed", type=int, default=21)
ap.add_argument("--max-files", type=int, default=0, help="only the first N files (measuring)")
a = ap.parse_args(sys.argv[2:])
cuts = a.cuts if a.cuts is not None else (10000 if a.long else 3)
mutations = a.mutations if a.mutations is not None else (10000 if a.long else 2)

corpus = os.path.normpath(os.path.join(root, "..", "shared", "corpus"))
files = []
if os.path.isdir(corpus):
    for d, _, names in os.walk(corpus):
        files += [os.path.join(d, n) for n in names if n != "README.md"]
else:
    print(f"badinput: shared corpus not found at {corpus}: only tests/data/ is checked")
for d, _, names in os.walk(os.path.join(root, "tests", "data")):
    files += [os.path.join(d, n) for n in names if not n.endswith(".md")]
files.sort()
if a.max_files:
    files = files[:a.max_files]
if not files:
    print("badinput: no input files"); sys.exit(77)
if not os.access(a.laggard, os.X_OK):
    print(f"badinput: {a.laggard} is not built"); sys.exit(1)

def plain(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except Exception:
            pass
    return data

def kineto_events(text):
    """(end offset, kind) of each element of traceEvents, or None."""
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(s) != len(text):  # offsets are bytes; keep to ASCII files
        return None
    m = re.search(r'"traceEvents"\s*:\s*\[', s)
    if m:
        i = m.end()
    elif s.lstrip().startswith("[") and '"ph"' in s[:4096]:
        i = s.index("[") + 1
    else:
        return None
    dec, out = json.JSONDecoder(), []
    while True:
        while i < len(s) and s[i] in " \t\r\n,":
            i += 1
        if i >= len(s) or s[i] == "]":
            return out
        e, i = dec.raw_decode(s, i)
        kind = ""
        if isinstance(e, dict) and e.get("ph") == "X":
            cat, name = e.get("cat", ""), str(e.get("name", ""))
            if cat in ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"):
                kind = "device"
            elif cat in ("cuda_runtime", "cuda_driver", "Runtime"):
                kind = "runtime"
            elif cat == "cpu_op" or (cat == "user_annotation" and name.startswith(("nccl:", "gloo:"))):
                kind = "cpu"
        out.append((i, kind))

def expected_ops(events, cut):
    n = {"device": 0, "runtime": 0, "cpu": 0, "": 0}
    for end, kind in events:
        if end <= cut:
            n[kind] += 1
    if n["device"] == 0 and n["runtime"] == 0 and n["cpu"] > 0:
        return n["cpu"]
    return n["device"]

def mutate(data, rng):
    b = bytearray(data)
    kind = rng.randrange(8)
    at = rng.randrange(max(1, len(b)))
    if kind == 0 and b:
        b[at] ^= 1 << rng.randrange(8)
    elif kind == 1:
        b[at:at] = b"\0" * rng.choice((1, 64, 8192))
    elif kind == 2:
        m = re.search(rb"-?\d+(\.\d+)?", bytes(b[at:at + 4096]))
        if m:
            b[at + m.start():at + m.end()] = rng.choice((b"1e308", b"NaN", b"-5", b"-1e308", b"1e-400"))
    elif kind == 3:
        b[at:at] = rng.choice((b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82"))
    elif kind == 4:
        b[at:at] = b"x" * (10 << 20)
    elif kind == 5:
        b[at:at] = b"[" * 100000
    elif kind == 6:
        del b[at:at + rng.randrange(1, 4096)]
    else:
        for _ in range(rng.randrange(1, 20)):
            if b:
                b[rng.randrange(len(b))] = rng.choice(b'{}[]":,\\\n')
    return bytes(b)

def inspect(path):
    """(format, records) of one file as `laggard inspect --json` reads it."""
    p = subprocess.run([a.laggard, "inspect", path, "--json", "-"], capture_output=True,
                       timeout=a.timeout)
    read = json.loads(p.stdout)["files"][0]
    return read.get("format"), read.get("records") or 0, read

def prefix_check(d, name, data, prefix):
    """A cut inside a line keeps what the cut at the line's start keeps, give
    or take the one record that partial line may start or end, and no more
    than the whole line gives (one line may give two records: an NCCL
    process and its error): a reader that loses more than that (a tail it
    stops trusting) fails. `prefix`: the file cut at the line's start, and
    at its end."""
    start, whole = prefix
    refs = []
    for sub, part in (("prefix", start), ("whole", whole)):
        os.makedirs(os.path.join(d, sub), exist_ok=True)  # the same name: readers sniff it
        path = os.path.join(d, sub, name)
        with open(path, "wb") as f:
            f.write(part)
        refs.append(inspect(path)[:2])
    (ref_format, ref), (_, ref_whole) = refs
    cut_format, kept, _ = inspect(os.path.join(d, name))
    if ref == 0 or ref_format != cut_format:  # nothing to hold it to, or sniffed otherwise
        return (None, None)
    if kept < ref - 1 or kept > max(ref, ref_whole) + 1:
        return (f"kept {kept} records, the same file cut at the line before keeps {ref} "
                f"and after it {ref_whole}", (kept, ref))
    return (None, (min(kept, ref), ref))

def run_one(job):
    name, data, expect, prefix = job
    with tempfile.TemporaryDirectory(prefix="badinput.") as d:
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(data)
        report = os.path.join(d, "report.json")
        cmd = [a.laggard, "diagnose", path, "--json", report, "--quiet"]
        try:
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            return ("hang", None)
        if p.returncode < 0:
            return (f"crash (signal {-p.returncode})", None)
        if p.returncode not in (0, 2):
            return (f"exit code {p.returncode}: {p.stderr.decode(errors='replace')[-200:]}", None)
        try:
            json.load(open(report))
        except Exception as e:
            return (f"report is not valid JSON: {e}", None)
        if expect is None:
            if prefix is None:
                return (None, None)
            return prefix_check(d, name, data, prefix)
        fmt, _, read = inspect(path)
        if fmt != "kineto":  # another reader's trace (torch_legacy)
            return (None, None)
        kept = (read.get("traces") or [{}])[0].get("ops", 0)
        if kept != expect:
            return (f"kept {kept} ops, the reference says {expect}", (kept, expect))
        return (None, (kept, expect))

rng = random.Random(a.seed)
jobs, labels = [], []
for path in files:
    data = plain(path)
    rel = os.path.relpath(path, os.path.dirname(corpus) if path.startswith(corpus) else root)
    name = os.path.basename(path)
    name = name[:-3] if name.endswith(".gz") else name
    events = kineto_events(data) if name.endswith(".json") else None
    for k in range(cuts):
        cut = 1 + (len(data) - 1) * (k + 1) // (cuts + 1) + rng.randrange(-50, 51)
        cut = min(max(cut, 1), max(1, len(data) - 1))
        exp = expected_ops(events, cut) if events else None
        # Line formats: held to the same file cut at the start of the line.
        # Binary files (pickled Flight Recorder dumps, SQLite) have no lines:
        # a '\n' byte in them is data.
        binary = data[:1] == b"\x80" or b"\0" in data[:4096]
        line_start = data.rfind(b"\n", 0, cut) + 1
        line_end = data.find(b"\n", cut)
        line_end = len(data) if line_end < 0 else line_end + 1
        prefix = ((data[:line_start], data[:line_end])
                  if not events and not binary and 0 < line_start < cut else None)
        jobs.append((name, data[:cut], exp, prefix))
        labels.append((rel, f"cut at {cut}", "kineto" if events else "lines"))
    for k in range(mutations):
        jobs.append((name, mutate(data, rng), None, None)); labels.append((rel, f"mutation {k}", "other"))

started = time.time()
failures, ratio, lines = [], {}, {}
with cf.ThreadPoolExecutor(a.jobs) as pool:
    for (rel, what, fmt), (err, counts) in zip(labels, pool.map(run_one, jobs)):
        if counts:
            into = ratio if fmt == "kineto" else lines
            k, e = into.get(rel, (0, 0))
            into[rel] = (k + counts[0], e + counts[1])
        if err:
            failures.append(f"{rel} ({what}): {err}")
elapsed = time.time() - started
crashes = sum("crash" in f for f in failures)
hangs = sum(f.endswith(": hang") for f in failures)
kept = sum(k for k, _ in ratio.values()); ref = sum(e for _, e in ratio.values())
print(f"badinput: {len(jobs)} runs over {len(files)} files in {elapsed:.1f} s: "
      f"{len(failures)} failed ({crashes} crashes, {hangs} hangs)")
if ref:
    print(f"badinput: kineto cuts kept {kept} of {ref} reference ops (ratio {kept / ref:.4f}) "
          f"over {len(ratio)} traces")
lkept = sum(k for k, _ in lines.values()); lref = sum(e for _, e in lines.values())
if lref:
    print(f"badinput: other cuts kept {lkept} of the {lref} records their line-start cut keeps "
          f"(ratio {lkept / lref:.4f}, one record either way allowed per cut) over {len(lines)} files")
for f in failures[:50]:
    print("  FAIL " + f)
sys.exit(1 if failures else 0)
PY
