"""Shared fixtures: a `clang` on PATH for tinygrad, fresh processes, and a
private redis-server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest


def _ensure_clang(bin_dir: Path) -> None:
    # tinygrad runs `clang` (or $CC); Debian ships it as clang-15.
    if shutil.which("clang"):
        return
    for name in ("clang-15", "clang-16", "clang-17", "clang-14"):
        if found := shutil.which(name):
            bin_dir.mkdir(parents=True, exist_ok=True)
            (bin_dir / "clang").symlink_to(found)
            os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
            return


@pytest.fixture(scope="session", autouse=True)
def clang_on_path(tmp_path_factory):
    _ensure_clang(tmp_path_factory.mktemp("bin"))


@pytest.fixture
def run_python(tmp_path):
    """Runs `code` in a fresh interpreter; its last stdout line is JSON."""

    def run(code: str, *, env: dict[str, str] | None = None, cwd: Path | None = None) -> dict:
        full_env = dict(os.environ)
        full_env.update(env or {})
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd or tmp_path,
            timeout=600,
        )
        if proc.returncode != 0:
            raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    return run


def _required(what: str) -> bool:
    return what in [w.strip() for w in os.environ.get("KCACHE_TEST_REQUIRE", "").split(",")]


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A private redis-server on a unix socket in a tmp dir, with no
    persistence, killed at teardown: its `redis+unix://` URL. Skips where
    redis-server is absent, unless KCACHE_TEST_REQUIRE names `redis`."""
    exe = shutil.which("redis-server")
    if exe is None:
        if _required("redis"):
            pytest.fail("redis is required here (KCACHE_TEST_REQUIRE), and redis-server is not on PATH")
        pytest.skip("no redis-server on PATH")
    d = tmp_path_factory.mktemp("redis")
    sock = d / "r.sock"
    # The socket's path must fit sun_path (108 bytes); pytest's tmp dirs do.
    proc = subprocess.Popen(
        [exe, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--save", "", "--appendonly", "no", "--maxmemory", "64mb",
         "--maxmemory-policy", "allkeys-lru", "--daemonize", "no", "--logfile", "", "--dir", str(d)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = []
    try:
        # Ready when it says so in its log: read, never waited for by time.
        for line in proc.stdout:
            seen.append(line)
            if "ready to accept connections" in line.lower():
                break
        else:
            raise AssertionError("redis-server exited before it was ready:\n" + "".join(seen))
        # Keeps draining its log so it never blocks on a full pipe.
        drain = threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True)
        drain.start()
        yield f"redis+unix://{sock}"
    finally:
        proc.kill()
        proc.wait()
        if "drain" in locals():
            drain.join()
        proc.stdout.close()


@pytest.fixture
def redis_prefix(redis_server):
    """A key prefix of this test's own on the session's server."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def redis_store(redis_server, redis_prefix):
    """A factory of RedisStores on this test's prefix, with timeouts a
    loaded CI machine meets (the 50 ms default is for a healthy network)."""
    import kcache

    def make(**kw):
        kw.setdefault("prefix", redis_prefix)
        kw.setdefault("timeout_ms", 5000)
        kw.setdefault("connect_timeout_ms", 5000)
        return kcache.RedisStore(redis_server, **kw)

    return make
