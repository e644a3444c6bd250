"""kcache as tinygrad's compile cache (its CPU device, through clang).

tinygrad keys its own compile cache on the source string alone: a changed
header, another clang or another meaning of ``-march=native`` hits the old
object. After :func:`install`, each compile is keyed by kcache's cc
backend instead (the compiler's identity, every flag, what ``native``
expands to, every header the source reads, tinygrad's version and its
compile function), and the objects live in a kcache store. tinygrad still
compiles every miss itself, with its own command, so what it computes does
not change.

Compiles are single-flight across the processes sharing the store (a file
or SQLite store on one machine; a Redis tier across machines): a miss takes
the key's compile lease (:meth:`kcache.Store.lease`) and looks the store up
again under it, so of two processes after one kernel, one compiles and the
other waits and loads. The wait is bounded (``KCACHE_LEASE_WAIT`` seconds,
default 60, as the resolver's); past it, or where the store cannot lease,
the kernel is compiled anyway.

Names are never canonicalized here: tinygrad's objects carry the kernel's
own name, so the key is over the text as written.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import _kcache

__all__ = ["Installed", "install", "uninstall", "default_dir"]

_log = logging.getLogger("kcache.tinygrad")

# The first function a kernel defines: tinygrad's renderer names it.
_FUNCTION = re.compile(r"\b([A-Za-z_]\w*)\s*\([^;{}()]*\)\s*\{")


def _tinygrad_version() -> str:
    try:
        return importlib.metadata.version("tinygrad")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _lease_wait() -> float:
    text = os.environ.get("KCACHE_LEASE_WAIT")
    if text is None:
        return 60.0
    try:
        wait = float(text)
    except ValueError:
        wait = -1.0
    if not 0.0 <= wait <= 86_400.0:
        _log.warning("kcache: invalid KCACHE_LEASE_WAIT=%r (expected seconds); waiting 60s", text)
        return 60.0
    return wait


def default_dir() -> Path:
    """``$KCACHE_DIR/tinygrad``, else ``$XDG_CACHE_HOME/kcache/tinygrad``,
    else ``~/.cache/kcache/tinygrad``."""
    if d := os.environ.get("KCACHE_DIR"):
        return Path(d) / "tinygrad"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kcache" / "tinygrad"


@dataclass
class Installed:
    """kcache's state inside tinygrad: the store, and what it did."""

    store: _kcache.Store
    compilers_dir: Path | None
    hits: int = 0
    misses: int = 0
    compiles: int = 0
    uncached: int = 0
    waited: int = 0
    lease_wait: float = field(default_factory=_lease_wait)
    _resolvers: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _warned: bool = False

    def stats(self) -> dict[str, int]:
        return {
            "hits": self.hits,
            "misses": self.misses,
            "compiles": self.compiles,
            "uncached": self.uncached,
            "waited": self.waited,
        }

    def _resolver(self, cc: str, cwd: str) -> _kcache.Resolver:
        with self._lock:
            r = self._resolvers.get((cc, cwd))
            if r is None:
                # Keys only: tinygrad compiles (-c, no link) with its own
                # command; kcache's cc backend sees the same compiler, flags,
                # search path and headers.
                r = _kcache.Resolver(
                    "cc",
                    compiler=cc,
                    source_dir=cwd,
                    compilers_dir=self.compilers_dir,
                    default_flags=[],
                    link_flags=[],
                    keys_only=True,
                )
                self._resolvers[(cc, cwd)] = r
            return r

    def _note(self, what: str, e: Exception) -> None:
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        _log.log(level, "kcache: %s (%s); compiling without the cache", what, e)

    def key(self, compiler, src: str) -> bytes | None:
        """The store key of ``src`` under ``compiler``, or None when kcache
        cannot key it (then it is compiled every time, never stored)."""
        from tinygrad.helpers import getenv  # noqa: PLC0415

        cc = getenv("CC", "clang")
        # The flags of tinygrad 0.14's ClangCompiler.compile but its
        # input/output ones (-c -x c - -o -); the compile function's own
        # source below covers any change to them.
        flags = [
            "-O2", "-fPIC", "-ffreestanding", "-fno-math-errno", "-nostdlib", "-fno-ident",
            f"--target={compiler.arch}-none-unknown-elf", *compiler.args,
        ]  # fmt: skip
        m = _FUNCTION.search(src)
        symbol = m.group(1) if m else "kernel"
        try:
            resolver = self._resolver(cc, os.getcwd())
            key, why = resolver.key_info(_kcache.Kernel(src, symbol, options=flags, exact=True))
        except (_kcache.KcacheError, OSError) as e:
            self._note(f"cannot key a {type(compiler).__name__} compile", e)
            return None
        if why is not None:
            return None
        try:
            compile_source = inspect.getsource(type(compiler).compile)
        except (OSError, TypeError):
            return None
        digest = _kcache.digest_parts(
            [b"kcache-tinygrad", b"1", type(compiler).__qualname__, _tinygrad_version(), compile_source, key]
        )
        return bytes.fromhex(digest)

    def compile_cached(self, compiler, src: str) -> bytes:
        key = self.key(compiler, src)
        if key is None:
            self.uncached += 1
            self.compiles += 1
            return compiler.compile(src)
        lib = self._get(key)
        if lib is not None:
            self.hits += 1
            return lib
        try:
            lease = self.store.lease(key, self.lease_wait)
        except _kcache.StoreError as e:
            self._note("the store cannot lease a compile", e)
            lease = None
        try:
            if lease is not None:
                # Under the lease, look again: whoever held it, or finished
                # between the miss above and the lease, has most likely
                # stored it.
                lib = self._get(key)
                if lib is not None:
                    self.hits += 1
                    self.waited += lease.waited
                    return lib
            self.misses += 1
            self.compiles += 1
            lib = compiler.compile(src)
            try:
                self.store.put(key, lib)
            except _kcache.StoreError as e:
                self._note("the store could not be written", e)
            return lib
        finally:
            if lease is not None:
                lease.release()

    def _get(self, key: bytes) -> bytes | None:
        try:
            return self.store.get(key)
        except _kcache.StoreError as e:
            self._note("the store could not be read", e)
            return None


