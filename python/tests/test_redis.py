"""kcache.RedisStore: the tier shared by many machines, on a private
redis-server (conftest's redis_server), from Python."""

from __future__ import annotations

import pytest

import kcache

SCALE = "void scale__seg0(float* n1_x, int n) {\n  for (int i = 0; i < n; i++) n1_x[i] *= 2.0f;\n}\n"

# One process of a team: its own local directory, the team's Redis.
MACHINE = """
import json, os
import kcache
store = kcache.TieredStore([
    kcache.FileStore(os.environ["LOCAL_DIR"]),
    kcache.RedisStore(os.environ["REDIS_URL"], prefix=os.environ["REDIS_PREFIX"], timeout_ms=5000),
])
r = kcache.Resolver("cc", store=store)
batch = r.resolve([kcache.Kernel(os.environ["SRC"], "scale__seg0", ["n1_x"])])
print(json.dumps({"outcome": batch[0].outcome, "census": batch.census, "binary": batch[0].binary.hex()}))
"""


def test_a_second_machine_with_its_own_dir_answers_shared(run_python, redis_server, redis_prefix, tmp_path):
    def machine(name: str) -> dict:
        env = {"LOCAL_DIR": str(tmp_path / name), "REDIS_URL": redis_server, "REDIS_PREFIX": redis_prefix, "SRC": SCALE}
        return run_python(MACHINE, env=env)

    first = machine("a")
    assert first["outcome"] == "compiled" and first["census"]["kernels_compiled"] == 1
    second = machine("b")
    assert second["outcome"] == "shared"
    assert second["census"]["kernels_shared"] == 1 and second["census"]["kernels_compiled"] == 0
    assert second["binary"] == first["binary"]
    # The hit was copied into b's own directory: now a local answer.
    again = machine("b")
    assert again["outcome"] == "stored" and again["census"]["kernels_shared"] == 0


def test_redis_store_is_bytes_in_bytes_out(redis_store):
    store = redis_store()
    assert isinstance(store, kcache.Store)
    assert store.get(b"k") is None
    store.put(b"k", b"\x00v")
    store.put("s", bytearray(b"w"))
    assert store.get("k") == b"\x00v" and store.get(b"s") == b"w"
    assert len(store) == 2
    assert store.remove(b"k") and not store.remove(b"k")
    store.clear()
    assert len(store) == 0
    assert "redis" in store.describe()


def test_prefixes_are_separate_caches(redis_store):
    redis_store(prefix="one").put(b"k", b"1")
    assert redis_store(prefix="two").get(b"k") is None
    assert redis_store(prefix="one").get(b"k") == b"1"


def test_an_entry_without_the_readers_secret_is_a_miss(redis_store):
    redis_store(secret=b"team").put(b"k", b"v")
    assert redis_store(secret="team").get(b"k") == b"v"
    assert redis_store(secret=b"other").get(b"k") is None
    # Machines share one secret or none: a reader without one refuses a
    # frame that carries a MAC (it cannot tell a forged one).
    assert redis_store().get(b"k") is None
    redis_store().put(b"plain", b"v")
    assert redis_store(secret=b"team").get(b"plain") is None


def test_a_lease_is_held_until_released(redis_store):
    a, b = redis_store(), redis_store()
    with a.lease(b"k", wait=0) as held:
        assert held.held and not held.waited and not held.timed_out
        other = b.lease(b"k", wait=0)
        assert other.timed_out and not other.held
    assert not held.held
    with b.lease(b"k", wait=0) as free:
        assert free.held and not free.waited


def test_an_unreachable_server_is_a_miss_and_a_skipped_write(tmp_path):
    store = kcache.RedisStore(f"redis+unix://{tmp_path}/absent.sock")
    assert store.get(b"k") is None
    store.put(b"k", b"v")
    assert store.get(b"k") is None


def test_bad_arguments_are_python_errors(monkeypatch):
    with pytest.raises(kcache.StoreError, match="TLS"):
        kcache.RedisStore("rediss://h")
    with pytest.raises(kcache.StoreError, match="redis://"):
        kcache.RedisStore("http://h")
    with pytest.raises(ValueError, match="timeout_ms"):
        kcache.RedisStore("redis://h", timeout_ms=0)
    with pytest.raises(TypeError):
        kcache.RedisStore("redis://h", secret=1)
    monkeypatch.delenv("KCACHE_REDIS_URL", raising=False)
    with pytest.raises(ValueError, match="KCACHE_REDIS_URL"):
        kcache.RedisStore()
    with pytest.raises(ValueError, match="at least one tier"):
        kcache.TieredStore([])
