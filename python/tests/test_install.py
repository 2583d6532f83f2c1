"""`pip install .` (pyproject.toml, the in-tree backend python/backend/momentkv_build.py) into a
fresh virtual environment, offline, then the installed package runs outside the source tree.

To stay quick the install packs the extension already built in the tests' build directory
(MOMENTKV_BUILD_DIR, see the backend) instead of compiling it again; the venv sees Debian's numpy
(--system-site-packages) and uses Debian's pip (python3-pip), as the README's install does."""

import importlib.util
import os
import subprocess
import sys
import venv

import pytest

from conftest import BUILD, NEEDLE_MODEL, REPO

RUN_INSTALLED = """
import importlib.metadata, json, sys
import momentkv
m = momentkv.Model(sys.argv[1])
print(json.dumps({"file": momentkv.__file__, "version": importlib.metadata.version("momentkv"),
                  "module_version": momentkv.__version__,
                  "text": m.generate("Once upon a time", 16, temperature=0),
                  "compressed": m.generate(open(sys.argv[2]).read(), 8, temperature=0, press="snapkv", kv_budget=64)}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not installed for this interpreter (Debian: apt-get install python3-pip)")
    root = tmp_path_factory.mktemp("install")
    env_dir = root / "venv"
    try:
        venv.create(env_dir, system_site_packages=True, with_pip=False)  # Debian's pip, seen through site
    except Exception as e:  # noqa: BLE001 - any failure to create a venv means the check cannot run here
        pytest.skip(f"cannot create a virtual environment ({e}); Debian: apt-get install python3-venv")
    python = env_dir / "bin" / "python"
    env = dict(os.environ, MOMENTKV_BUILD_DIR=str(BUILD), PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_CACHE_DIR="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([python, "-m", "pip", "install", "--no-index", str(REPO)], cwd=root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return python, root, env


def test_pip_install_then_import_outside_the_tree(installed, needle_model):
    import json
    from conftest import NEEDLE_PROMPT
    python, root, env = installed
    env = dict(env)
    env.pop("MOMENTKV_BUILD_DIR")
    r = subprocess.run([python, "-c", RUN_INSTALLED, str(NEEDLE_MODEL), str(NEEDLE_PROMPT)], cwd=root, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["file"].startswith(str(root / "venv")), got["file"]  # the installed copy, not the tree's
    assert got["version"] == got["module_version"]
    # The same engine as the build tree's module.
    assert got["text"] == needle_model.generate("Once upon a time", 16, temperature=0)
    assert got["compressed"] == needle_model.generate(NEEDLE_PROMPT.read_text(), 8, temperature=0, press="snapkv",
                                                      kv_budget=64)


def test_install_with_a_missing_build_dir_says_what_to_do(installed, tmp_path):
    python, root, env = installed
    env = dict(env, MOMENTKV_BUILD_DIR=str(tmp_path / "nowhere"))
    r = subprocess.run([python, "-m", "pip", "install", "--no-index", "--force-reinstall", "--no-deps", str(REPO)],
                       cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "not found (build it with `cmake --build" in r.stdout + r.stderr


def test_the_backend_builds_an_sdist(tmp_path):
    sys.path.insert(0, str(REPO / "python" / "backend"))
    try:
        import momentkv_build
    finally:
        sys.path.pop(0)
    import tarfile
    name = momentkv_build.build_sdist(str(tmp_path))
    with tarfile.open(tmp_path / name) as tar:
        names = set(tar.getnames())
    base = name.removesuffix(".tar.gz")
    for part in ("PKG-INFO", "pyproject.toml", "CMakeLists.txt", "src/engine/session.cpp", "python/src/module.cpp",
                 "python/momentkv/__init__.py", "python/backend/momentkv_build.py"):
        assert f"{base}/{part}" in names
    assert not any("__pycache__" in n for n in names)
