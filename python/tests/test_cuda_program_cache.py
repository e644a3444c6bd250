"""The drop-in proof: one conformance suite, the same assertions, run over
cuda-core's InMemoryProgramCache, its FileStreamProgramCache and
kcache.cuda.ProgramCache."""

from __future__ import annotations

import pytest
from cuda.core import ObjectCode
from cuda.core.utils import FileStreamProgramCache, InMemoryProgramCache, ProgramCacheResource

import kcache
import kcache.cuda

CACHES = {
    "cuda-core InMemoryProgramCache": lambda path, **kw: InMemoryProgramCache(**kw),
    "cuda-core FileStreamProgramCache": lambda path, **kw: FileStreamProgramCache(path, **kw),
    "kcache.cuda.ProgramCache (file)": lambda path, **kw: kcache.cuda.ProgramCache(path, **kw),
    "kcache.cuda.ProgramCache (sqlite)": lambda path, **kw: kcache.cuda.ProgramCache(path, store="sqlite", **kw),
    "kcache.cuda.ProgramCache (memory)": lambda path, **kw: kcache.cuda.ProgramCache(store="memory", **kw),
}
# On a private redis-server (conftest's redis_store): made in the fixture.
REDIS = "kcache.cuda.ProgramCache (redis)"


@pytest.fixture(params=[*CACHES, REDIS], ids=[*CACHES, REDIS])
def make(request, tmp_path):
    if request.param == REDIS:
        redis_store = request.getfixturevalue("redis_store")
        return lambda **kw: kcache.cuda.ProgramCache(store=redis_store(), **kw)
    return lambda **kw: CACHES[request.param](tmp_path / "cache", **kw)


@pytest.fixture
def cache(make):
    return make()


def test_is_a_program_cache_resource(cache):
    assert isinstance(cache, ProgramCacheResource)


def test_miss_raises_key_error_with_the_key_given(cache):
    with pytest.raises(KeyError) as e:
        cache["absent"]
    assert e.value.args == ("absent",)
    with pytest.raises(KeyError) as e:
        cache[b"absent"]
    assert e.value.args == (b"absent",)


def test_get_answers_default_on_a_miss(cache):
    assert cache.get(b"absent") is None
    assert cache.get(b"absent", b"dflt") == b"dflt"


def test_str_bytes_and_bytearray_keys_are_one_entry(cache):
    cache["k"] = b"v1"
    assert cache[b"k"] == b"v1"
    assert cache[bytearray(b"k")] == b"v1"
    cache[b"k"] = b"v2"
    assert cache["k"] == b"v2"
    assert len(cache) == 1


@pytest.mark.parametrize("value", [b"\x00payload", bytearray(b"\x00payload"), memoryview(b"\x00payload")])
def test_bytes_like_values_read_back_as_bytes(cache, value):
    cache[b"k"] = value
    got = cache[b"k"]
    assert type(got) is bytes and got == b"\x00payload"
    assert cache.get(b"k") == b"\x00payload"


def test_object_code_values_store_their_bytes(cache, tmp_path):
    cache[b"mem"] = ObjectCode.from_cubin(b"cubin-bytes")
    assert cache[b"mem"] == b"cubin-bytes"
    on_disk = tmp_path / "k.cubin"
    on_disk.write_bytes(b"from-a-file")
    cache[b"path"] = ObjectCode.from_cubin(str(on_disk))
    assert cache[b"path"] == b"from-a-file"


def test_path_backed_object_code_whose_file_is_gone_is_refused(cache, tmp_path):
    gone = tmp_path / "gone.cubin"
    with pytest.raises(FileNotFoundError, match="cannot store path-backed ObjectCode in cache"):
        cache[b"k"] = ObjectCode.from_cubin(str(gone))
    assert cache.get(b"k") is None


@pytest.mark.parametrize("key", [1, 1.5, None, ("k",)])
def test_keys_of_other_types_are_type_errors(cache, key):
    with pytest.raises(TypeError, match="cache keys must be bytes or str"):
        cache[key]
    with pytest.raises(TypeError, match="cache keys must be bytes or str"):
        cache[key] = b"v"
    with pytest.raises(TypeError, match="cache keys must be bytes or str"):
        del cache[key]
    with pytest.raises(TypeError, match="cache keys must be bytes or str"):
        cache.get(key)


@pytest.mark.parametrize("value", ["text", 1, None, [1, 2]])
def test_values_of_other_types_are_type_errors(cache, value):
    with pytest.raises(TypeError, match="cache values must be bytes-like or ObjectCode"):
        cache[b"k"] = value
    assert cache.get(b"k") is None


def test_delete_removes_and_a_missing_delete_is_a_key_error(cache):
    cache[b"k"] = b"v"
    del cache["k"]
    assert cache.get(b"k") is None
    with pytest.raises(KeyError):
        del cache[b"k"]


def test_len_and_clear(cache):
    for i in range(3):
        cache[f"k{i}"] = bytes([i])
    assert len(cache) == 3
    cache.clear()
    assert len(cache) == 0
    assert cache.get("k0") is None


def test_update_takes_a_mapping_or_pairs(cache):
    cache.update({b"a": b"1", "b": bytearray(b"2")})
    cache.update([(b"c", b"3"), ("d", memoryview(b"4"))])
    assert [cache[k] for k in (b"a", b"b", b"c", b"d")] == [b"1", b"2", b"3", b"4"]


def test_context_manager_returns_the_cache_and_closes(make):
    with make() as c:
        c[b"k"] = b"v"
        assert c[b"k"] == b"v"
    c.close()


def test_there_is_no_contains(cache):
    assert not hasattr(type(cache), "__contains__")


@pytest.mark.parametrize("size", [0, -1])
def test_a_cap_that_is_not_positive_is_a_value_error(make, size):
    with pytest.raises(ValueError, match="max_size_bytes must be positive"):
        make(max_size_bytes=size)
