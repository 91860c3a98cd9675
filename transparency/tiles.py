"""The Merkle tree as C2SP tlog-tiles: paths, reading subtree hashes from tiles, appending leaves.

A tile at level L, index N holds up to 256 consecutive hashes of tree level 8L: at level 0 leaf
hashes, above that the roots of full tiles of the level below (c2sp.org/tlog-tiles). The rightmost
tile of each level is partial (1 to 255 hashes); a partial tile of width W is the first W hashes of
the full tile it grows into, so one stored row per tile serves every width.

This module must not import Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from hashlib import sha256

from transparency.merkle import HASH_BYTES, hashes_root

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
FULL_TILE_BYTES = TILE_WIDTH * HASH_BYTES
MAX_LEVEL = 63  # tlog-tiles: <L> is 0 to 63
ENTRIES = "entries"  # the level name of entry bundles

_INDEX = r"(?P<index>(?:x[0-9]{3}/)*[0-9]{3})"
_TILE_PATH = re.compile(rf"(?P<level>entries|0|[1-9][0-9]?)/{_INDEX}(?:\.p/(?P<width>[1-9][0-9]{{0,2}}))?")


class MissingTile(LookupError):
    """A subtree hash was asked for that the given tiles do not hold."""


@dataclass(frozen=True)
class TilePath:
    level: int | str  # an int, or ENTRIES for an entry bundle
    index: int
    width: int | None = None  # None: the full tile

    def __str__(self) -> str:
        suffix = f".p/{self.width}" if self.width is not None else ""
        return f"tile/{self.level}/{encode_index(self.index)}{suffix}"


def encode_index(index: int) -> str:
    """tlog-tiles' <N>: 3-digit groups, all but the last prefixed by x (1234067 -> x001/x234/067)."""
    groups = [f"{index % 1000:03d}"]
    index //= 1000
    while index:
        groups.append(f"x{index % 1000:03d}")
        index //= 1000
    return "/".join(reversed(groups))


def parse_tile_path(path: str) -> TilePath:
    """`<L>/<N>[.p/<W>]` or `entries/<N>[.p/<W>]` (what follows `tile/`). Raises ValueError if malformed."""
    match = _TILE_PATH.fullmatch(path)
    if match is None:
        raise ValueError("not a tile path: tile/<L>/<N>[.p/<W>] with N in x### groups")
    groups = match.group("index").replace("x", "").split("/")
    if len(groups) > 1 and groups[0] == "000":
        raise ValueError("the tile index has a leading zero group")
    width = int(match.group("width")) if match.group("width") else None
    if width is not None and width >= TILE_WIDTH:
        raise ValueError("a partial tile is 1 to 255 hashes wide")
    level = match.group("level")
    if level != ENTRIES and int(level) > MAX_LEVEL:
        raise ValueError(f"tile levels are 0 to {MAX_LEVEL}")
    return TilePath(level=level if level == ENTRIES else int(level), index=int("".join(groups)), width=width)


def tile_width(tree_size: int, level: int, index: int) -> int:
    """How many hashes tile (level, index) has in a tree of `tree_size` leaves (0 to 256)."""
    hashes_at_level = tree_size >> (TILE_HEIGHT * level)
    return max(0, min(TILE_WIDTH, hashes_at_level - index * TILE_WIDTH))


def tile_of_node(level: int, index: int) -> tuple[int, int]:
    """The (tile level, tile index) holding the hashes that subtree (level, index) is built from."""
    tile_level, height_in_tile = divmod(level, TILE_HEIGHT)
    return tile_level, (index << height_in_tile) >> TILE_HEIGHT


