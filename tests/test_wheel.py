"""The built wheel in a fresh environment: one top-level package, the sample inside, outputs in ./artifacts.

The wheel is built from an sdist (`uv build`), as a release would be, and installed with `uv pip` into a new
virtual environment. The command then runs in an otherwise empty folder that holds a user's own `pipeline.py`,
`schemas/` and `flows/`, put on PYTHONPATH as a Prefect or Dask worker's working directory would be: each of
them raises when imported, so any import of a bare generic name fails the build. About a minute, most of it
the build itself (a temporary Prefect server, great-expectations, the stages over the sample).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
USER_FILES = {
    "pipeline.py": "raise ImportError(\"the user's own pipeline.py was imported\")\n",
    "schemas/__init__.py": "raise ImportError(\"the user's own schemas/ was imported\")\n",
    "flows/__init__.py": "raise ImportError(\"the user's own flows/ was imported\")\n",
    "flows/etl.py": "raise ImportError(\"the user's own flows/etl.py was imported\")\n",
}

uv = pytest.importorskip("uv", reason="the dev extra's uv builds and installs the wheel")


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, args))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, the fresh environment's bin directory, the user's folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    uv_bin = uv.find_uv_bin()
    _run([uv_bin, "build", "--quiet", "--out-dir", str(tmp / "dist"), str(REPO)])
    (wheel,) = (tmp / "dist").glob("ecombench-*.whl")
    _run([uv_bin, "venv", "--quiet", "--python", sys.executable, str(tmp / "venv")])
    _run([uv_bin, "pip", "install", "--quiet", "--python", str(tmp / "venv" / "bin" / "python"), str(wheel)])
    user = tmp / "user"
    for name, text in USER_FILES.items():
        (user / name).parent.mkdir(parents=True, exist_ok=True)
        (user / name).write_text(text, encoding="utf-8")
    return wheel, tmp / "venv" / "bin", user


def _user_env(user: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ECOMBENCH_ARTIFACTS", "PREFECT_API_URL", "VIRTUAL_ENV", "PYTHONHOME")}
    # the user's folder first on the path, as a worker's working directory; a private Prefect home
    return dict(env, PYTHONPATH=str(user), PREFECT_HOME=str(user.parent / "prefect-home"))


@pytest.mark.prefect
def test_the_wheel_holds_one_top_level_package_with_the_sample(installed):
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"ecombench", f"ecombench-{VERSION}.dist-info"}
    assert {"ecombench/data/sample/meta.jsonl.gz", "ecombench/data/sample/reviews.jsonl.gz",
            "ecombench/tables/fields.toml", "ecombench/schemas/task.schema.json"} <= set(names)
    entry_points = zipfile.ZipFile(wheel).read(f"ecombench-{VERSION}.dist-info/entry_points.txt").decode()
    assert "ecombench = ecombench.flows.cli:main" in entry_points


@pytest.mark.prefect
def test_the_main_job_runs_in_a_users_folder_and_writes_under_its_artifacts(installed):
    _, bin_dir, user = installed
    done = _run([str(bin_dir / "ecombench"), "build"], cwd=user, env=_user_env(user))
    version = user / "artifacts" / "splits" / "sample" / "v1"
    assert f"split version: {version}" in done.stdout
    assert (user / "artifacts" / "catalogs" / "sample" / "manifest.json").is_file()
    manifest = json.loads((version / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["tasks"] + manifest["counts"]["rejections"] > 0
    assert (version / "tasks.jsonl").is_file() and (version / "report.html").is_file()
    site = _run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    assert not (Path(site.stdout.strip()) / "artifacts").exists()  # nothing written inside the installation


def test_python_imports_the_installed_package_beside_the_users_modules(installed):
    _, bin_dir, user = installed
    code = ("import ecombench, ecombench.pipeline.candidate, ecombench.schemas.findings, ecombench.flows.cli; "
            "print(ecombench.__version__, ecombench.__file__)")
    done = _run([str(bin_dir / "python"), "-c", code], cwd=user, env=_user_env(user))
    version, path = done.stdout.split()
    assert version == VERSION and Path(path).is_relative_to(bin_dir.parent)
