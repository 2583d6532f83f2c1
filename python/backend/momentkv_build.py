"""momentkv's PEP 517 build backend: `pip install .` builds the module with the project's CMake.

In the tree (pyproject.toml: backend-path = ["python/backend"]) and made of the standard library
only, so an install needs no download (no setuptools, no wheel package): cmake, a C++20 compiler
and the Debian packages of scripts/setup.sh (pybind11-dev, python3-dev, python3-numpy).

The wheel holds the package momentkv: python/momentkv/*.py and the extension _momentkv built by
CMake for the interpreter that runs the install. Where it comes from:
  - $MOMENTKV_BUILD_DIR set: that CMake build directory's python/momentkv/_momentkv<ext>, taken as
    it is (build it first: cmake --build DIR --target momentkv_python); no compilation.
  - otherwise: <source>/build-pip, configured (Release, no tests/benchmarks, Python_EXECUTABLE =
    this interpreter; $CMAKE_ARGS appended) and built for the target momentkv_python; kept, so a
    reinstall recompiles only what changed. $CMAKE_BUILD_PARALLEL_LEVEL sets the jobs (default:
    every CPU).
Hooks: build_wheel, prepare_metadata_for_build_wheel, build_sdist (the sources CMake needs) and the
get_requires_* hooks (nothing). Metadata comes from pyproject.toml's [project] table.
"""

import base64
import hashlib
import io
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]
PACKAGE = SOURCE / "python" / "momentkv"
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
SDIST_PARTS = ["CMakeLists.txt", "README.md", "pyproject.toml", "src", "app", "python"]


class BuildError(RuntimeError):
    pass


def _log(message):
    print(f"momentkv build: {message}", file=sys.stderr, flush=True)


# ---- metadata ------------------------------------------------------------------------------------

def _project():
    """pyproject.toml's [project] table (tomllib from Python 3.11; a minimal reader before)."""
    text = (SOURCE / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
        return tomllib.loads(text)["project"]
    except ImportError:
        table = text.split("[project]", 1)[1].split("\n[", 1)[0]
        out = {}
        for key, value in re.findall(r'^([\w-]+)\s*=\s*(.+)$', table, re.M):
            out[key] = re.findall(r'"([^"]*)"', value) if value.startswith("[") else value.strip().strip('"')
        return out


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    if p.get("description"):
        lines.append(f"Summary: {p['description']}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    return p["name"], p["version"], "\n".join(lines) + "\n"


def _tag():
    """This interpreter's wheel tag, e.g. cp311-cp311-linux_x86_64."""
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    abi = "cp" + sysconfig.get_config_var("py_version_nodot") + getattr(sys, "abiflags", "")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{abi}-{platform}"


def _dist_info_files(name, version, metadata):
    wheel = f"Wheel-Version: 1.0\nGenerator: momentkv_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"
    return {f"{name}-{version}.dist-info/METADATA": metadata.encode(),
            f"{name}-{version}.dist-info/WHEEL": wheel.encode(),
            f"{name}-{version}.dist-info/top_level.txt": b"momentkv\n"}


# ---- the extension ---------------------------------------------------------------------------------

def _run(cmd):
    _log(" ".join(shlex.quote(str(c)) for c in cmd))
    r = subprocess.run([str(c) for c in cmd], stdout=sys.stderr)  # pip shows it with -v
    if r.returncode != 0:
        raise BuildError(f"command failed with exit code {r.returncode}: {' '.join(map(str, cmd))}")


def _extension():
    """The path of a built _momentkv for this interpreter (see the module docstring)."""
    given = os.environ.get("MOMENTKV_BUILD_DIR")
    if given:
        build = Path(given)
        if not build.is_absolute():
            build = SOURCE / build
        ext = build / "python" / "momentkv" / f"_momentkv{EXT_SUFFIX}"
        if not ext.exists():
            raise BuildError(f"MOMENTKV_BUILD_DIR={given}: {ext} not found (build it with `cmake --build {build} "
                             f"--target momentkv_python` for {sys.executable}, or unset MOMENTKV_BUILD_DIR to let "
                             f"the install build it)")
        _log(f"taking the extension built in {build}")
        return ext
    build = SOURCE / "build-pip"
    generator = ["-G", "Ninja"] if _which("ninja") and not (build / "CMakeCache.txt").exists() else []
    _run(["cmake", "-S", SOURCE, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release", "-DMOMENTKV_TESTS=OFF",
          "-DMOMENTKV_BENCH=OFF", "-DMOMENTKV_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}",
          *shlex.split(os.environ.get("CMAKE_ARGS", ""))])
    jobs = [] if os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") else ["-j", str(os.cpu_count() or 1)]
    _run(["cmake", "--build", build, "--target", "momentkv_python", *jobs])
    ext = build / "python" / "momentkv" / f"_momentkv{EXT_SUFFIX}"
    if not ext.exists():
        raise BuildError(f"{ext} was not built: see CMake's message above (Debian: apt-get install pybind11-dev "
                         f"python3-dev python3-numpy)")
    return ext


def _which(program):
    return any((Path(d) / program).exists() for d in os.environ.get("PATH", "").split(os.pathsep) if d)


# ---- PEP 517 hooks ---------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, metadata = _metadata()
    for path, data in _dist_info_files(name, version, metadata).items():
        target = Path(metadata_directory) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return f"{name}-{version}.dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, metadata = _metadata()
    ext = _extension()
    files = {f"momentkv/{p.name}": p.read_bytes() for p in sorted(PACKAGE.glob("*.py"))}
    files[f"momentkv/{ext.name}"] = ext.read_bytes()
    files.update(_dist_info_files(name, version, metadata))
    record_path = f"{name}-{version}.dist-info/RECORD"
    record = io.StringIO()
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{path},sha256={digest},{len(data)}\n")
    record.write(f"{record_path},,\n")
    files[record_path] = record.getvalue().encode()
    wheel_name = f"{name}-{version}-{_tag()}.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if path.endswith(EXT_SUFFIX) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    _log(f"wrote {wheel_name}")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = f"{name}-{version}"
    skip = re.compile(r"(^|/)(__pycache__|\.pytest_cache)(/|$)|\.pyc$")
    with tarfile.open(Path(sdist_directory) / f"{base}.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(metadata.encode())
        tar.addfile(info, io.BytesIO(metadata.encode()))
        for part in SDIST_PARTS:
            tar.add(SOURCE / part, arcname=f"{base}/{part}",
                    filter=lambda info: None if skip.search(info.name) else info)
    return f"{base}.tar.gz"
