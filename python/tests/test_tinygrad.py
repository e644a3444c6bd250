"""tinygrad end to end on its CPU device with clang, kcache installed as
its compile cache. Each run is a fresh process with its own tinygrad cache
database (CACHEDB) and kcache directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

MATMUL = """
import json, os
if os.environ.get("WITH_KCACHE") == "1":
    import kcache.tinygrad
    state = kcache.tinygrad.install()
import subprocess
from tinygrad import Tensor

# Every clang run tinygrad makes (kcache's own probes run from Rust).
compiled = []
real_check_output = subprocess.check_output
def counting(argv, *args, **kwargs):
    compiled.append(argv[0])
    return real_check_output(argv, *args, **kwargs)
subprocess.check_output = counting

# Small integers: exact in float32 in any summation order, so whatever the
# search picks, a right kernel gives exactly these results.
a = Tensor([[float((i * 8 + j) % 11) for j in range(16)] for i in range(16)])
b = Tensor([[float((i + 2 * j) % 5) - 2 for j in range(16)] for i in range(16)])
out = (a @ b).relu().sum(axis=1).numpy().tolist()
stats = state.stats() if os.environ.get("WITH_KCACHE") == "1" else None
print(json.dumps({"out": out, "compiled": len(compiled), "stats": stats}))
"""


def env_for(tmp: Path, *, kcache: bool, beam: int = 0) -> dict[str, str]:
    env = {
        "DEV": "CPU",
        "CACHEDB": str(tmp / "tinygrad-cache.db"),
        "KCACHE_DIR": str(tmp / "kcache"),
        "WITH_KCACHE": "1" if kcache else "0",
        # One process: the search compiles where install() ran.
        "PARALLEL": "0",
    }
    if beam:
        env["BEAM"] = str(beam)
    return env


@pytest.mark.parametrize("beam", [0, 2], ids=["matmul", "matmul-beam2"])
def test_second_process_recompiles_nothing_and_results_equal_plain_tinygrad(run_python, tmp_path, beam):
    plain = run_python(MATMUL, env=env_for(tmp_path / "plain", kcache=False, beam=beam))
    first = run_python(MATMUL, env=env_for(tmp_path / "kc", kcache=True, beam=beam))
    assert first["compiled"] > 0 and first["stats"]["misses"] == first["compiled"]
    assert first["stats"]["uncached"] == 0
    # The BEAM choices stay in tinygrad's database (a search repeated from
    # scratch times candidates afresh and may walk elsewhere); the kernels
    # they choose come from kcache, whose store is the only compile cache.
    second = run_python(MATMUL, env=env_for(tmp_path / "kc", kcache=True, beam=beam))
    assert second["compiled"] == 0 and second["stats"]["hits"] > 0
    assert first["out"] == plain["out"] == second["out"]


HEADER_COMPILE = """
import json, os
if os.environ.get("WITH_KCACHE") == "1":
    import kcache.tinygrad
    state = kcache.tinygrad.install()
from tinygrad.runtime.support.compiler_cpu import ClangCompiler
compiler = ClangCompiler(["x86_64", "native"], cachekey="kcache_test_header")
src = '#include "kc_test_value.h"\\nint kc_value(void) { return KC_VALUE; }\\n'
lib = compiler.compile_cached(src)
fresh = compiler.compile(src)
stats = state.stats() if os.environ.get("WITH_KCACHE") == "1" else None
print(json.dumps({"lib": lib.hex(), "fresh": fresh.hex(), "stats": stats}))
"""


@pytest.mark.parametrize("with_kcache", [False, True], ids=["tinygrad", "kcache"])
def test_a_changed_header_misses_where_tinygrads_own_cache_hits(run_python, tmp_path, with_kcache):
    header = tmp_path / "kc_test_value.h"
    header.write_text("#define KC_VALUE 1\n")
    env = env_for(tmp_path, kcache=with_kcache)
    before = run_python(HEADER_COMPILE, env=env)
    assert before["lib"] == before["fresh"]
    again = run_python(HEADER_COMPILE, env=env)
    assert again["lib"] == before["lib"]
    header.write_text("#define KC_VALUE 2\n")
    after = run_python(HEADER_COMPILE, env=env)
    assert after["fresh"] != before["fresh"]
    if with_kcache:
        assert again["stats"]["hits"] == 1
        assert after["stats"]["misses"] == 1 and after["lib"] == after["fresh"]
    else:
        # tinygrad keys on the source string alone: the stale object.
        assert after["lib"] == before["lib"]


@pytest.mark.parametrize("with_kcache", [False, True], ids=["tinygrad", "kcache"])
def test_another_compiler_misses_where_tinygrads_own_cache_hits(run_python, tmp_path, with_kcache):
    clang = shutil.which("clang")
    assert clang, "tinygrad needs clang"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "clang"

    def toolchain(release: str, define: str) -> None:
        # A compiler release that changes what one source compiles to.
        wrapper.write_text(f'#!/bin/sh\n# toolchain {release}\nexec {clang} {define} "$@"\n')
        wrapper.chmod(0o755)

    (tmp_path / "kc_test_value.h").write_text("#ifndef KC_VALUE\n#define KC_VALUE 1\n#endif\n")
    env = {**env_for(tmp_path, kcache=with_kcache), "CC": str(wrapper)}
    toolchain("1", "")
    before = run_python(HEADER_COMPILE, env=env)
    again = run_python(HEADER_COMPILE, env=env)
    assert again["lib"] == before["lib"]
    toolchain("2", "-DKC_VALUE=7")
    after = run_python(HEADER_COMPILE, env=env)
    assert after["fresh"] != before["fresh"]
    if with_kcache:
        assert again["stats"]["hits"] == 1
        assert after["stats"]["misses"] == 1 and after["lib"] == after["fresh"]
    else:
        assert after["lib"] == before["lib"]


def test_install_twice_and_uninstall_restore_tinygrad():
    import kcache
    import kcache.tinygrad
    from tinygrad.runtime.support.compiler_cpu import ClangCompiler

    original = ClangCompiler.compile_cached
    s1 = kcache.tinygrad.install(kcache.MemoryStore())
    s2 = kcache.tinygrad.install(kcache.MemoryStore())
    assert s1 is not s2 and ClangCompiler.compile_cached is not original
    kcache.tinygrad.uninstall()
    assert ClangCompiler.compile_cached is original
    with pytest.raises(TypeError):
        kcache.tinygrad.install("not a store")


RACE = """
import json, os, select, subprocess
import kcache, kcache.tinygrad