_installed: Installed | None = None
_original = None


def install(store: _kcache.Store | None = None, *, compilers_dir: str | os.PathLike[str] | None = None) -> Installed:
    """Makes kcache tinygrad's compile cache for clang (its CPU device).

    ``store`` defaults to a :class:`kcache.FileStore` under
    :func:`default_dir`; ``compilers_dir`` keeps the compiler probes across
    processes (default: beside it). Installing again replaces the store.
    """
    global _installed, _original
    from tinygrad.runtime.support.compiler_cpu import ClangCompiler  # noqa: PLC0415

    if store is None:
        root = default_dir()
        store = _kcache.FileStore(os.fspath(root / "objects"))
        if compilers_dir is None:
            compilers_dir = root / "compilers"
    elif not isinstance(store, _kcache.Store):
        raise TypeError(f"store must be a kcache.Store, not {type(store).__name__}")
    state = Installed(store=store, compilers_dir=Path(compilers_dir) if compilers_dir is not None else None)
    if _installed is None:
        _original = ClangCompiler.__dict__.get("compile_cached")

        def compile_cached(self, src: str) -> bytes:
            assert _installed is not None  # uninstall() removes this method first
            return _installed.compile_cached(self, src)

        ClangCompiler.compile_cached = compile_cached  # type: ignore[method-assign]
    _installed = state
    return state


def uninstall() -> None:
    """Gives tinygrad its own compile cache back."""
    global _installed, _original
    from tinygrad.runtime.support.compiler_cpu import ClangCompiler  # noqa: PLC0415

    if _installed is None:
        return
    if _original is None:
        del ClangCompiler.compile_cached
    else:
        ClangCompiler.compile_cached = _original  # type: ignore[method-assign]
    _installed = None
    _original = None
