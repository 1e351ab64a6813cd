"""A stable machine fingerprint for ``device_id``, per operating system.

| OS | Source |
|---|---|
| Linux | ``/etc/machine-id`` (else ``/var/lib/dbus/machine-id``) |
| macOS | ``IOPlatformUUID`` (``ioreg -rd1 -c IOPlatformExpertDevice``) |
| Windows | the registry's ``HKLM\\SOFTWARE\\Microsoft\\Cryptography\\MachineGuid`` |
| FreeBSD, OpenBSD, NetBSD | ``sysctl -n kern.hostuuid``, else ``/etc/hostid`` |

It identifies the operating-system installation, not the hardware: a reinstall changes it, a cloned virtual
machine or disk image shares it, and an administrator can change it. Good for "one seat per machine"; not
tamper-proof hardware binding. The same sources and the same digest as the TypeScript SDK's ``machineFingerprint``,
so a Python and a TypeScript application of one vendor on one machine name it alike when given the same salt.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from typing import List, Optional

from .errors import KeyforgeError

__all__ = ["machine_id", "machine_fingerprint"]


def _first_line(files: List[str]) -> Optional[str]:
    for name in files:
        try:
            with open(name, "r", encoding="utf-8") as handle:
                value = handle.read().strip()
        except OSError:
            continue
        if value:
            return value
    return None


def _run(command: List[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=5, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_id() -> str:
    """The operating system's identifier of this machine, as is (not hashed). Prefer :func:`machine_fingerprint`,
    which never reveals it. Raises :class:`KeyforgeError` ``MachineIdUnavailable`` where the platform offers none."""
    found: Optional[str] = None
    if sys.platform.startswith("linux"):
        found = _first_line(["/etc/machine-id", "/var/lib/dbus/machine-id"])
    elif sys.platform == "darwin":
        match = re.search(r'"IOPlatformUUID"\s*=\s*"([^"]+)"', _run(["ioreg", "-rd1", "-c", "IOPlatformExpertDevice"]))
        found = match.group(1) if match else None
    elif sys.platform == "win32":
        try:
            import winreg

            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SOFTWARE\Microsoft\Cryptography", 0, winreg.KEY_READ | winreg.KEY_WOW64_64KEY) as key:
                found = str(winreg.QueryValueEx(key, "MachineGuid")[0])
        except OSError:
            found = None
    elif sys.platform.startswith(("freebsd", "openbsd", "netbsd")):
        found = _run(["sysctl", "-n", "kern.hostuuid"]).strip() or _first_line(["/etc/hostid"])
    if not found:
        raise KeyforgeError("MachineIdUnavailable", f"No machine identifier found on {sys.platform}: pass your own device_id (or rely on the installation id).")
    return found


def machine_fingerprint(salt: str = "keyforge") -> str:
    """The hex SHA-256 of ``salt``, a newline and :func:`machine_id`. Pass your product's name as ``salt`` so two
    vendors' applications on one machine send unrelated values (an empty salt is ``keyforge``, as in every Keyforge
    SDK)."""
    return hashlib.sha256(f"{salt or 'keyforge'}\n{machine_id()}".encode("utf-8")).hexdigest()