if os.environ["STORE"] == "file":
    store = kcache.FileStore(os.environ["SHARED_DIR"])
else:
    store = kcache.TieredStore([
        kcache.FileStore(os.environ["LOCAL_DIR"]),
        kcache.RedisStore(os.environ["REDIS_URL"], prefix=os.environ["REDIS_PREFIX"], timeout_ms=5000),
    ])
state = kcache.tinygrad.install(store)

# The barrier: two FIFOs, opened in an order that pairs the two processes.
mine, theirs = os.environ["SEND"], os.environ["RECV"]
if os.environ["FIRST"] == "1":
    send, recv = os.open(mine, os.O_WRONLY), os.open(theirs, os.O_RDONLY)
else:
    recv, send = os.open(theirs, os.O_RDONLY), os.open(mine, os.O_WRONLY)

class Rendezvous:
    # After its first miss of a kernel, each process waits until the other
    # has missed it too: both are then after one kernel at once.
    def __init__(self, inner):
        self.inner, self.seen = inner, set()
    def get(self, key):
        value = self.inner.get(key)
        if value is None and key not in self.seen:
            self.seen.add(key)
            os.write(send, b".")
            ready, _, _ = select.select([recv], [], [], 300)
            if not ready or os.read(recv, 1) != b".":
                raise SystemExit("the other process never reached the barrier")
        return value
    def lease(self, key, wait):
        return self.inner.lease(key, wait)
    def put(self, key, value):
        self.inner.put(key, value)

state.store = Rendezvous(store)

compiled = []
real_check_output = subprocess.check_output
def counting(argv, *args, **kwargs):
    compiled.append(argv[0])
    return real_check_output(argv, *args, **kwargs)
subprocess.check_output = counting

from tinygrad import Tensor
a = Tensor([[float((i * 8 + j) % 11) for j in range(16)] for i in range(16)])
b = Tensor([[float((i + 2 * j) % 5) - 2 for j in range(16)] for i in range(16)])
out = (a @ b).relu().sum(axis=1).numpy().tolist()
print(json.dumps({"out": out, "compiled": len(compiled), "kernels": len(state.store.seen), "stats": state.stats()}))
"""


@pytest.mark.parametrize("store", ["file", "redis"])
def test_two_processes_racing_compile_each_kernel_once(request, tmp_path, store):
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "DEV": "CPU", "PARALLEL": "0", "STORE": store, "SHARED_DIR": str(tmp_path / "shared")}
    if store == "redis":
        env["REDIS_URL"] = request.getfixturevalue("redis_server")
        env["REDIS_PREFIX"] = request.getfixturevalue("redis_prefix")
    a_to_b, b_to_a = tmp_path / "a-to-b", tmp_path / "b-to-a"
    os.mkfifo(a_to_b)
    os.mkfifo(b_to_a)
    procs = []
    for name, send, recv, first in (("a", a_to_b, b_to_a, "1"), ("b", b_to_a, a_to_b, "0")):
        child_env = {
            **env,
            "CACHEDB": str(tmp_path / f"tinygrad-{name}.db"),
            "LOCAL_DIR": str(tmp_path / f"local-{name}"),
            "SEND": str(send),
            "RECV": str(recv),
            "FIRST": first,
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", RACE], env=child_env, cwd=tmp_path,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
        )
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, f"child failed ({p.returncode}):\n{out}\n{err}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    a, b = results
    kernels = a["kernels"]
    assert kernels > 0 and b["kernels"] == kernels
    assert a["stats"]["uncached"] == b["stats"]["uncached"] == 0
    # Both missed every kernel before either compiled it; one compiled each,
    # the other waited for its lease and loaded what it stored.
    assert a["compiled"] + b["compiled"] == kernels
    assert a["stats"]["compiles"] + b["stats"]["compiles"] == kernels
    assert a["stats"]["hits"] + b["stats"]["hits"] == kernels
    assert a["out"] == b["out"]
