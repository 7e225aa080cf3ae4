"""Writes the msgpack payloads of tests/suite/kv_events.rs (`pip install msgspec`).

The structs below declare the KV event layouts that vLLM and SGLang publish
(field names, order and msgspec options as their engines declare them), so the
bytes are msgspec's own encoding of them, not a hand-made imitation. Run:
    python3 tests/data/kv_events_fixtures.py > tests/data/kv_events_fixtures.txt
"""

import msgspec
from typing import Any


# Arrays: SGLang, and vLLM before its events became maps.
class ArrBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class ArrEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class BlockStored(ArrEvent):
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None


class BlockRemoved(ArrEvent):
    block_hashes: list[int]
    medium: str | None


class AllBlocksCleared(ArrEvent):
    pass


# Maps: current vLLM events (tag under "type"), hashes as bytes or ints.
class MapEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class MBlockStored(MapEvent, tag="BlockStored"):
    block_hashes: list[bytes | int]
    parent_block_hash: bytes | int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[tuple[Any, ...] | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None


class MBlockRemoved(MapEvent, tag="BlockRemoved"):
    block_hashes: list[bytes | int]
    medium: str | None
    group_idx: int | None = None


class MAllBlocksCleared(MapEvent, tag="AllBlocksCleared"):
    pass


# A map batch (one vLLM revision declares the batch without array_like).
class MapBatch(msgspec.Struct, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


enc = msgspec.msgpack.Encoder()
h = lambda i: bytes([i]) * 32  # a 32-byte sha256-like digest

fixtures = {
    # Block size 2: blocks 10 [1,2], 11 [3,4] (11's parent 10); then 11 evicted;
    # then block 12 [5,6] after 10, a LoRA 7 block, a CPU block; dp rank 1.
    "array": ArrBatch(
        ts=1.25,
        events=[
            BlockStored([10, 11], None, [1, 2, 3, 4], 2, None, "GPU"),
            BlockRemoved([11], "GPU"),
            BlockStored([12], 10, [5, 6], 2, None, "GPU"),
            BlockStored([-5], None, [1, 2], 2, 7, None),
            BlockStored([13], None, [9, 9], 2, None, "CPU"),
        ],
        data_parallel_rank=1,
    ),
    "array_cleared_no_rank": ArrBatch(ts=2.0, events=[AllBlocksCleared()]),
    "map_events": ArrBatch(
        ts=3.5,
        events=[
            MBlockStored([h(1), h(2)], None, [1, 2, 3, 4], 2, None, "GPU", None),
            MBlockStored([h(3)], h(1), [5, 6], 2, None, "GPU", None, group_idx=0),
            MBlockStored([h(4)], None, [7, 8], 2, None, "GPU", None, extra_keys=[("mm", "img0")]),
            MBlockStored([h(5)], None, [7, 8], 2, None, "GPU", None, group_idx=1),
            MBlockRemoved([h(2)], "GPU"),
            MAllBlocksCleared(),
            MBlockStored([77], None, [1, 2], 2, None, None, None),
        ],
        data_parallel_rank=0,
    ),
    "map_batch": MapBatch(ts=4.0, events=[MBlockRemoved([h(9)], None)], data_parallel_rank=2),
}

for name, value in fixtures.items():
    print(name, enc.encode(value).hex())
