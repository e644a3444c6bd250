# Type stubs of kcache's Rust module (python/src). Every call that compiles
# or touches a store releases the GIL.
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, Literal, TypeAlias, final

from typing_extensions import Self, disjoint_base

__version__: str

_Text: TypeAlias = str | bytes
_Key: TypeAlias = bytes | bytearray | str
_Value: TypeAlias = bytes | bytearray | memoryview
_Path: TypeAlias = str | PathLike[str]

class KcacheError(Exception):
    """Any error kcache reports."""

class StoreError(OSError):
    """A store could not be opened, read or written."""

class CompileError(KcacheError):
    """The compiler rejected a kernel."""

    log: str
    """The compiler's diagnostics."""
    kernels: list[str]
    """The kernels of the failed program."""

class BackendUnavailableError(KcacheError):
    """The backend's compiler, library or device is missing."""

class RefusedError(KcacheError):
    """kcache will not key or compile this (an option with side effects, an
    input the key cannot see)."""

@final
class Canonical:
    """A kernel's canonical form (``kcache canon --json``)."""

    @property
    def text(self) -> bytes: ...
    @property
    def canonical(self) -> str: ...
    @property
    def kernel_token(self) -> str | None: ...
    @property
    def renamed(self) -> list[tuple[str, str]]: ...
    @property
    def bound_renamed(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def raw(self) -> str | None: ...
    @property
    def uncacheable(self) -> str | None: ...
    @property
    def inferred(self) -> list[str]: ...
    @property
    def kept(self) -> list[tuple[str, str]]: ...
    @property
    def given_up(self) -> str | None: ...
    @property
    def unparsed(self) -> list[tuple[int, int]]: ...

def canon(
    text: _Text,
    *,
    kernel_name: str | None = None,
    bound: Sequence[str] | None = None,
    keep: Sequence[str] | None = None,
    free: Sequence[str] | None = None,
    derivations: Sequence[str] | None = None,
    symbols: bool = True,
    scope_locals: bool = True,
    infer: bool = False,
) -> Canonical:
    """The canonical text of a kernel, with ``kcache canon``'s options."""

def program_key(
    *,
    backend: str,
    identity: str,
    canonical: _Text,
    options: Sequence[str] | None = None,
    kernel_token: str | None = None,
    extra: Sequence[bytes] | None = None,
    backend_key_version: int = 0,
) -> bytes:
    """The 32-byte program key the resolver and the stores use."""

def digest_parts(parts: Iterable[_Text]) -> str:
    """The hex blake3 digest of length-prefixed parts (``kcache digest``)."""

@disjoint_base
class Store:
    """A store of compiled programs: bytes in, bytes out."""

    def get(self, key: _Key) -> bytes | None: ...
    def put(self, key: _Key, value: _Value) -> None: ...
    def remove(self, key: _Key) -> bool: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...
    def flush(self) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def verify(self) -> tuple[int, list[str]]: ...
    def prune(self, max_bytes: int) -> int: ...
    def lease(self, key: _Key, wait: float = 60.0) -> Lease:
        """Takes ``key``'s compile lease, waiting up to ``wait`` seconds for
        another holder; raises StoreError when the store cannot lease."""
    def describe(self) -> str: ...

@final
class Lease:
    """A key's compile lease: held until ``release()`` or the end of its
    ``with`` block (or the holder's death)."""

    @property
    def waited(self) -> bool:
        """Another holder had it: read the store again before compiling."""
    @property
    def timed_out(self) -> bool:
        """The other holder kept it past the wait: compile without it."""
    @property
    def held(self) -> bool: ...
    def release(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, ty: object, value: object, tb: object, /) -> bool: ...

@final
class MemoryStore(Store):
    def __new__(cls, max_bytes: int | None = None) -> Self: ...

@final
class FileStore(Store):
    def __new__(cls, root: _Path, max_bytes: int | None = None) -> Self: ...

@final
class SqliteStore(Store):
    def __new__(cls, root: _Path, max_bytes: int | None = None) -> Self: ...

@final
class RedisStore(Store):
    """A Redis server shared by many machines; without ``url``, configured
    by the environment (``KCACHE_REDIS_URL`` and the other ``KCACHE_REDIS_*``)."""

    def __new__(
        cls,
        url: str | None = None,
        *,
        prefix: str | None = None,
        secret: bytes | bytearray | str | None = None,
        ttl: int | None = None,
        timeout_ms: int | None = None,
        connect_timeout_ms: int | None = None,
        cooldown_ms: int | None = None,
        lease_ms: int | None = None,
        max_value: int | None = None,
    ) -> Self: ...

@final
class TieredStore(Store):
    """Stores composed fastest first (memory, file or SQLite, Redis)."""

    def __new__(cls, tiers: Sequence[Store]) -> Self: ...

@final
class Kernel:
    """One kernel of a batch."""

    def __new__(
        cls,
        text: str,
        symbol: str,
        bound: Sequence[str] | None = None,
        options: Sequence[str] | None = None,
        *,
        keep: Sequence[str] | None = None,
        free: Sequence[str] | None = None,
        derivations: Sequence[str] | None = None,
        symbols: bool = True,
        scope_locals: bool = True,
        infer: bool = False,
        exact: bool = False,
    ) -> Self: ...
    @property
    def text(self) -> str: ...
    @property
    def symbol(self) -> str: ...
    @property
    def options(self) -> list[str]: ...
    @property
    def bound(self) -> list[str]: ...

_BatchItem: TypeAlias = (
    Kernel | tuple[str, str] | tuple[str, str, Sequence[str]] | tuple[str, str, Sequence[str], Sequence[str]]
)

@final
class Answer:
    """One kernel's answer."""

    @property
    def symbol(self) -> str: ...
    @property
    def outcome(self) -> Literal["compiled", "reused", "stored", "shared", "uncacheable"]: ...
    @property
    def key(self) -> bytes: ...
    @property
    def binary(self) -> bytes: ...
    @property
    def path(self) -> PathLike[str] | None: ...
    @property
    def backend(self) -> str: ...
    def object_code(self) -> Any:
        """CUDA: the program as a ``cuda.core.ObjectCode``."""

@final
class Batch:
    """A resolved batch: one answer per kernel, and the census."""

    @property
    def answers(self) -> list[Answer]: ...
    @property
    def census(self) -> dict[str, int | float]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int, /) -> Answer: ...

@final
class Resolver:
    """kcache's resolver over one backend, a code cache and an optional store."""

    def __new__(
        cls,
        backend: Literal["cc", "opencl", "cuda", "vulkan"] = "cc",
        *,
        store: Store | None = None,
        split: int | None = None,
        min_kernels: int = 1,
        threads: Literal["rayon", "os"] = "rayon",
        device: int = 0,
        arch: str | None = None,
        ptx: bool = False,
        compile_only: bool = False,
        source_dir: _Path | None = None,
        compilers_dir: _Path | None = None,
        compiler: str | None = None,
        default_flags: Sequence[str] | None = None,
        link_flags: Sequence[str] | None = None,
        keys_only: bool = False,
    ) -> Self: ...
    def resolve(self, batch: Iterable[_BatchItem]) -> Batch: ...
    def key(self, kernel: _BatchItem) -> bytes: ...
    def key_info(self, kernel: _BatchItem) -> tuple[bytes, str | None]: ...
    def totals(self) -> dict[str, int | float]: ...
    def clear(self) -> None: ...
    @property
    def backend(self) -> str: ...
    @property
    def identity(self) -> str: ...
    def describe(self) -> str: ...
    @property
    def store_errors(self) -> int: ...
