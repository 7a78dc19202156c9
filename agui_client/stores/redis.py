"""``RedisStore``: threads in Redis, shared by every replica of an application.

Each thread is one hash at ``<prefix><thread_id>`` with the fields ``version``, ``data`` (the JSON
text of ``ThreadState.dump()``), ``claim`` (the owner token; empty when nobody holds one) and
``format``. Every write is one Lua script run (``EVALSHA``, falling back to ``EVAL``), so Redis does
the compare-and-set atomically; the script changes the hash with a single ``HSET``, so even a script
stopped half-way by an error writes all of a record or none of it. Reads are one ``HGETALL``.

How durable a save is past a Redis restart is Redis's configuration (``appendonly yes`` with
``appendfsync always`` for the strongest promise); the store promises that no reader ever sees half a
write, and that no two writers both advance a thread from the same version.

``redis`` is imported when a ``RedisStore`` is made, so ``agui_client`` imports without the extra.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from .base import (
    STORE_FORMAT_VERSION,
    Head,
    Operation,
    StoredThread,
    _check_owner,
    _closed,
    _creation_data,
    _decode_record,
    _encode_data,
)
from .base import _StoreBase as _Base
from .base import check_write as _check_write

if TYPE_CHECKING:
    import redis as _redis

__all__ = ["RedisStore"]

# KEYS[1]: the thread's hash. ARGV: operation, expected version ("" for a create), owner, data, format.
# Returns {1, new version}, or {0, version (-1 when absent), claim, format} when refused: the Python
# side then runs check_write on that head to raise the same error the other stores raise. A claim that
# finds the very claim it asks for (its owner's, one version on; version 0 for a create) answers that
# version and writes nothing, as check_write recognises it.
_SCRIPT = """
local key = KEYS[1]
local op, expected, owner, data, ours = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local head = redis.call('HMGET', key, 'version', 'claim', 'format')
local version = head[1] and tonumber(head[1])
local claim = head[2] or ''
local format = tonumber(head[3] or '1')
local function refused() return {0, version or -1, claim, format} end
if expected == '' and op ~= 'release' then
  if version then
    if op == 'claim' and version == 0 and claim == owner then return {1, 0} end
    return refused()
  end
  if op == 'save' then
    redis.call('HSET', key, 'version', 1, 'data', data, 'claim', '', 'format', ours)
    return {1, 1}
  end
  redis.call('HSET', key, 'version', 0, 'data', data, 'claim', owner, 'format', ours)
  return {1, 0}
end
expected = tonumber(expected)
if not version or not expected or format > ours then return refused() end
if op == 'claim' and claim ~= '' and claim == owner and version == expected + 1 then return {1, version} end
if version ~= expected then return refused() end
if op == 'save' then
  redis.call('HSET', key, 'version', version + 1, 'data', data, 'claim', '', 'format', ours)
elseif op == 'claim' then
  if claim ~= '' then return refused() end
  redis.call('HSET', key, 'version', version + 1, 'claim', owner)
elseif op == 'release' then
  if claim ~= owner then return refused() end
  redis.call('HSET', key, 'version', version + 1, 'claim', '')
else
  return redis.error_reply('agui store: unknown operation ' .. op)
