"""The SDK's own PEP 517 build backend: pure Python, standard library only, so that
``pip install sdk/python`` works in a fresh virtual environment with no index at all (setuptools
before 70.1 needs the ``wheel`` package to build a wheel, and Debian's is older than that).

It builds one pure wheel (``py3-none-any``) of the ``svc_sdk`` package, an sdist, and an editable
wheel (a ``.pth`` naming the source folder). The metadata comes from pyproject.toml's ``[project]``.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "svc_sdk"


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    try:
        import tomllib  # Python 3.11 and later

        return tomllib.loads(text)["project"]
    except ImportError:
        pass
    # Older Pythons: the [project] table's `key = "string"` and `key = ["a", "b"]` lines.
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S).group(1)
    project = {}
    for key, value in re.findall(r"^([\w-]+)\s*=\s*(.+?)\s*$", section, re.M):
        if value.startswith("["):
            project[key] = re.findall(r'"([^"]*)"', value)
        else:
            project[key] = value.strip('"')
    return project


def _names():
    p = _project()
    dist = re.sub(r"[-_.]+", "_", p["name"]).lower()
    return p, dist, "%s-%s.dist-info" % (dist, p["version"])


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    lines += ["Classifier: " + c for c in p.get("classifiers", [])]
    lines += ["Requires-Dist: " + d for d in p.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _wheel_file():
    return "Wheel-Version: 1.0\nGenerator: svc_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _sources():
    base = os.path.join(ROOT, PACKAGE)
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py") or name == "py.typed":
                full = os.path.join(folder, name)
                yield full, os.path.relpath(full, ROOT).replace(os.sep, "/")


def _write_wheel(wheel_directory, files):
    """files: (archive name, bytes) pairs; the dist-info and its RECORD are added here."""
    p, dist, info = _names()
    files = list(files) + [(info + "/METADATA", _metadata(p).encode()), (info + "/WHEEL", _wheel_file().encode())]
    record = []
    name = "%s-%s-py3-none-any.whl" % (dist, p["version"])
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
        record.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(record) + "\n")
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_sdist = get_requires_for_build_wheel
get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p, _, info = _names()
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    for name, text in (("METADATA", _metadata(p)), ("WHEEL", _wheel_file())):
        with open(os.path.join(metadata_directory, info, name), "w", encoding="utf-8") as f:
            f.write(text)
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, ((arc, _read(full)) for full, arc in _sources()))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("_svc_sdk_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p, dist, _ = _names()
    base = "%s-%s" % (dist, p["version"])
    name = base + ".tar.gz"
    members = [(os.path.join(ROOT, "pyproject.toml"), "pyproject.toml"), (__file__, "build_backend/svc_build.py")]
    members += list(_sources())
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for full, arc in members:
            tar.add(full, arcname=base + "/" + arc, recursive=False)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata(p).encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return name
