"""python/ as a package: builds the wheel from python/pyproject.toml offline,
installs it into a temporary directory, imports laggard_step from there (not
from the source tree) and runs the two-line use around a compute block
against a UDP socket standing in for the agent.

Usage: package_test.py PYTHON_SOURCE_DIR. Exits 77 (skipped) when no
interpreter here has the build backend (setuptools >= 61 and wheel; Debian:
python3-setuptools, python3-wheel), since nothing may be downloaded.
"""

import glob
import os
import subprocess
import sys
import tempfile

SKIP = 77

USE = r'''
import os, socket, sys, time
sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sink.bind(("127.0.0.1", 0))
sink.settimeout(5)
os.environ["LAGGARD_STEP_ADDR"] = "127.0.0.1:%d" % sink.getsockname()[1]
os.environ["RANK"] = "3"
import laggard_step
assert os.path.abspath(laggard_step.__file__).startswith(sys.argv[1]), laggard_step.__file__
for step in range(2):
    with laggard_step.compute(step):
        time.sleep(0.01)
lines = [sink.recv(512).decode() for _ in range(2)]
assert all(" pid=%d " % os.getpid() in line for line in lines), lines
print("\n".join(lines))
'''


def backend_python():
    """The first interpreter with pip, setuptools >= 61 and wheel."""
    probe = ("import setuptools, wheel, pip, sys; "
             "sys.exit(0 if int(setuptools.__version__.split('.')[0]) >= 61 else 1)")
    for exe in [sys.executable, "/usr/bin/python3"]:
        if os.path.exists(exe) and subprocess.run([exe, "-c", probe],
                                                  capture_output=True).returncode == 0:
            return exe
    return None


def main():
    source = os.path.abspath(sys.argv[1])
    python = backend_python()
    if python is None:
        print("SKIPPED: no python here has setuptools >= 61 and wheel (offline build backend; "
              "apt-get install python3-setuptools python3-wheel)")
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        # pip writes its build tree next to the sources; build from a copy.
        src_copy = os.path.join(tmp, "src")
        subprocess.run(["cp", "-r", source, src_copy], check=True)
        dist = os.path.join(tmp, "dist")
        site = os.path.join(tmp, "site")
        subprocess.run([python, "-m", "pip", "wheel", "--no-build-isolation", "--no-index",
                        "--no-deps", "-q", "-w", dist, src_copy], check=True)
        wheels = glob.glob(os.path.join(dist, "laggard_step-*.whl"))
        assert len(wheels) == 1, wheels
        subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", "-q",
                        "--target", site, wheels[0]], check=True)
        assert os.path.exists(os.path.join(site, "laggard_step.py")), os.listdir(site)
        env = dict(os.environ, PYTHONPATH=site)
        # From the temp dir, so the source tree's module cannot be the one imported.
        out = subprocess.run([python, "-c", USE, site], cwd=tmp, env=env, check=True,
                             capture_output=True, text=True).stdout
    lines = out.split("\n")
    for step, line in enumerate(lines[:2]):
        assert line.startswith("laggard-step rank=3 step=%d time_s=" % step), out
        assert " compute_s=" in line, out
    print("installed %s; two-line use reported:\n%s" % (os.path.basename(wheels[0]), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
