"""`get` of a hit: kcache.cuda.ProgramCache against cuda-core's own caches,
in one run, on one real cubin. Prints one line per cache: the median of
`--repeat` timings of `--number` gets, per get.

    python python/benches/program_cache_get.py [--number N] [--repeat R] [--redis URL]

With ``--redis``, also a ProgramCache on a kcache.RedisStore at URL (a
server of your own: the bench writes under the prefix ``kcache-bench``
and clears it).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import timeit
from pathlib import Path

from cuda.core import Program, ProgramOptions
from cuda.core.utils import FileStreamProgramCache, InMemoryProgramCache, make_program_cache_key

import kcache.cuda

CODE = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--redis", metavar="URL", help="also time a RedisStore at URL")
    args = ap.parse_args()
    options = ProgramOptions(arch="sm_80")
    cubin = bytes(Program(CODE, "c++", options=options).compile("cubin").code)
    key = make_program_cache_key(code=CODE, code_type="c++", options=options, target_type="cubin")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        caches = {
            "cuda-core InMemoryProgramCache": InMemoryProgramCache(),
            "cuda-core FileStreamProgramCache": FileStreamProgramCache(root / "fs"),
            "kcache.cuda.ProgramCache (memory)": kcache.cuda.ProgramCache(store="memory"),
            "kcache.cuda.ProgramCache (file)": kcache.cuda.ProgramCache(root / "kf"),
            "kcache.cuda.ProgramCache (sqlite)": kcache.cuda.ProgramCache(root / "ks", store="sqlite"),
        }
        if args.redis:
            redis = kcache.RedisStore(args.redis, prefix="kcache-bench", timeout_ms=1000)
            redis.clear()
            caches["kcache.cuda.ProgramCache (redis)"] = kcache.cuda.ProgramCache(store=redis)
        for cache in caches.values():
            cache[key] = cubin
            assert cache.get(key) == cubin
        print(f"cubin: {len(cubin)} bytes; {args.number} gets x {args.repeat} repeats, median")
        for name, cache in caches.items():
            times = timeit.repeat(lambda c=cache: c.get(key), number=args.number, repeat=args.repeat)
            per = statistics.median(times) / args.number
            print(f"{name:36} {per * 1e6:8.2f} us/get")


if __name__ == "__main__":
    main()
