"""kcache's library in Python: canon, keys, stores, the resolver, errors."""

from __future__ import annotations

import ctypes

import pytest

import kcache

SCALE = "void scale__seg{s}(float* n{b}_x, int n) {{\n  for (int i{i} = 0; i{i} < n; i{i}++) n{b}_x[i{i}] *= 2.0f;\n}}\n"


def scale(s: int, b: int, i: int) -> kcache.Kernel:
    return kcache.Kernel(SCALE.format(s=s, b=b, i=i), f"scale__seg{s}", [f"n{b}_x"])


def test_canon_renames_bound_names_and_symbols_like_the_cli():
    a = kcache.canon(SCALE.format(s=0, b=1, i=7), kernel_name="scale__seg0", bound=["n1_x"])
    b = kcache.canon(SCALE.format(s=3, b=4, i=2), kernel_name="scale__seg3", bound=["n4_x"])
    assert a.text == b.text
    assert a.bound_renamed
    assert ("n1_x", "kc1") in a.renamed or any(f == "n1_x" for f, _ in a.renamed)
    plain = kcache.canon(SCALE.format(s=0, b=1, i=7), kernel_name="scale__seg0")
    assert b"n1_x" in plain.text


def test_canon_infer_renames_declared_names_without_bound():
    a = kcache.canon("void k(float* alpha, int n) { alpha[0] = n; }", kernel_name="k", infer=True)
    b = kcache.canon("void k(float* beta, int m) { beta[0] = m; }", kernel_name="k", infer=True)
    assert a.text == b.text
    assert "alpha" in a.inferred
    without = kcache.canon("void k(float* alpha, int n) { alpha[0] = n; }", kernel_name="k")
    assert without.text != a.text


def test_program_key_sees_every_input():
    base = dict(backend="cc", identity="gcc 12", canonical=b"void k(){}", options=["-O2"], kernel_token="k")
    k = kcache.program_key(**base)
    assert len(k) == 32 and k == kcache.program_key(**base)
    for change in (
        {"backend": "opencl"},
        {"identity": "gcc 13"},
        {"canonical": b"void k(){ }"},
        {"options": ["-O3"]},
        {"kernel_token": "j"},
        {"extra": [bytes(32)]},
        {"backend_key_version": 1},
    ):
        assert kcache.program_key(**{**base, **change}) != k, change


@pytest.mark.parametrize("make", ["memory", "file", "sqlite"])
def test_stores_are_bytes_in_bytes_out(make, tmp_path):
    store = {
        "memory": lambda: kcache.MemoryStore(),
        "file": lambda: kcache.FileStore(str(tmp_path / "f")),
        "sqlite": lambda: kcache.SqliteStore(str(tmp_path / "s")),
    }[make]()
    assert isinstance(store, kcache.Store)
    assert store.get(b"k") is None
    store.put(b"k", b"\x00value")
    store.put("s", bytearray(b"other"))
    assert store.get("k") == b"\x00value" and store.get(b"s") == b"other"
    assert len(store) == 2
    assert store.remove(b"k") and not store.remove(b"k")
    assert store.stats()["entries"] == 1
    store.clear()
    assert len(store) == 0


def test_file_store_entries_survive_a_new_store_object(tmp_path):
    kcache.FileStore(str(tmp_path)).put(b"k", b"v")
    assert kcache.FileStore(str(tmp_path)).get(b"k") == b"v"


def test_resolver_reuses_a_renamed_kernel_and_ctypes_runs_it():
    r = kcache.Resolver("cc", store=kcache.MemoryStore())
    first = r.resolve([scale(0, 1, 7)])
    assert first.census["kernels_compiled"] == 1
    again = r.resolve([scale(3, 4, 2)])
    assert again.census["kernels_reused"] == 1 and again.census["kernels_compiled"] == 0
    answer = again[0]
    assert answer.outcome == "reused" and answer.symbol == "scale__seg0"
    assert answer.binary == first[0].binary and answer.key == first[0].key
    fn = ctypes.CDLL(str(answer.path))[answer.symbol]
    data = (ctypes.c_float * 3)(1, 2, 3)
    fn(data, 3)
    assert list(data) == [2, 4, 6]


def test_resolver_answers_from_the_store_in_a_new_resolver(tmp_path):
    store = kcache.FileStore(str(tmp_path))
    kcache.Resolver("cc", store=store).resolve([scale(0, 1, 7)])
    batch = kcache.Resolver("cc", store=store).resolve([("" + SCALE.format(s=5, b=9, i=1), "scale__seg5", ["n9_x"])])
    assert batch[0].outcome == "stored" and batch.census["kernels_stored"] == 1