end
return {1, version + 1}
"""


class RedisStore(_Base):
    """Threads in Redis, for applications whose replicas share threads.

    Args:
        url_or_client: a ``redis://`` URL (the store makes the client and closes it), or a
            synchronous ``redis.Redis`` client (the caller keeps ownership; ``close()`` leaves it
            open). Clients with or without ``decode_responses`` both work.
        prefix: prepended to the thread id to make the key.

    Raises:
        ImportError: the ``redis`` extra is not installed.
        TypeError: an asyncio client was given (the async shells call the store in a worker thread).

    Example::

        with RedisStore("redis://127.0.0.1:6379/0") as store:
            version = store.claim("t1", expected_version=3, owner=token)
    """

    def __init__(self, url_or_client: str | _redis.Redis, *, prefix: str = "agui:thread:") -> None:
        try:
            import redis
            import redis.asyncio
        except ImportError as exc:
            raise ImportError("RedisStore needs the redis extra: pip install 'agui-client[redis]'") from exc
        if isinstance(url_or_client, redis.asyncio.Redis):
            raise TypeError("RedisStore needs a synchronous redis.Redis client; async code calls it in a worker thread")
        self._redis_error: type[Exception] = redis.RedisError
        # What a dropped connection raises: the command may have run, its reply is lost.
        self._connection_lost: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)
        self._owns_client = isinstance(url_or_client, str)
        self._client: _redis.Redis = (
            redis.Redis.from_url(url_or_client) if isinstance(url_or_client, str) else url_or_client
        )
        self._prefix = prefix
        self._script = self._client.register_script(_SCRIPT)
        self._closed = False

    def load(self, thread_id: str) -> StoredThread | None:
        """The stored thread, or ``None`` when there is none.

        Raises:
            StoreError: Redis failed, the store is closed, or the record is unreadable or of a newer format.
        """
        with self._calls(thread_id):
            fields: Mapping[Any, Any] = self._client.hgetall(self._key(thread_id))
        if not fields:
            return None
        record = {_text(k): v for k, v in fields.items()}
        try:
            version = int(record["version"])
            text = _text(record["data"])
            claim = _text(record.get("claim", b"")) or None
            format = int(record.get("format", STORE_FORMAT_VERSION))
        except (KeyError, ValueError, UnicodeDecodeError) as exc:
            raise StoreError(f"thread {thread_id!r}: key {self._key(thread_id)!r} is not a thread record ({exc!r})",
                             thread_id=thread_id) from exc
        return _decode_record(thread_id, version=version, text=text, claim=claim, format=format)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        """Compare-and-set the thread's data; see :meth:`ThreadStore.save`.

        Raises:
            ConcurrentResume: the stored version is not ``expected_version`` (or the thread exists, for a create).
            StoreError: the data is not JSON-ready, Redis failed, the store is closed, or the record is
                of a newer format.
        """
        text = _encode_data(thread_id, data)
        return self._write(thread_id, "save", expected_version=expected_version, owner=None, text=text)

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        """Claim the thread for a run (``expected_version=None``: create it claimed, with ``data``);
        see :meth:`ThreadStore.claim`.

        A claim whose reply is lost (the connection dropped after Redis ran the script) is sent once
        more on a fresh connection: the claim is recognised by its owner, so the second attempt either
        lands or finds the first one, and never claims twice.

        Raises:
            ConcurrentResume: the version moved on, somebody holds a claim, or (a create) the thread exists.
            StoreError: the data is not JSON-ready, Redis failed (twice, for a lost connection), the store
                is closed, or the record is of a newer format.
        """
        _check_owner(owner)
        return self._write(thread_id, "claim", expected_version=expected_version, owner=owner,
                           text=_creation_data(thread_id, expected_version, data))

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        """Undo a claim; see :meth:`ThreadStore.release`.

        Raises:
            ConcurrentResume: the version moved on, or ``owner`` does not hold the claim.
            StoreError: Redis failed, the store is closed, or the record is of a newer format.
        """
        _check_owner(owner)
        return self._write(thread_id, "release", expected_version=claimed_version, owner=owner, text=None)

    def delete(self, thread_id: str) -> None:
        """Forget the thread (nothing happens when there is none).

        Raises:
            StoreError: Redis failed, or the store is closed.
        """
        with self._calls(thread_id):
            self._client.delete(self._key(thread_id))

    def close(self) -> None:
        """Close the client if the store made it; later calls raise ``StoreError``. Closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            self._client.close()

    # -- internals -------------------------------------------------------------------------------------

    def _key(self, thread_id: str) -> str:
        return self._prefix + thread_id

    def _write(
        self, thread_id: str, operation: Operation, *, expected_version: int | None, owner: str | None,
        text: str | bytes | None,
    ) -> int:
        args: list[str | bytes] = [operation, "" if expected_version is None else str(expected_version),
                                   owner or "", text or "", str(STORE_FORMAT_VERSION)]
        keys = [self._key(thread_id)]
        with self._calls(thread_id):
            try:
                reply = self._script(keys=keys, args=args)
            except self._connection_lost:
                if operation != "claim":
                    raise  # (a save or a release sent again would be refused by its own landing)
                reply = self._script(keys=keys, args=args)
        if int(reply[0]) == 1:
            return int(reply[1])
        version, claim, format = int(reply[1]), _text(reply[2]), int(reply[3])
        head = None if version < 0 else Head(version=version, claim=claim or None, format=format)
        _check_write(thread_id, head, operation, expected_version=expected_version, owner=owner)
        # The script and check_write disagree: a bug, never a silent success.
        raise StoreError(f"thread {thread_id!r}: Redis refused the {operation} for no known reason (head {head})",
                         thread_id=thread_id)

    @contextmanager
    def _calls(self, thread_id: str) -> Iterator[None]:
        """Redis's own errors leave as ``StoreError``."""
        if self._closed:
            raise _closed(thread_id)
        try:
            yield
        except self._redis_error as exc:
            raise StoreError(f"Redis store failed for thread {thread_id!r}: {exc}", thread_id=thread_id) from exc


def _text(value: Any) -> str:
    # Clients made with decode_responses=True answer str, the others bytes.
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
