"""transparency.merkle and transparency.tiles against the independent RFC 9162 reference (no database)."""

import random

import pytest

from tests.purity import assert_imports_without_django
from tests.transparency import rfc9162
from transparency import merkle
from transparency.tiles import (
    FULL_TILE_BYTES,
    MissingTile,
    SubtreeCache,
    TilePath,
    TileReader,
    append_leaves,
    edge_tiles,
    encode_index,
    parse_tile_path,
    tile_width,
)


def _leaves(count: int, start: int = 0) -> list[bytes]:
    return [rfc9162.leaf(f"entry {i}".encode()) for i in range(start, start + count)]


def _list_reader(leaf_hashes: list[bytes]):
    return lambda level, index: rfc9162.mth(leaf_hashes[index << level:(index + 1) << level])


def test_leaf_and_node_hashes_use_the_rfc_prefixes():
    assert merkle.leaf_hash(b"abc") == rfc9162.sha256(b"\x00abc")
    assert merkle.node_hash(b"l" * 32, b"r" * 32) == rfc9162.sha256(b"\x01" + b"l" * 32 + b"r" * 32)
    assert merkle.root_hash(0, _list_reader([])) == rfc9162.sha256(b"")


@pytest.mark.parametrize("size", [*range(1, 40), 64, 65, 100, 255, 256, 257])
def test_every_inclusion_proof_verifies_with_the_reference(size):
    leaves = _leaves(size)
    root = rfc9162.mth(leaves)
    assert merkle.root_hash(size, _list_reader(leaves)) == root
    for index in range(size):
        proof = merkle.inclusion_proof(index, size, _list_reader(leaves))
        assert rfc9162.verify_inclusion(index, size, leaves[index], proof, root)
        assert not rfc9162.verify_inclusion(index, size, leaves[(index + 1) % size], proof, root) or size == 1


@pytest.mark.parametrize("new_size", [*range(1, 34), 100, 256, 257])
def test_every_consistency_proof_verifies_with_the_reference(new_size):
    leaves = _leaves(new_size)
    new_root = rfc9162.mth(leaves)
    for old_size in range(0, new_size + 1):
        proof = merkle.consistency_proof(old_size, new_size, _list_reader(leaves))
        assert rfc9162.verify_consistency(old_size, new_size, rfc9162.mth(leaves[:old_size]), new_root, proof)
        if 0 < old_size < new_size:
            forged = rfc9162.mth(_leaves(old_size, start=10_000))
            assert not rfc9162.verify_consistency(old_size, new_size, forged, new_root, proof)


def test_proofs_outside_the_tree_are_refused():
    with pytest.raises(ValueError):
        merkle.inclusion_proof(5, 5, _list_reader(_leaves(5)))
    with pytest.raises(ValueError):
        merkle.consistency_proof(6, 5, _list_reader(_leaves(5)))


def test_a_thousand_appends_in_random_batches_stay_consistent_through_tiles():
    rng = random.Random(17)
    leaves: list[bytes] = []
    tiles: dict[tuple[int, int], bytes] = {}
    size, previous_root = 0, merkle.EMPTY_ROOT
    while size < 1000:
        batch = _leaves(rng.randint(1, 40) if rng.random() < 0.9 else rng.randint(200, 600), start=size)
        appended = append_leaves(size, edge_tiles(size, tiles), batch)
        tiles.update(appended.tiles)
        leaves.extend(batch)
        reader = TileReader(tiles)
        new_size, root = appended.tree_size, rfc9162.mth(leaves)
        assert merkle.root_hash(new_size, reader.node) == root
        proof = merkle.consistency_proof(size, new_size, reader.node)
        assert rfc9162.verify_consistency(size, new_size, previous_root, root, proof)
        for index in rng.sample(range(new_size), min(5, new_size)):
            proof = merkle.inclusion_proof(index, new_size, reader.node)
            assert rfc9162.verify_inclusion(index, new_size, leaves[index], proof, root)
        size, previous_root = new_size, root
    old = rng.randrange(1, size)
    proof = merkle.consistency_proof(old, size, TileReader(tiles).node)
    assert rfc9162.verify_consistency(old, size, rfc9162.mth(leaves[:old]), previous_root, proof)


