"""The package as a user gets it: type hints that mypy --strict accepts, and an install with pip into a fresh
virtual environment from the repository (offline: no index, no build isolation, cryptography from the system)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

SDK = Path(__file__).resolve().parent.parent


def run(command: list, cwd: Path = SDK) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_type_hints_pass_mypy_strict() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        raise AssertionError("mypy is not installed: install Debian's python3-mypy (apt-get install python3-mypy)") from None
    # No cache in the repository (os.devnull: mypy's documented way to write none).
    result = run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", f"--cache-dir={os.devnull}", "src/keyforge"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_pip_installs_the_package_into_a_fresh_virtual_environment(tmp_path: Path) -> None:
    # From a copy, so the build leaves nothing in the repository.
    source = tmp_path / "source"
    shutil.copytree(SDK, source, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__", ".mypy_cache", ".pytest_cache", ".hypothesis"))
    venv = tmp_path / "venv"
    created = run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    assert created.returncode == 0, created.stdout + created.stderr
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    installed = run([str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", str(source)])
    assert installed.returncode == 0, installed.stdout + installed.stderr
    probe = (
        "import importlib.metadata as m, pathlib, keyforge;"
        "print(keyforge.__file__);"
        "print(m.version('keyforge'));"
        "print(m.metadata('keyforge')['Requires-Python']);"
        "print(m.requires('keyforge'));"
        "print((pathlib.Path(keyforge.__file__).parent / 'py.typed').exists());"
        "c = keyforge.KeyforgeClient('https://licenses.example.com', 'Acme Studio');"
        "print(c.issuer)"
    )
    imported = run([str(python), "-c", probe], cwd=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    location, version, requires_python, requires, typed, issuer = imported.stdout.strip().splitlines()
    assert Path(location).resolve().is_relative_to(venv.resolve()), location  # the installed copy, not the sources
    assert version == "0.1.0" and requires_python == ">=3.9" and "cryptography" in requires and typed == "True"
    assert issuer == "https://licenses.example.com"
