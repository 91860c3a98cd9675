"""The witness's job: follow the log's checkpoints and check each one extends the last one seen.

The last verified checkpoint is kept in a state file, so a restart resumes from it; a checkpoint that does
not extend it (a smaller tree, another root for the same size, a consistency proof that fails) is a fork,
and the state file is left as it was, as evidence.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path

from svc_client.checkpoint import Checkpoint, CheckpointError, LogKey, checkpoint_verify
from svc_client.client import Client
from svc_client.errors import ForkDetected
from svc_client.merkle import ProofError, verify_consistency


@dataclass(frozen=True)
class Step:
    previous_size: int | None
    checkpoint: Checkpoint


def monitor_step(client: Client, keys: list[LogKey], state_path: Path) -> Step:
    """Fetch the latest checkpoint, verify its signatures and its consistency with the saved one, save it.

    Raises CheckpointError for a badly signed checkpoint, ForkDetected for an inconsistent one.
    """
    latest = checkpoint_verify(client.log_checkpoint(), keys)
    previous = _load_state(state_path, keys)
    if previous is not None:
        _check_extends(client, previous, latest)
    if previous is None or latest.tree_size > previous.tree_size:
        _save_state(state_path, latest)
    return Step(previous_size=previous.tree_size if previous else None, checkpoint=latest)


def _check_extends(client: Client, previous: Checkpoint, latest: Checkpoint) -> None:
    if latest.tree_size < previous.tree_size:
        raise ForkDetected(f"the log went back from {previous.tree_size} to {latest.tree_size} entries")
    if latest.tree_size == previous.tree_size:
        if latest.root_hash != previous.root_hash:
            raise ForkDetected(f"two root hashes for tree size {latest.tree_size}: "
                               f"{_b64(previous.root_hash)} and {_b64(latest.root_hash)}")
        return
    if previous.tree_size == 0:
        return  # every tree extends the empty one (RFC 9162 2.1.4: no proof)
    try:
        proof = client.log_consistency(previous.tree_size, latest.tree_size)
        verify_consistency(previous.tree_size, latest.tree_size, proof, previous.root_hash, latest.root_hash)
    except ProofError as error:
        raise ForkDetected(f"the tree of size {latest.tree_size} does not extend the one of size "
                           f"{previous.tree_size} seen before: {error}") from None


def _load_state(path: Path, keys: list[LogKey]) -> Checkpoint | None:
    if not path.exists():
        return None
    try:
        note = json.loads(path.read_text())["checkpoint"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CheckpointError(f"{path}: not a monitor state file ({error}); move it away to start over") from None
    return checkpoint_verify(note, keys)  # the state is re-checked: a hand-edited file is not trusted


def _save_state(path: Path, checkpoint: Checkpoint) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps({"tree_size": checkpoint.tree_size, "root_hash": _b64(checkpoint.root_hash),
                                     "checkpoint": checkpoint.note}, indent=2))
    os.replace(temporary, path)  # atomic: a crash never leaves half a state file


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
