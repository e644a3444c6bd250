"""Prints the peer table from one run's results.

usage: report.py HYPERFINE.json CRITERION_DIR CUDA_CORE.jsonl

Every cell is the median with its median absolute deviation (the spread);
the ratio is peer / kcache, so above 1 means kcache is faster.
"""

import json
import os
import statistics
import sys


def hyperfine(path):
    out = {}
    for r in json.load(open(path))["results"]:
        times = r["times"]
        med = statistics.median(times)
        out[r["command"]] = (med, statistics.median(abs(t - med) for t in times))
    return out


def criterion(root, bench_id):
    group, name = bench_id.split("/")
    path = os.path.join(root, group, name, "new", "estimates.json")
    if not os.path.exists(path):
        raise SystemExit(f"bench-peers: criterion left no result for {bench_id} ({path})")
    e = json.load(open(path))
    # Criterion's unit is nanoseconds.
    return e["median"]["point_estimate"] * 1e-9, e["median_abs_dev"]["point_estimate"] * 1e-9


def fmt(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale or unit == "ns":
            v = seconds / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"


def cell(m):
    return f"{fmt(m[0])} ± {fmt(m[1])}"


def main():
    hf_path, crit_root, cc_path = sys.argv[1:4]
    hf = hyperfine(hf_path)
    cc = {}
    for line in open(cc_path):
        r = json.loads(line)
        cc[r["measure"]] = (r["median_s"], r["mad_s"])

    def cli(tail):
        hits = [v for k, v in hf.items() if k.endswith(tail)]
        if len(hits) != 1:
            raise SystemExit(f"bench-peers: no single hyperfine result ending {tail!r}")
        return hits[0]

    rows = [
        ("whole-process CLI hit, one C kernel", "`kcache compile k.c`, warm store, installed",
         cli("bin/kcache compile k.c"), "`ccache gcc -c k.c` hit", cli("ccache gcc -c k.c -o k.o")),
        ("the same, the binary as linked", "`target/release/kcache compile k.c`",
         cli("release/kcache compile k.c"), "`ccache gcc -c k.c` hit",
         cli("ccache gcc -c k.c -o k.o")),
        ("the same, a kernel including `<math.h>`", "`kcache compile km.c`, installed",
         cli("bin/kcache compile km.c"), "`ccache gcc -c km.c` hit",
         cli("ccache gcc -c km.c -o km.o")),
        ("process floor", "`kcache --version`, installed", cli("kcache --version"),
         "`ccache --version`", cli("ccache --version")),
    ]
    for size in ("4KiB", "64KiB"):
        label = size.replace("KiB", " KiB")
        rows.append((f"file-store get, {label} (kcache verifies)", "`FileStore::get`",
                     criterion(crit_root, f"get_{size}/file"),
                     "`FileStreamProgramCache[key]`", cc[f"get_{size}/file"]))
    for size in ("4KiB", "64KiB"):
        label = size.replace("KiB", " KiB")
        rows.append((f"memory-store get, {label}", "`MemoryStore::get`",
                     criterion(crit_root, f"get_{size}/memory"),
                     "`InMemoryProgramCache[key]`", cc[f"get_{size}/memory"]))
    keyed = criterion(crit_root, "keyed_hit/file")
    rows.append(("keyed end-to-end hit, file store", "resolver hit, C backend", keyed,
                 "`Program(..).compile(\"cubin\", cache=)` hit", cc["keyed_hit/file"]))
    rows.append(("keyed hit, peer's Program reused", "resolver hit, C backend", keyed,
                 "`prog.compile(\"cubin\", cache=)` hit", cc["keyed_hit/file_same_program"]))

    print("| measure | kcache | median ± MAD | peer | median ± MAD | peer / kcache |")
    print("| --- | --- | --- | --- | --- | --- |")
    for measure, kname, k, pname, p in rows:
        print(f"| {measure} | {kname} | {cell(k)} | {pname} | {cell(p)} | **{p[0] / k[0]:.2f}×** |")


if __name__ == "__main__":
    main()
