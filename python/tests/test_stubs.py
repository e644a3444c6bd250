"""The type stubs match the module Python imports (mypy's stubtest)."""

from __future__ import annotations

import subprocess
import sys

import mypy  # noqa: F401  (scripts/test-python installs it)


def test_stubs_match_the_rust_module(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "kcache._kcache", "--ignore-missing-stub"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_package_is_typed():
    import importlib.resources

    assert importlib.resources.files("kcache").joinpath("py.typed").is_file()
