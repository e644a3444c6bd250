"""Shared fixtures: a `clang` on PATH for tinygrad, and fresh processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
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
