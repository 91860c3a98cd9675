"""glibc malloc tuned in each gunicorn worker (config/allocator.py): image buffers are reused between
requests instead of being faulted in afresh. Measured in a child process, as a worker would be."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import json, resource, runpy, sys
import numpy as np
if sys.argv[1] == "tuned":
    runpy.run_path("gunicorn.conf.py")["post_fork"](None, None)
    from config.allocator import tune_malloc
    assert tune_malloc()  # glibc took both settings
def request():
    buffers = [np.ones((865, 1154), np.float32) for _ in range(4)]  # four 1-megapixel float planes
    return sum(float(b[0, 0]) for b in buffers)
request()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    request()
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20))
"""


def _faults_per_request(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_worker_reuses_its_image_buffers_instead_of_faulting_them_in_again():
    untuned, tuned = _faults_per_request("plain"), _faults_per_request("tuned")
    assert untuned > 2000  # 16 MB of fresh pages a request: what the tuning removes
    assert tuned < 100