def test_a_repeated_text_is_keyed_once_per_resolver():
    r = kcache.Resolver("cc", store=kcache.MemoryStore())
    assert r.resolve([scale(0, 1, 7)]).census["keys_derived"] == 1
    assert r.resolve([scale(0, 1, 7)]).census["keys_derived"] == 0


def test_batch_census_counts_one_compile_for_a_split_batch():
    r = kcache.Resolver("cc", split=2)
    batch = r.resolve([scale(0, 1, 7), scale(1, 2, 3), ("void other(float* x) { x[0] = 1; }", "other")])
    assert len(batch) == 3
    assert batch.census["kernels_compiled"] == 2 and batch.census["kernels_reused"] == 1
    assert r.totals()["kernels_requested"] == 3


def test_cuda_resolver_answers_cubin_bytes():
    r = kcache.Resolver("cuda", compile_only=True, arch="sm_80")
    a = r.resolve([('extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', "k")])[0]
    assert a.backend == "cuda" and a.binary[:4] == b"\x7fELF"
    assert "nvrtc" in r.identity and "sm_80" in r.identity


def test_keys_only_cc_backend_keys_but_refuses_to_compile():
    keys = kcache.Resolver("cc", keys_only=True)
    full = kcache.Resolver("cc")
    k = scale(0, 1, 7)
    key, why = keys.key_info(k)
    assert len(key) == 32 and why is None
    assert key != full.key(k)
    with pytest.raises(kcache.RefusedError):
        keys.resolve([k])


def test_key_info_reports_an_uncacheable_kernel():
    r = kcache.Resolver("cc")
    _, why = r.key_info(("const char* when(void) { return __TIME__; }", "when"))
    assert why is not None


# ---------------------------------------------------------------- errors ----


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError):
        kcache.canon(123)
    with pytest.raises(TypeError):
        kcache.canon("void k(){}", bound="x")
    r = kcache.Resolver("cc")
    with pytest.raises(TypeError):
        r.resolve("void k(){}")
    with pytest.raises(TypeError):
        r.resolve([(1, 2)])
    with pytest.raises(TypeError):
        kcache.MemoryStore().put(1, b"v")
    with pytest.raises(TypeError):
        kcache.MemoryStore().put(b"k", 1)


def test_unknown_and_missing_backends_raise():
    with pytest.raises(ValueError, match="backend must be one of"):
        kcache.Resolver("metal")
    with pytest.raises(kcache.BackendUnavailableError):
        kcache.Resolver("cc", compiler="/nonexistent/kcache-test-cc")
    with pytest.raises(kcache.BackendUnavailableError):
        kcache.Resolver("cuda", compile_only=True, arch="sm_1")


def test_failing_compile_raises_with_the_compilers_log():
    r = kcache.Resolver("cc")
    with pytest.raises(kcache.CompileError) as e:
        r.resolve([("void broken(float* x) { x[0] = undeclared_name; }", "broken")])
    assert "undeclared_name" in e.value.log
    assert e.value.kernels == ["broken"]
    # The resolver is still usable afterwards.
    assert r.resolve([scale(0, 1, 7)])[0].outcome == "compiled"


def test_failing_cuda_compile_raises_with_nvrtcs_log():
    r = kcache.Resolver("cuda", compile_only=True)
    with pytest.raises(kcache.CompileError) as e:
        r.resolve([('extern "C" __global__ void bad(float* x) { x[0] = nope; }', "bad")])
    assert "nope" in e.value.log


def test_a_store_that_cannot_open_raises_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(kcache.StoreError):
        kcache.FileStore(str(blocker / "store"))
    assert issubclass(kcache.StoreError, OSError)


def test_file_leases_exclude_and_memory_leases_never_wait(tmp_path):
    a, b = kcache.FileStore(str(tmp_path / "f")), kcache.FileStore(str(tmp_path / "f"))
    held = a.lease(b"k", wait=0)
    assert held.held and not held.waited
    assert b.lease(b"k", wait=0).timed_out
    held.release()
    assert not held.held
    with b.lease(b"k", wait=0) as again:
        assert again.held
    m = kcache.MemoryStore()
    first = m.lease(b"k", wait=0)
    assert first.held and m.lease(b"k", wait=0).held
    with pytest.raises(ValueError, match="wait"):
        m.lease(b"k", wait=-1)
