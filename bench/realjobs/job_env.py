"""The environment of the harness's real PyTorch jobs (realjobs.py, live_hang.py)."""

import os

# The jobs' BLAS: Debian's reference BLAS, whatever libblas.so.3 points to.
# Installing OpenBLAS (laggard gemm's libopenblas0) switches the system's
# libblas.so.3 to it, and torch with it: the harness's faults and figures
# were set on the reference BLAS, and under OpenBLAS the 4-rank pipeline job
# with compute 3.0x on one rank, and the healthy one, read as "variable
# work" (2 of 2 each, 2026-12-06; an accuracy question for real jobs on a
# fast BLAS, kept apart from this harness's calibration). One compute thread
# per rank, BLAS's own pool included.
REFERENCE_BLAS_DIR = "/usr/lib/x86_64-linux-gnu/blas"
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
if os.path.exists(os.path.join(REFERENCE_BLAS_DIR, "libblas.so.3")):
    ONE_THREAD["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (REFERENCE_BLAS_DIR, os.environ.get("LD_LIBRARY_PATH", "")) if p)
