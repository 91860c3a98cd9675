"""The transparency log's storage: its tiles, its one state row and its published public keys.

Which record sits at which index is `provenance.Record.log_index` (set by the sequencer, never by
record creation); the leaf hashes are the level-0 tiles, so the tree is stored once, as tiles.
"""

from django.db import models

from transparency.merkle import EMPTY_ROOT
from transparency.tiles import TILE_WIDTH


class LogTile(models.Model):
    """One tile (c2sp.org/tlog-tiles): up to 256 concatenated hashes of tree level 8 * `level`.

    A full tile never changes. The rightmost tile of each level is partial (width below 256) and is
    rewritten as the tree grows; a partial tile of width W is served as the first W hashes.
    """

    id = models.BigAutoField(primary_key=True)
    level = models.SmallIntegerField()
    index = models.BigIntegerField()
    width = models.SmallIntegerField()
    hashes = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["level", "index"], name="logtile_unique_position")]
        # The right edge (at most one tile per level) is read with every proof: a tiny index.
        indexes = [models.Index(fields=["level"], condition=models.Q(width__lt=TILE_WIDTH), name="logtile_edge")]

    def __str__(self) -> str:
        return f"tile {self.level}/{self.index} ({self.width} hashes)"


class LogState(models.Model):
    """The single row (pk 1): the tree the tiles hold, and the tree of the latest signed checkpoint.

    Sequencers lock this row for each batch, so two of them can never interleave. In one process the two
    trees are one (tiles and checkpoint commit together); with a signer service the tiles commit first and
    the checkpoint after (the signer signs only a tree it can read), so `integrated_size` may be ahead of
    `tree_size` for a moment, or while the signer is down. Readers use `tree_size`: what is signed.
    """

    SINGLETON = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=SINGLETON)
    # The checkpoint's tree.
    tree_size = models.BigIntegerField(default=0)
    root_hash = models.BinaryField(default=EMPTY_ROOT)
    # The tree the tiles hold: where the next batch appends.
    integrated_size = models.BigIntegerField(default=0)
    integrated_root = models.BinaryField(default=EMPTY_ROOT)
    # The signed note (UTF-8) of `tree_size`; bytes, so one UNION reads it along with tiles.
    checkpoint = models.BinaryField(default=b"")
    checkpoint_at = models.DateTimeField(null=True)

    def __str__(self) -> str:
        return f"log of {self.tree_size} entries"


class LogKey(models.Model):
    """A public key the log signs checkpoints with, written by the process that holds LOG_SIGNING_KEY (the
    signer service, when it starts) so that processes without it publish the keys and tell a checkpoint
    signed by other keys (a rotation) from one signed by these."""

    algorithm = models.CharField(primary_key=True, max_length=16)  # "ed25519", "ml-dsa-65"
    name = models.CharField(max_length=255)  # the origin the key signs for
    signature_type = models.BinaryField()
    public_key = models.BinaryField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"log key {self.algorithm} for {self.name}"
