"""`make bench-deps` installs what bench/ imports: every third-party module a bench script imports is
declared in pyproject.toml (the dependencies, the dev extra or the bench extra) or installed by the
Makefile's bench-deps rule, so a fresh clone's `make bench-deps` runs every bench."""

import ast
import re
import sys
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
OWN = {"bench", "tests", "config", "core", "accounts", "audit", "billing", "generators", "provenance", "verification",
       "webhooks", "teams", "transparency", "dashboard", "media_codecs", "record_format", "svc_client", "signer"}
# Import names that differ from the distribution's name.
DISTRIBUTION_OF = {"PIL": "pillow", "cv2": "opencv-python-headless", "skimage": "scikit-image", "av": "av",
                   "django": "django", "rest_framework": "djangorestframework", "imwatermark": "invisible-watermark",
                   "pywt": "pywavelets", "psycopg": "psycopg", "jwt": "pyjwt", "yaml": "pyyaml",
                   "pkcs11": "python-pkcs11"}


def _imported_top_modules(folder: Path) -> set[str]:
    modules = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return {module for module in modules
            if module not in sys.stdlib_module_names and module not in OWN and module != "__future__"}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _bench_deps_installs() -> set[str]:
    """What the Makefile's bench-deps rule installs: the extras it names and any package given by name."""
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    rule = re.search(r"^bench-deps:.*?(?=^\S)", (PROJECT / "Makefile").read_text(), re.MULTILINE | re.DOTALL)[0]
    names = {_name(requirement) for requirement in project["dependencies"]}
    for extras in re.findall(r'-e\s+"\.\[([^\]]+)\]"', rule):
        for extra in extras.split(","):
            names.update(_name(requirement) for requirement in project["optional-dependencies"][extra.strip()])
    for line in re.findall(r"pip install (.*)", rule):
        names.update(_name(word) for word in line.split() if not word.startswith(("-", '"')))
    return names


def test_every_module_a_bench_imports_is_installed_by_bench_deps():
    installed = _bench_deps_installs()
    missing = {module for module in _imported_top_modules(PROJECT / "bench")
               if DISTRIBUTION_OF.get(module, module).lower() not in installed}
    assert missing == set()


def test_the_check_sees_an_undeclared_import(tmp_path):
    (tmp_path / "new_bench.py").write_text("import numpy\nfrom undeclared_package.sub import thing\n")
    modules = _imported_top_modules(tmp_path)
    assert modules == {"numpy", "undeclared_package"}
    assert "undeclared-package" not in _bench_deps_installs() and "numpy" in _bench_deps_installs()