def test_a_shared_subtree_cache_serves_two_different_trees_and_stays_bounded():
    """The cache is keyed by the hashes a subtree covers, so two logs with different leaves at the same
    positions (a test database flushed, say) never get each other's roots, and growth drops the oldest."""
    rng = random.Random(5)
    cache = SubtreeCache(max_bytes=2048)
    trees = []
    for start in (0, 50_000):
        leaves = _leaves(2_000 + start // 50_000 * 333, start=start)
        trees.append((leaves, append_leaves(0, {}, leaves).tiles))
    for _ in range(60):
        leaves, tiles = rng.choice(trees)
        index, size = rng.randrange(len(leaves)), len(leaves)
        proof = merkle.inclusion_proof(index, size, TileReader(tiles, cache).node)
        assert proof == merkle.inclusion_proof(index, size, TileReader(tiles).node)
        assert rfc9162.verify_inclusion(index, size, leaves[index], proof, rfc9162.mth(leaves))
    assert 0 < sum(map(len, cache._roots)) <= 2048


def test_tiles_hold_what_tlog_tiles_defines():
    # MTH(D[(n * 256 + i) * 256**l : (n * 256 + i + 1) * 256**l]) for i in 0..255 (c2sp.org/tlog-tiles).
    leaves = _leaves(70_000 // 64)  # 1093: two full level-0 tiles and more
    appended = append_leaves(0, {}, leaves)
    assert appended.tiles[(0, 0)] == b"".join(leaves[:256])
    assert len(appended.tiles[(0, 4)]) == (1093 - 1024) * 32
    assert appended.tiles[(1, 0)] == b"".join(rfc9162.mth(leaves[i * 256:(i + 1) * 256]) for i in range(4))
    assert set(appended.tiles) == {(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0)}
    assert len(appended.tiles[(0, 0)]) == FULL_TILE_BYTES


def test_partial_tile_widths_follow_the_spec_example():
    # tlog-tiles: a tree of 70,000 has 273 full level-0 tiles, a partial one of 112, one full level-1
    # tile, a partial level-1 tile of 17 and a partial level-2 tile of 1.
    assert tile_width(70_000, 0, 272) == 256 and tile_width(70_000, 0, 273) == 112
    assert tile_width(70_000, 1, 0) == 256 and tile_width(70_000, 1, 1) == 17
    assert tile_width(70_000, 2, 0) == 1 and tile_width(70_000, 3, 0) == 0
    assert tile_width(256, 1, 0) == 1


def test_a_reader_without_the_tile_says_so():
    with pytest.raises(MissingTile):
        TileReader({}).node(0, 3)


@pytest.mark.parametrize(("index", "encoded"), [(0, "000"), (7, "007"), (999, "999"), (1000, "x001/000"),
                                                (1234067, "x001/x234/067")])
def test_tile_indexes_are_encoded_in_x_groups(index, encoded):
    assert encode_index(index) == encoded
    assert parse_tile_path(f"0/{encoded}") == TilePath(level=0, index=index)


def test_tile_paths_round_trip():
    for path in (TilePath(0, 1234067), TilePath(2, 5, 17), TilePath("entries", 1000, 255)):
        assert parse_tile_path(str(path).removeprefix("tile/")) == path


@pytest.mark.parametrize("path", ["0/1", "0/0001", "0/x000/001", "0/001/x002", "64/000", "01/000", "0/000.p/0",
                                  "0/000.p/256", "0/000.p/012", "0/000.p/", "entries/x1/000", "0/000/", "-1/000",
                                  "0/000.p/5/x", "0/\u0661\u0662\u0663"])
def test_malformed_tile_paths_are_refused(path):
    with pytest.raises(ValueError):
        parse_tile_path(path)


def test_the_pure_modules_import_no_django():
    assert_imports_without_django(["transparency.merkle", "transparency.tiles", "transparency.note",
                                   "transparency.entries"])
