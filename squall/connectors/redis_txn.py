"""Staged stream entries published at checkpoint commits: ``RedisStreamBolt`` in a stateful topology.

The same pattern as ``squall.connectors.staging`` for files, in Redis. A bolt task keeps,
under ``<stream>:_squall_txn:<owner>``:

- ``:open``: a stream of the entries written since the last prepare;
- ``:tx:<txid>``: the entries of transaction ``txid``, sealed at its prepare;
- ``:sealed``: a sorted set of the sealed txids.

Sealing renames ``:open`` (one ``RENAME``); publishing a transaction is one Lua script that
appends its entries to the output stream and deletes the staging key, atomically (Redis
runs a script alone), so a commit replayed after a crash finds nothing left to append.
Single Redis server (or a cluster where the output stream and these keys share a slot).
"""

from __future__ import annotations

from typing import Any

# KEYS: open, tx, sealed; ARGV: txid
_SEAL = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[1])
return 1
"""
# KEYS: tx, output, sealed; ARGV: txid, maxlen ('' for none)
_PUBLISH = """
local entries = redis.call('XRANGE', KEYS[1], '-', '+')
for _, e in ipairs(entries) do
  if ARGV[2] ~= '' then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(e[2]))
  else
    redis.call('XADD', KEYS[2], '*', unpack(e[2]))
  end
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return #entries
"""


class StreamTxnStaging:
    """One bolt task's staged transactions of entries bound for ``stream``."""

    def __init__(self, client: Any, stream: str, owner: str, maxlen: int | None) -> None:
        self.client, self.stream, self.maxlen = client, stream, maxlen
        prefix = f"{stream}:_squall_txn:{owner}"
        self.open, self.sealed_key, self._tx = f"{prefix}:open", f"{prefix}:sealed", f"{prefix}:tx:"
        self._seal = client.register_script(_SEAL)
        self._publish = client.register_script(_PUBLISH)

    def add(self, entry: dict) -> None:
        """Stage one entry in the open transaction."""
        self.client.xadd(self.open, entry)

    def seal(self, txid: int) -> bool:
        """Make the open entries transaction ``txid``; False when there were none."""
        return bool(self._seal(keys=[self.open, self._tx + str(txid), self.sealed_key], args=[txid]))

    def sealed(self) -> list[int]:
        """The sealed txids, in order."""
        return [int(t) for t in self.client.zrange(self.sealed_key, 0, -1)]

    def publish(self, txid: int) -> int:
        """Append the entries of every sealed transaction up to ``txid`` to the stream."""
        moved = 0
        for t in self.sealed():
            if t > txid:
                break
            moved += int(self._publish(keys=[self._tx + str(t), self.stream, self.sealed_key],
                                       args=[t, "" if self.maxlen is None else self.maxlen]))
        return moved

    def recover(self, committed: int | None) -> tuple[int, list[int]]:
        """Publish the sealed transactions up to ``committed``, discard the rest and the open one."""
        moved = self.publish(committed) if committed is not None else 0
        dropped = self.sealed()
        pipe = self.client.pipeline()
        for t in dropped:
            pipe.delete(self._tx + str(t))
            pipe.zrem(self.sealed_key, t)
        pipe.delete(self.open)
        pipe.execute()
        return moved, dropped