class SubtreeCache:
    """Roots of subtrees already hashed, keyed by the very hashes they cover: a pure function's results, so
    an entry can never be stale (the same child hashes always have the same root, in any tree, of any log).

    Only subtrees of tile levels 1 and up are kept: those tiles are few (a million leaves have 16 at level
    1, whose subtrees all together take about 1 MB) and every proof crosses them, while a leaf tile (level
    0) is one of thousands, rarely asked twice. Bounded by `max_bytes` of keys: past it, the oldest half
    of the entries is dropped.
    """

    def __init__(self, max_bytes: int = 8 << 20):
        self.max_bytes = max_bytes
        self._roots: dict[bytes, bytes] = {}
        self._bytes = 0

    def get(self, covered: bytes) -> bytes | None:
        return self._roots.get(covered)

    def put(self, covered: bytes, root: bytes) -> None:
        if self._bytes + len(covered) > self.max_bytes:
            keys = list(self._roots)  # dicts keep insertion order: oldest first
            for key in keys[: len(keys) // 2 + 1]:
                if self._roots.pop(key, None) is not None:  # another thread may have dropped it first
                    self._bytes -= len(key)
        if covered not in self._roots:
            self._bytes += len(covered)
        self._roots[covered] = root


class TileReader:
    """`node(level, index)` for merkle's proofs, computed from tiles {(level, index): concatenated hashes}.

    Raises MissingTile when a needed tile is absent or too narrow. Nodes are memoised: a proof asks for
    overlapping subtrees of the same tiles; with a SubtreeCache, across readers too (a process's proofs).
    """

    def __init__(self, tiles: dict[tuple[int, int], bytes], cache: SubtreeCache | None = None):
        self.tiles = tiles
        self.cache = cache
        self._memo: dict[tuple[int, int], bytes] = {}

    def node(self, level: int, index: int) -> bytes:
        key = (level, index)
        if key not in self._memo:
            self._memo[key] = self._compute(level, index)
        return self._memo[key]

    def _compute(self, level: int, index: int) -> bytes:
        # The subtree's 2**h hashes lie side by side in one tile (h = its height within the tile):
        # hash them up pairwise, h rounds (2**h - 1 hashes, at most 127).
        tile_level, height_in_tile = divmod(level, TILE_HEIGHT)
        tile_index, offset = divmod(index << height_in_tile, TILE_WIDTH)
        data = self.tiles.get((tile_level, tile_index), b"")
        start, end = offset * HASH_BYTES, (offset + (1 << height_in_tile)) * HASH_BYTES
        if len(data) < end:
            raise MissingTile(f"tile {tile_level}/{tile_index} does not hold hashes {offset}+{1 << height_in_tile}")
        if height_in_tile == 0:
            return data[start:end]
        cache = self.cache if tile_level > 0 else None
        covered = data[start:end]
        root = cache.get(covered) if cache is not None else None
        if root is None:
            root = _subtree_root(covered)
            if cache is not None:
                cache.put(covered, root)
        return root


def _subtree_root(covered: bytes) -> bytes:
    """The root of the complete subtree over `covered`, 2**h concatenated hashes (h >= 1)."""
    row = [covered[i:i + HASH_BYTES] for i in range(0, len(covered), HASH_BYTES)]
    while len(row) > 1:
        row = [sha256(b"\x01" + row[i] + row[i + 1]).digest() for i in range(0, len(row), 2)]
    return row[0]


@dataclass(frozen=True)
class Appended:
    tree_size: int
    tiles: dict[tuple[int, int], bytes]  # every tile written: new full tiles and the new right edge


def append_leaves(tree_size: int, edge: dict[int, bytes], leaf_hashes: list[bytes]) -> Appended:
    """Add leaf hashes to a tree of `tree_size` whose partial rightmost tiles are `edge` {level: hashes}.

    Returns the new size and every tile that changed. A tile that fills up has its root added to the
    level above, as tlog-tiles defines. Raises ValueError if `edge` does not match `tree_size`.
    """
    written: dict[tuple[int, int], bytes] = {}
    level, before, new = 0, tree_size, list(leaf_hashes)
    while new:
        partial = edge.get(level, b"")
        if len(partial) != (before % TILE_WIDTH) * HASH_BYTES:
            raise ValueError(f"the level {level} edge tile does not match a tree of size {tree_size}")
        row = partial + b"".join(new)
        first_tile = before // TILE_WIDTH
        promoted = []
        for offset in range(0, len(row), FULL_TILE_BYTES):
            tile = row[offset:offset + FULL_TILE_BYTES]
            written[(level, first_tile + offset // FULL_TILE_BYTES)] = tile
            if len(tile) == FULL_TILE_BYTES:
                promoted.append(hashes_root([tile[i:i + HASH_BYTES] for i in range(0, FULL_TILE_BYTES, HASH_BYTES)]))
        level, before, new = level + 1, before // TILE_WIDTH, promoted
    return Appended(tree_size=tree_size + len(leaf_hashes), tiles=written)


def edge_tiles(tree_size: int, tiles: dict[tuple[int, int], bytes]) -> dict[int, bytes]:
    """The partial rightmost tile of each level of a tree of `tree_size`, from tiles that hold them."""
    edge = {}
    level = 0
    while tree_size >> (TILE_HEIGHT * level):
        width = tile_width(tree_size, level, (tree_size >> (TILE_HEIGHT * (level + 1))))
        if width:
            index = tree_size >> (TILE_HEIGHT * (level + 1))
            edge[level] = tiles[(level, index)][:width * HASH_BYTES]
        level += 1
    return edge


def tiles_needed(compute: Callable[[Callable[[int, int], bytes]], object]) -> set[tuple[int, int]]:
    """The tiles `compute(node)` reads: runs it once on a reader that only notes what is asked for."""
    needed: set[tuple[int, int]] = set()

    def note_tile(level: int, index: int) -> bytes:
        needed.add(tile_of_node(level, index))
        return bytes(HASH_BYTES)

    compute(note_tile)
    return needed
