"""Finds the built module and the assets for the Python tests.

The module is imported from <build>/python, where CMake puts the package (the extension next to
copies of python/momentkv/*.py): <build> is $MOMENTKV_BUILD_DIR (absolute, or relative to the
repository), default <repo>/build, the directory scripts/setup.sh builds. The CLI compared against
is <build>/momentkv. Shared assets: $MOMENTKV_ASSETS, default <repo>/../shared/assets; tests that
need them skip with a message when they are absent.
"""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("MOMENTKV_BUILD_DIR", "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
PACKAGE = BUILD / "python"
if not (PACKAGE / "momentkv" / "__init__.py").exists():
    raise RuntimeError(f"the momentkv Python module is not built in {PACKAGE} (build it with scripts/setup.sh, "
                       f"or point MOMENTKV_BUILD_DIR at the build directory)")
sys.path.insert(0, str(PACKAGE))

ASSETS = Path(os.environ["MOMENTKV_ASSETS"]) if os.environ.get("MOMENTKV_ASSETS") else REPO.parent / "shared" / "assets"
NEEDLE_MODEL = REPO / "models" / "stories-needle-2k.gguf"
NEEDLE_PROMPT = REPO / "tests" / "engine" / "data" / "trained_model_needle.txt"


@pytest.fixture(scope="session")
def cli():
    path = BUILD / "momentkv"
    if not path.exists():
        pytest.skip(f"the CLI {path} is not built (these tests compare the module with it)")
    return str(path)


@pytest.fixture(scope="session")
def needle_model():
    import momentkv
    return momentkv.Model(NEEDLE_MODEL)


@pytest.fixture(scope="session")
def stories260k_path():
    path = ASSETS / "stories260K.gguf"
    if not path.exists():
        pytest.skip(f"shared asset {path} not found (set MOMENTKV_ASSETS to the shared assets folder)")
    return path


@pytest.fixture(scope="session")
def golden():
    import json
    path = ASSETS / "golden" / "stories260K_golden.json"
    if not path.exists():
        pytest.skip(f"shared asset {path} not found (set MOMENTKV_ASSETS to the shared assets folder)")
    return json.loads(path.read_text())
