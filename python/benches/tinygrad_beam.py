"""tinygrad's BEAM=2 search on its CPU device (clang), on a fresh cache and
then again, with and without kcache installed. Each run is a fresh process;
prints wall seconds and clang runs per run.

    python python/benches/tinygrad_beam.py [--size N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, os, subprocess, sys
if os.environ["WITH_KCACHE"] == "1":
    import kcache.tinygrad
    kcache.tinygrad.install()
from tinygrad import Tensor
runs = []
real = subprocess.check_output
def counting(argv, *a, **k):
    runs.append(1)
    return real(argv, *a, **k)
subprocess.check_output = counting
n = int(sys.argv[1])
a = Tensor([[float((i * n + j) % 11) for j in range(n)] for i in range(n)])
b = Tensor([[float((i + 2 * j) % 5) - 2 for j in range(n)] for i in range(n)])
out = (a @ b).relu().sum().item()
print(json.dumps({"clang_runs": len(runs), "out": out}))
"""


def run(env: dict[str, str], size: int, cwd: Path) -> tuple[float, dict]:
    t = time.perf_counter()
    # The caches live outside the working directory: quoted includes
    # resolve there, and kcache re-checks what a changed one could hold.
    p = subprocess.run([sys.executable, "-c", CHILD, str(size)], env={**os.environ, **env},
                       capture_output=True, text=True, check=True, cwd=cwd)  # fmt: skip
    return time.perf_counter() - t, json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=32)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for with_kcache in ("0", "1"):
            tmp = Path(d) / with_kcache
            env = {"DEV": "CPU", "BEAM": "2", "PARALLEL": "0", "WITH_KCACHE": with_kcache,
                   "CACHEDB": str(tmp / "tinygrad.db"), "KCACHE_DIR": str(tmp / "kcache")}  # fmt: skip
            work = tmp / "work"
            work.mkdir(parents=True)
            label = "with kcache   " if with_kcache == "1" else "tinygrad alone"
            for what in ("fresh", "again"):
                secs, r = run(env, args.size, work)
                print(f"{label} {what:18} {secs:6.2f} s  clang runs {r['clang_runs']:4}  out {r['out']}")
            if with_kcache == "1":
                # tinygrad's own database gone (its BEAM choices too): the
                # search runs again, its compiles answered by kcache's store.
                (tmp / "tinygrad.db").unlink()
                secs, r = run(env, args.size, work)
                print(f"{label} {'again, no tg db':18} {secs:6.2f} s  clang runs {r['clang_runs']:4}  out {r['out']}")


if __name__ == "__main__":
    main()
