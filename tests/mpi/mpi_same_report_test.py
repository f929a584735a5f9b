#!/usr/bin/env python3
"""laggard diagnose --mpi gives the single-process report, byte for byte.

For every golden case whose command is `diagnose` (tests/golden/*/cmd), runs
`mpirun -n P laggard diagnose --mpi ...` for P in 1, 2 and 4 and compares its
stdout and exit code with the case's `expected` (what the single-process
run prints; the golden test checks that). Then simulates runs of 64 and
1,024 ranks and compares the --mpi JSON reports with the single-process
one. Skips (exit 77) when mpirun is absent or laggard was built without MPI.

  mpi_same_report_test.py LAGGARD_BINARY [--quick]
"""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "golden")
SHARED = os.path.join(HERE, "..", "..", "..", "shared")


def mpirun(n):
    cmd = ["mpirun", "-n", str(n), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run(cmd, cwd):
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def with_mpi(args):
    assert args[0] == "diagnose"
    return args[:1] + ["--mpi"] + args[1:]


def golden_cases(laggard, sizes, failures):
    checked = 0
    for name in sorted(os.listdir(GOLDEN)):
        case = os.path.join(GOLDEN, name)
        cmd_file = os.path.join(case, "cmd")
        if not os.path.isfile(cmd_file) or os.path.exists(os.path.join(case, "extract")):
            continue
        args = open(cmd_file).read().split()
        if not args or args[0] != "diagnose":
            continue
        cwd = case
        tmp = None
        if os.path.exists(os.path.join(case, "cwd")):
            if not os.path.isdir(os.path.join(SHARED, "corpus")):
                print(f"skip {name}: ../shared/corpus is absent")
                continue
            cwd = SHARED
        if os.path.exists(os.path.join(case, "simulate")):
            tmp = tempfile.mkdtemp(prefix="laggard-mpi-")
            sim = open(os.path.join(case, "simulate")).read().split()
            r = run([laggard, "simulate", "-o", os.path.join(tmp, "sim")] + sim, tmp)
            if r.returncode != 0:
                failures.append(f"{name}: simulate failed: {r.stderr[-500:]}")
                continue
            cwd = tmp
            args = [a.replace("$SIM", "sim") for a in args]
        expected = open(os.path.join(case, "expected")).read()
        code_file = os.path.join(case, "exit_code")
        code = int(open(code_file).read()) if os.path.exists(code_file) else 0
        for n in sizes:
            r = run(mpirun(n) + [laggard] + with_mpi(args), cwd)
            if r.stdout != expected:
                failures.append(f"{name}: -n {n}: stdout differs from expected "
                                f"(stderr: {r.stderr[-800:]})")
            elif r.returncode != code:
                failures.append(f"{name}: -n {n}: exit {r.returncode}, want {code}")
        if tmp:
            shutil.rmtree(tmp)
        checked += 1
        print(f"ok {name} (-n {' '.join(map(str, sizes))})")
    return checked


def simulated(laggard, nodes, gpus, sizes, failures):
    tmp = tempfile.mkdtemp(prefix="laggard-mpi-sim-")
    try:
        r = run([laggard, "simulate", "-o", "sim", "--nodes", str(nodes), "--gpus-per-node",
                 str(gpus), "--steps", "40", "--seed", "11", "--trace-steps", "3",
                 "--fault", "thermal@node-01:2:25%"], tmp)
        if r.returncode != 0:
            failures.append(f"simulate {nodes}x{gpus}: {r.stderr[-500:]}")
            return
        single = run([laggard, "diagnose", "sim", "--json", "-"], tmp)
        for n in sizes:
            m = run(mpirun(n) + [laggard, "diagnose", "--mpi", "sim", "--json", "-"], tmp)
            if m.stdout != single.stdout or m.returncode != single.returncode:
                failures.append(f"simulated {nodes * gpus} ranks: -n {n} differs from one "
                                f"process (exit {m.returncode} vs {single.returncode}; "
                                f"stderr: {m.stderr[-800:]})")
        print(f"ok simulated {nodes * gpus} ranks (-n {' '.join(map(str, sizes))})")
    finally:
        shutil.rmtree(tmp)


def main():
    laggard = os.path.abspath(sys.argv[1])
    quick = "--quick" in sys.argv
    if shutil.which("mpirun") is None:
        print("SKIP: mpirun not found (apt-get install openmpi-bin)")
        return 77
    empty = tempfile.mkdtemp(prefix="laggard-mpi-probe-")
    probe = run([laggard, "diagnose", "--mpi", empty], empty)
    shutil.rmtree(empty)
    if "built without MPI" in probe.stderr:
        print("SKIP: this laggard was built without MPI")
        return 77
    failures = []
    sizes = [2] if quick else [1, 2, 4]
    checked = golden_cases(laggard, sizes, failures)
    simulated(laggard, 16, 4, sizes, failures)
    if not quick:
        simulated(laggard, 128, 8, sizes, failures)
    for f in failures:
        print("FAIL", f)
    print(f"{checked} golden cases, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
