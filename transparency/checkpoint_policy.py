"""What the signer service checks before it signs a checkpoint (purpose `checkpoint`), and the signature.

A checkpoint is signed only if it is the note text of this log's origin for the tree the database holds:
its size is the integrated tree's (committed by the sequencer before it asks) and its root hash is the one
computed here from the stored tiles at that size. A compromised web or sequencer process can therefore
get nothing signed but the log's own tree head: no other origin, no invented root, no other history.

Registered with the signer at start (transparency.apps); runs in the signer process, which holds
LOG_SIGNING_KEY.
"""

from django.conf import settings
from django.db.models import Q

from core.signer_protocol import SignRequest
from transparency import merkle, note
from transparency.keys import ALGORITHMS, log_signers
from transparency.models import LogState, LogTile
from transparency.tiles import MissingTile, TileReader, tiles_needed


def checkpoint_refusal(request: SignRequest) -> str | None:
    """None when the request may be signed, else why not."""
    if request.algorithm not in ALGORITHMS:
        return f"checkpoints are not signed with {request.algorithm}"
    if request.org_id or request.generator_id or request.kid:
        return "a checkpoint is the log's, not an organization's or a generator's"
    try:
        text = request.message.decode()
        checkpoint = note.parse_checkpoint(text)
    except (UnicodeDecodeError, ValueError):
        return "the message is not a checkpoint note text"
    if checkpoint.text() != text:
        return "the message carries more than a checkpoint's three lines"
    if checkpoint.origin != settings.LOG_ORIGIN:
        return f"the checkpoint is for another origin than {settings.LOG_ORIGIN}"
    integrated = LogState.objects.filter(pk=LogState.SINGLETON).values_list("integrated_size", flat=True).first()
    if checkpoint.tree_size != (integrated or 0):
        return f"the log holds a tree of {integrated or 0} entries, not {checkpoint.tree_size}"
    if log_root(checkpoint.tree_size) != checkpoint.root_hash:
        return "the root hash is not the log's at this size"
    return None


def checkpoint_signature(request: SignRequest) -> bytes:
    """The log key of the request's algorithm, over the note text (checked by `checkpoint_refusal`)."""
    signer = dict(zip(ALGORITHMS, log_signers(), strict=True))[request.algorithm]
    return signer.sign(request.message)


def log_root(size: int) -> bytes | None:
    """The root hash of the first `size` entries, from the stored tiles; None when they do not hold it."""
    wanted = sorted(tiles_needed(lambda node: merkle.root_hash(size, node)))
    if not wanted:
        return merkle.root_hash(size, TileReader({}).node)
    condition = Q()
    for level, index in wanted:
        condition |= Q(level=level, index=index)
    tiles = {(level, index): bytes(hashes) for level, index, hashes
             in LogTile.objects.filter(condition).values_list("level", "index", "hashes")}
    try:
        return merkle.root_hash(size, TileReader(tiles).node)
    except MissingTile:
        return None
