"""kcache: compile GPU/CPU kernels once per search.

Keys every compile on a canonical text of the kernel (the kernel up to a
renaming of the names it binds), so renderings that differ only in
generated names compile once, and a changed kernel, compiler or header
never hits someone else's binary.

Adapters: :mod:`kcache.cuda` (cuda-core's program cache and an NVRTC
compile with canonical reuse) and :mod:`kcache.tinygrad` (tinygrad's
compile cache); each is imported on its own, so ``import kcache`` needs
neither cuda-core nor tinygrad.
"""

from ._kcache import (
    Answer,
    BackendUnavailableError,
    Batch,
    Canonical,
    CompileError,
    FileStore,
    KcacheError,
    Kernel,
    Lease,
    MemoryStore,
    RedisStore,
    RefusedError,
    Resolver,
    SqliteStore,
    Store,
    StoreError,
    TieredStore,
    __version__,
    canon,
    digest_parts,
    program_key,
)

__all__ = [
    "Answer",
    "BackendUnavailableError",
    "Batch",
    "Canonical",
    "CompileError",
    "FileStore",
    "KcacheError",
    "Kernel",
    "Lease",
    "MemoryStore",
    "RedisStore",
    "RefusedError",
    "Resolver",
    "SqliteStore",
    "Store",
    "StoreError",
    "TieredStore",
    "__version__",
    "canon",
    "digest_parts",
    "program_key",
]
