"""cuda-core end to end, CPU only (cubin through NVRTC, no GPU)."""

from __future__ import annotations

import pytest
from cuda.core import ObjectCode, ProgramOptions

import kcache
import kcache.cuda

COMPILE_WITH_CACHE = """
import json, sys
from cuda.core import Program, ProgramOptions
import kcache.cuda

looked_up = []

class Watched(kcache.cuda.ProgramCache):
    def get(self, key, default=None):
        found = super().get(key, default)
        looked_up.append(found is not None)
        return found

cache = Watched(sys.argv[1] if len(sys.argv) > 1 else {path!r})
code = 'extern "C" __global__ void axpy(float a, float* x, float* y) {{ int i = threadIdx.x; y[i] += a * x[i]; }}'
obj = Program(code, "c++", options=ProgramOptions(arch="sm_80")).compile("cubin", cache=cache)
print(json.dumps({{"hits": looked_up, "entries": len(cache), "code": bytes(obj.code).hex()}}))
"""


def test_program_compile_misses_then_hits_in_a_fresh_process(run_python, tmp_path):
    code = COMPILE_WITH_CACHE.format(path=str(tmp_path / "cache"))
    first = run_python(code)
    assert first["hits"] == [False] and first["entries"] == 1
    second = run_python(code)
    assert second["hits"] == [True] and second["entries"] == 1
    assert second["code"] == first["code"]
    assert bytes.fromhex(first["code"])[:4] == b"\x7fELF"


def rendering(seg: int, buf: int, loop: int) -> str:
    return (
        f'extern "C" __global__ void scale__seg{seg}(float* n{buf}_x, int n) {{\n'
        f"  for (int i{loop} = 0; i{loop} < n; i{loop}++) n{buf}_x[i{loop}] *= 2.0f;\n}}\n"
    )


def test_compile_shares_one_nvrtc_compile_between_renamed_renderings():
    r = kcache.Resolver("cuda", compile_only=True, arch="sm_80")
    opts = ProgramOptions(arch="sm_80")
    a = kcache.cuda.compile(rendering(0, 1, 7), opts, kernel_name="scale__seg0", bound=["n1_x"], resolver=r)
    b = kcache.cuda.compile(rendering(3, 4, 2), opts, kernel_name="scale__seg3", bound=["n4_x"], resolver=r)
    assert r.totals()["kernels_compiled"] == 1 and r.totals()["kernels_reused"] == 1
    assert isinstance(a.object_code, ObjectCode) and isinstance(b.object_code, ObjectCode)
    assert a.symbol == b.symbol == "scale__seg0"
    assert bytes(a.object_code.code) == bytes(b.object_code.code)
    obj, symbol = b  # unpacks as (ObjectCode, symbol)
    assert symbol == "scale__seg0" and obj is b.object_code


def test_compile_keys_a_changed_kernel_apart():
    r = kcache.Resolver("cuda", compile_only=True)
    kcache.cuda.compile(rendering(0, 1, 7), kernel_name="scale__seg0", bound=["n1_x"], resolver=r)
    changed = rendering(0, 1, 7).replace("2.0f", "3.0f")
    kcache.cuda.compile(changed, kernel_name="scale__seg0", bound=["n1_x"], resolver=r)
    assert r.totals()["kernels_compiled"] == 2


def test_compile_with_infer_needs_no_bound_names():
    r = kcache.Resolver("cuda", compile_only=True)
    a = 'extern "C" __global__ void k(float* alpha, int n) { alpha[threadIdx.x] = n; }'
    b = 'extern "C" __global__ void k(float* beta, int m) { beta[threadIdx.x] = m; }'
    kcache.cuda.compile(a, kernel_name="k", infer=True, resolver=r)
    kcache.cuda.compile(b, kernel_name="k", infer=True, resolver=r)
    assert r.totals()["kernels_compiled"] == 1


def test_compile_through_a_store_answers_a_new_resolver(tmp_path):
    store = kcache.FileStore(str(tmp_path))
    first = kcache.cuda.compile(
        rendering(0, 1, 7), ["-arch=sm_80"], kernel_name="scale__seg0", bound=["n1_x"],
        resolver=kcache.Resolver("cuda", compile_only=True, arch="sm_80", store=store),
    )  # fmt: skip
    r = kcache.Resolver("cuda", compile_only=True, arch="sm_80", store=store)
    again = kcache.cuda.compile(rendering(2, 5, 1), kernel_name="scale__seg2", bound=["n5_x"], resolver=r)
    assert r.totals()["kernels_stored"] == 1
    assert bytes(again.object_code.code) == bytes(first.object_code.code)


def test_compile_errors():
    r = kcache.Resolver("cuda", compile_only=True)
    with pytest.raises(kcache.CompileError) as e:
        kcache.cuda.compile('extern "C" __global__ void bad() { nope(); }', kernel_name="bad", resolver=r)
    assert "nope" in e.value.log
    with pytest.raises(TypeError):
        kcache.cuda.compile(b"bytes", kernel_name="k", resolver=r)
    with pytest.raises(TypeError):
        kcache.cuda.compile("x", "-O3", kernel_name="k", resolver=r)
    with pytest.raises(ValueError):
        kcache.cuda.compile("x", kernel_name="k", target_type="ltoir", resolver=r)
    with pytest.raises(ValueError):
        kcache.cuda.compile("x", kernel_name="k", resolver=kcache.Resolver("cc"))
