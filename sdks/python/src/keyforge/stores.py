"""Where the client keeps what it needs between launches.

The last verified offline token of each license (never the license key itself: records are named by a digest
of it), the keys fetched from the JWKS, the device key pairs of air-gapped activations, queued usage, and this
installation's random device id. Values are strings. The store need not be secret for the tokens (their
signature, not the store, is what is trusted), but it holds the private half of air-gapped device keys:
:class:`FileStore` makes it readable by the user only.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
from typing import Dict, Optional

try:
    from typing import Protocol
except ImportError:  # pragma: no cover - Python < 3.8 is not supported anyway
    from typing_extensions import Protocol  # type: ignore

__all__ = ["TokenStore", "MemoryStore", "FileStore"]


class TokenStore(Protocol):
    """A key/value store of strings. Implementations must be safe to call from several threads."""

    def get(self, key: str) -> Optional[str]: ...

    def set(self, key: str, value: str) -> None: ...

    def delete(self, key: str) -> None: ...


class MemoryStore:
    """Keeps everything in memory: lost when the process ends (the default)."""

    def __init__(self) -> None:
        self._values: Dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Optional[str]:
        with self._lock:
            return self._values.get(key)

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._values[key] = value

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)


class FileStore:
    """Keeps the store in one JSON file (the TypeScript SDK's ``FileStore`` format).

    On POSIX the file is created with mode 0600 and its folder with 0700 (readable by the user only; a folder that
    already exists is left as it is). Every write goes to a temporary file in the same folder, is flushed
    to disk and renamed over the file, so a crash mid-write never leaves half a file. Writes of one process are
    serialized by a lock; use one store file per process. A file that is not valid JSON reads as empty (the next
    online validation writes it anew). On Windows the file lives where you put it (choose a folder under the
    user's profile, whose ACL already limits it to the user).
    """

    def __init__(self, path: "os.PathLike[str] | str") -> None:
        self.path = os.path.abspath(os.fspath(path))
        self._lock = threading.RLock()

    def get(self, key: str) -> Optional[str]:
        with self._lock:
            return self._read().get(key)

    def set(self, key: str, value: str) -> None:
        with self._lock:
            values = self._read()
            values[key] = value
            self._write(values)

    def delete(self, key: str) -> None:
        with self._lock:
            values = self._read()
            if key in values:
                del values[key]
                self._write(values)

    def _read(self) -> Dict[str, str]:
        try:
            with open(self.path, "r", encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return {}
        try:
            parsed = json.loads(text)
        except ValueError:
            return {}  # not JSON (edited or corrupted): as if empty
        if not isinstance(parsed, dict):
            return {}
        return {key: value for key, value in parsed.items() if isinstance(value, str)}

    def _write(self, values: Dict[str, str]) -> None:
        folder = os.path.dirname(self.path)
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
            if os.name == "posix":
                os.chmod(folder, 0o700)  # the umask may have widened it; a folder that existed is left alone
        descriptor, temporary = tempfile.mkstemp(prefix=os.path.basename(self.path) + ".", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                if os.name == "posix":
                    os.fchmod(handle.fileno(), 0o600)
                json.dump(values, handle, indent=2)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
