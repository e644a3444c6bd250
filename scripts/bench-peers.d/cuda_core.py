"""cuda-core's hit paths, timed the way benches/store.rs times kcache's.

Prints one JSON object per line: {"measure", "median_s", "mad_s"}, the median
and the median absolute deviation of the per-operation time over the repeats.
"""

import json
import os
import statistics
import sys
import tempfile
import timeit

from cuda.core import Program, ProgramOptions
from cuda.core.utils import FileStreamProgramCache, InMemoryProgramCache

REPEATS = 30


def value(n):
    # The bytes benches/store.rs stores: (i * 31 % 251) as u8.
    return bytes((i * 31 % 251) for i in range(n))


def report(measure, fn, number):
    fn()  # warm: first-touch costs are not a hit's
    per_op = [t / number for t in timeit.repeat(fn, number=number, repeat=REPEATS)]
    med = statistics.median(per_op)
    mad = statistics.median(abs(t - med) for t in per_op)
    print(json.dumps({"measure": measure, "median_s": med, "mad_s": mad}), flush=True)


def main():
    work = tempfile.mkdtemp(prefix="bench-peers-cuda-core-")
    key = b"a kernel program key, 32 bytes!!"
    files = FileStreamProgramCache(os.path.join(work, "file"))
    memory = InMemoryProgramCache()
    for label, n in (("4KiB", 4 << 10), ("64KiB", 64 << 10)):
        v = value(n)
        files[key] = v
        memory[key] = v
        assert files[key] == v and memory[key] == v
        report(f"get_{label}/file", lambda: files[key], 2000)
        report(f"get_{label}/memory", lambda: memory[key], 20000)

    # The keyed hit: the same saxpy segment kernels/store.rs resolves, as CUDA.
    src = sys.argv[1] if len(sys.argv) > 1 else None
    if src is None:
        raise SystemExit("usage: cuda_core.py KERNEL.cu")
    with open(src) as f:
        code = f.read()
    opts = ProgramOptions(arch="sm_80")
    cache = FileStreamProgramCache(os.path.join(work, "keyed"))
    Program(code, "c++", opts).compile("cubin", cache=cache)  # the miss fills it
    assert len(cache) == 1

    def keyed_hit_new_program():
        # What a caller does per kernel: a Program from the text, compiled through the cache.
        return Program(code, "c++", ProgramOptions(arch="sm_80")).compile("cubin", cache=cache)

    prog = Program(code, "c++", opts)

    def keyed_hit_same_program():
        return prog.compile("cubin", cache=cache)

    report("keyed_hit/file", keyed_hit_new_program, 500)
    report("keyed_hit/file_same_program", keyed_hit_same_program, 500)
    assert len(cache) == 1, "a keyed hit compiled"


if __name__ == "__main__":
    main()
