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
