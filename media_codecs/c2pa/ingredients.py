"""The upstream manifest as the `parentOf` ingredient of ours (C2PA 2.2 sections 18.5 and 18.15).

Our manifest gets a `c2pa.ingredient.v3` assertion whose `activeManifest` and `claimSignature` hashed URIs
point at the upstream active manifest, copied verbatim into our store before ours, and whose
`validationResults` are the ones computed at sign time against the uploaded file. A v3 ingredient needs
both hashed URIs and the validation results (c2pa-rs `Ingredient::serialize_v3` and `ingredient_checks`).

The first action then becomes `c2pa.opened` with the ingredient in `parameters.ingredients`: c2pa-rs
requires an opened action to reference a `parentOf` ingredient (`verify_actions` rule 2.b.iv.A), and its
Builder refuses a `parentOf` ingredient next to a `c2pa.created` first action (a Create intent). Only one
of created or opened may lead, so `digitalSourceType` trainedAlgorithmicMedia rides on the opened action,
where the actions CDDL allows it on any action.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from media_codecs.c2pa.upstream import UpstreamManifest

INGREDIENT_LABEL = "c2pa.ingredient.v3"
PARENT_OF = "parentOf"
OPENED = "c2pa.opened"


def ingredient_content(parent: UpstreamManifest) -> dict:
    """The `c2pa.ingredient.v3` assertion content for the upstream active manifest."""
    manifest_url = f"self#jumbf=/c2pa/{parent.label}"
    content: dict = {"relationship": PARENT_OF, "dc:format": parent.format}
    if parent.title is not None:
        content["dc:title"] = parent.title
    content["validationResults"] = parent.validation_results
    if parent.instance_id is not None:
        content["instanceID"] = parent.instance_id
    content["activeManifest"] = {"url": manifest_url, "alg": "sha256", "hash": parent.active_manifest_hash}
    content["claimSignature"] = {"url": f"{manifest_url}/c2pa.signature", "alg": "sha256",
                                 "hash": parent.claim_signature_hash}
    return content


def opened_action(first_action: dict, ingredient_uri: dict) -> dict:
    """Our first action turned into `c2pa.opened` of the parent ingredient, keeping its other fields."""
    return {**first_action, "action": OPENED, "parameters": {"ingredients": [ingredient_uri]}}
