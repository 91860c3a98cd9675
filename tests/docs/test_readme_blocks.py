"""How the README test reads blocks and their `# =>` lines (tests/docs/readme_blocks.py)."""

import pytest

from tests.docs.readme_blocks import assigned_names, blocks_of, unmet

MARKDOWN = """Intro.

<!-- readme-test: skip (serves forever) -->
```sh
make run
```

```sh
BASE=http://127.0.0.1:8000/v1
TOKEN=$(curl -s $BASE/x)
curl -s $BASE/y
# => {"authentic": true, "token": "svc_...", ...}
```

```python
NOT_SHELL=1
```
"""


def test_sh_blocks_are_read_in_order_with_their_skip_mark_and_expectations():
    blocks = blocks_of(MARKDOWN)
    assert [block.line for block in blocks] == [4, 8]
    assert blocks[0].skip_reason == "serves forever" and blocks[1].skip_reason is None
    assert blocks[1].expectations == ['{"authentic": true, "token": "svc_...", ...}']
    assert assigned_names(blocks) == ["BASE", "TOKEN"]


def test_a_malformed_mark_is_refused_rather_than_ignored():
    with pytest.raises(ValueError, match="malformed"):
        blocks_of("<!-- readme-test: skip -->\n```sh\nmake run\n```\n")


def test_json_pairs_match_in_any_order_among_other_fields_and_glued_documents():
    output = '{"x":1,"token":"svc_abc","authentic":true}{"plan":"free"}'
    assert unmet('{"authentic": true, "token": "svc_...", ...}', output) == []
    assert unmet('{"plan": "free"}', output) == []
    assert unmet('{"authentic": false}', output) == ['"authentic": false']
    assert unmet('{"token": "svc_abd..."}', output) == ['"token": "svc_abd..."']


def test_plain_fragments_must_each_appear():
    output = "X-Service-Token: svc_1\r\nX-Service-Format: image\r\n"
    assert unmet("X-Service-Token: svc_ ... X-Service-Format: image", output) == []
    assert unmet("X-Service-Token: svc_ ... X-Service-Format: jpeg", output) == ["X-Service-Format: jpeg"]
