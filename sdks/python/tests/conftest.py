import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict

import pytest

SDK = Path(__file__).resolve().parent.parent
REPOSITORY = SDK.parent.parent
# The tests run against the sources (the install test checks the installed package separately).
sys.path.insert(0, str(SDK / "src"))

VECTORS_PATH = REPOSITORY / "sdks" / "conformance" / "vectors.json"


@pytest.fixture(scope="session")
def vectors() -> Dict[str, Any]:
    with open(VECTORS_PATH, encoding="utf-8") as handle:
        return json.load(handle)


# Hypothesis keeps a cache (its charmap) in ./.hypothesis unless told otherwise: the run leaves nothing in the tree.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "keyforge-python-hypothesis"))
