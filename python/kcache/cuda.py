"""kcache for cuda-core users.

* :class:`ProgramCache` is a drop-in ``cuda.core.utils.ProgramCacheResource``
  (``Program.compile("cubin", cache=ProgramCache())``) on kcache's stores:
  every read is checked against the checksum written with it, so a torn or
  damaged entry is a miss, never a bad cubin.
* :func:`compile` is where canonical reuse happens: renderings of a kernel
  that differ only in generated names share one NVRTC compile.

Needs cuda-core (``pip install 'kcache[cuda]'``); cubin and PTX need NVRTC
only, no GPU.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from cuda.core import ObjectCode, ProgramOptions
from cuda.core.utils import ProgramCacheResource

from . import _kcache

__all__ = ["CompileResult", "ProgramCache", "compile", "default_dir"]

_log = logging.getLogger("kcache.cuda")


def default_dir() -> Path:
    """``$KCACHE_DIR/cuda``, else ``$XDG_CACHE_HOME/kcache/cuda``, else
    ``~/.cache/kcache/cuda``."""
    if d := os.environ.get("KCACHE_DIR"):
        return Path(d) / "cuda"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kcache" / "cuda"


# cuda-core's own coercions (cuda/core/utils/_program_cache/_abc.py, 1.2.x),
# restated so the drop-in accepts and refuses exactly what cuda-core's
# caches do, with the same messages.
def _extract_bytes(value: object) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, ObjectCode):
        code = value.code
        if isinstance(code, str):
            try:
                return Path(code).read_bytes()
            except FileNotFoundError:
                raise FileNotFoundError(
                    f"cannot store path-backed ObjectCode in cache: {code} no longer exists"
                ) from None
        return bytes(code)
    raise TypeError(f"cache values must be bytes-like or ObjectCode, got {type(value).__name__}")


def _as_key_bytes(key: object) -> bytes:
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    raise TypeError(f"cache keys must be bytes or str, got {type(key).__name__}")


class ProgramCache(ProgramCacheResource):
    """cuda-core's program cache interface on a kcache store.

    ``store`` is ``"file"`` (default: a :class:`kcache.FileStore` under
    ``path``, else :func:`default_dir`), ``"sqlite"``, ``"memory"`` or an
    open :class:`kcache.Store` (a :class:`kcache.RedisStore` shares the
    cache between machines). The cache never fails a compile: a store
    that cannot be read is a miss, one that cannot be written is skipped,
    each logged (``logging`` name ``kcache.cuda``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        store: str | _kcache.Store = "file",
        max_size_bytes: int | None = None,
    ) -> None:
        if max_size_bytes is not None and max_size_bytes <= 0:
            raise ValueError("max_size_bytes must be positive or None (0 would evict every write)")
        if isinstance(store, _kcache.Store):
            if path is not None or max_size_bytes is not None:
                raise ValueError("path and max_size_bytes belong to the store when one is given")
            self._store = store
        elif store == "memory":
            self._store = _kcache.MemoryStore(max_size_bytes)
        elif store in ("file", "sqlite"):
            root = Path(path) if path is not None else default_dir() / "program-cache"
            opener = _kcache.FileStore if store == "file" else _kcache.SqliteStore
            self._store = opener(os.fspath(root), max_size_bytes)
        else:
            raise ValueError(f'store must be "file", "sqlite", "memory" or a kcache.Store, not {store!r}')
        self._warned = False

    @property
    def store(self) -> _kcache.Store:
        """The kcache store underneath."""
        return self._store

    def _store_failed(self, what: str, e: Exception) -> None:
        level = logging.DEBUG if self._warned else logging.WARNING
        self._warned = True
        _log.log(level, "kcache: the program cache could not %s (%s); compiling past it", what, e)

    def __getitem__(self, key: object) -> bytes:
        k = _as_key_bytes(key)
        try:
            data = self._store.get(k)
        except _kcache.StoreError as e:
            self._store_failed("read", e)
            data = None
        if data is None:
            raise KeyError(key)
        return data

    def get(self, key: object, default: bytes | None = None) -> bytes | None:
        # One store call: no KeyError raised and caught on a miss (and
        # cuda-core's own keys, bytes, skip the coercion).
        k = key if type(key) is bytes else _as_key_bytes(key)
        try:
            data = self._store.get(k)
        except _kcache.StoreError as e:
            self._store_failed("read", e)
            return default
        return default if data is None else data

    def __setitem__(self, key: object, value: object) -> None:
        data = _extract_bytes(value)
        k = _as_key_bytes(key)
        try:
            self._store.put(k, data)
        except _kcache.StoreError as e:
            self._store_failed("write", e)

    def __delitem__(self, key: object) -> None:
        k = _as_key_bytes(key)
        if not self._store.remove(k):
            raise KeyError(key)

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        self._store.clear()

    def close(self) -> None:
        try:
            self._store.flush()
        except _kcache.StoreError as e:
            self._store_failed("flush", e)

    def __repr__(self) -> str:
        return f"<kcache.cuda.ProgramCache on {self._store.describe()}>"


