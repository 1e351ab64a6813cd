#!/usr/bin/env python3
"""Activate this installation and validate the license key, with Python's standard library only.

  KEYFORGE_URL  the server's public URL, e.g. https://licenses.example.com
  LICENSE_KEY   the key shown once when the license was created (never put it in a URL)
  DEVICE_ID     optional: this machine's identifier (default: its hostname)
  PRODUCT       optional: this application's product name; the server then refuses a key of another product
                (ProductMismatch) before it takes a seat

Exit status: 0 licensed, 1 refused (the errorCode is printed), 2 the server could not be asked.

The answer's offlineCacheToken is an Ed25519-signed JWT: the standard library has no Ed25519, so to trust it offline
verify it with a library (e.g. `cryptography`'s Ed25519PublicKey) against /.well-known/jwks.json, as the Go and curl
examples do.
"""
import json
import os
import socket
import sys
import urllib.error
import urllib.request

BASE_URL = os.environ["KEYFORGE_URL"].rstrip("/")
API = BASE_URL + "/api/v1"
LICENSE_KEY = os.environ["LICENSE_KEY"]
DEVICE_ID = os.environ.get("DEVICE_ID") or socket.gethostname()
PRODUCT = os.environ.get("PRODUCT")


def call(path, body=None):
    """GET (no body) or POST JSON; an HTTP error (429: honour Retry-After; 5xx) or no answer exits with status 2."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(API + path, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        print(f"{path}: HTTP {error.code} {error.read().decode(errors='replace')}", file=sys.stderr)
    except urllib.error.URLError as error:
        print(f"{path}: {error.reason}", file=sys.stderr)
    sys.exit(2)


def refuse(step, result):
    print(f"{step}: refused {result['errorCode']}: {result.get('message', '')}")
    sys.exit(1)


# 1. A fresh single-use nonce, then the activation: takes a seat, or reuses this device's seat. With "product", a key
# of another product (not a bundle containing it) is refused with ProductMismatch and no seat is taken.
nonce = call("/nonce")["nonce"]
activation = {"licenseKey": LICENSE_KEY, "nonce": nonce, "deviceId": DEVICE_ID}
if PRODUCT:
    activation["product"] = PRODUCT
activated = call("/activate", activation)
if not activated["isValid"]:
    refuse("activate", activated)
print(f"activate: ok, {activated['productName']}, {activated['remainingActivations']} activation(s) left")

# 2. On every launch: validate. requireActivation refuses a device whose activation was removed (DeviceNotActivated).
# HTTP 200 can carry a refusal: grant access only when isValid is true.
result = call("/validate", {"licenseKey": LICENSE_KEY, "deviceId": DEVICE_ID, "requireActivation": True})
if not result["isValid"]:
    refuse("validate", result)
features = ", ".join(result["features"])
print(f"validate: ok, {result['productName']}, expires {result['expiresAt'] or 'never'}, features [{features}]")

# 3. Keep result["offlineCacheToken"] for launches without a network; verify its signature before trusting it.