class CompileResult(NamedTuple):
    """What :func:`compile` answers."""

    object_code: ObjectCode
    """The program, as cuda-core loads it."""
    symbol: str
    """The kernel's name in ``object_code``: the name it was first compiled
    under, which may be another rendering's."""


_ARCH_FLAGS = ("-arch", "--gpu-architecture")
_resolvers: dict[tuple[str | None, str], _kcache.Resolver] = {}
_resolvers_lock = threading.Lock()


def _split_options(options: ProgramOptions | Sequence[str] | None) -> tuple[str | None, list[str], str]:
    """(arch, NVRTC flags without the architecture, program name)."""
    if options is None:
        return None, [], "kcache_program"
    if isinstance(options, ProgramOptions):
        flags = [o.decode() if isinstance(o, bytes) else str(o) for o in options.as_bytes("nvrtc")]
        arch, name = options.arch, options.name
    elif isinstance(options, (str, bytes)) or not isinstance(options, Sequence):
        raise TypeError("options must be a cuda.core.ProgramOptions or a sequence of str")
    else:
        flags, arch, name = list(options), None, "kcache_program"
        for f in flags:
            if not isinstance(f, str):
                raise TypeError("options must be a cuda.core.ProgramOptions or a sequence of str")
    rest = []
    for f in flags:
        flag, eq, value = f.partition("=")
        if flag in _ARCH_FLAGS and eq:
            arch = value
        else:
            rest.append(f)
    return arch, rest, name or "kcache_program"


def compile(
    code: str,
    options: ProgramOptions | Sequence[str] | None = None,
    target_type: str = "cubin",
    *,
    kernel_name: str,
    bound: Sequence[str] = (),
    infer: bool = False,
    resolver: _kcache.Resolver | None = None,
) -> CompileResult:
    """Compiles CUDA C++ ``code`` through kcache: kernels equal up to the
    names they bind (``bound``, loop symbols, scope locals, and with
    ``infer`` every name the binder verifies) share one NVRTC compile.

    ``kernel_name`` is the ``extern "C" __global__`` function; look the
    kernel up as ``result.object_code.get_kernel(result.symbol)``.
    ``resolver`` is a ``kcache.Resolver("cuda", compile_only=True, ...)``
    of your own (its store and code cache); by default one per
    architecture and target, in memory, shared by every call.
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be str, not {type(code).__name__}")
    if target_type not in ("cubin", "ptx"):
        raise ValueError(f'target_type must be "cubin" or "ptx", not {target_type!r}')
    arch, flags, name = _split_options(options)
    if resolver is None:
        with _resolvers_lock:
            resolver = _resolvers.get((arch, target_type))
            if resolver is None:
                resolver = _kcache.Resolver(
                    "cuda", arch=arch, ptx=target_type == "ptx", compile_only=True
                )
                _resolvers[(arch, target_type)] = resolver
    elif resolver.backend != "cuda":
        raise ValueError(f"resolver must be a CUDA resolver, not {resolver.backend}")
    kernel = _kcache.Kernel(code, kernel_name, list(bound), flags, infer=infer)
    answer = resolver.resolve([kernel])[0]
    binary = answer.binary
    if target_type == "ptx":
        obj = ObjectCode.from_ptx(binary, name=name)
    else:
        obj = ObjectCode.from_cubin(binary, name=name)
    return CompileResult(obj, answer.symbol)
