#!/usr/bin/env python3
"""The Python SDK's scenario runner for the conformance suite (sdks/conformance/README.md, "Scenario runner protocol").

Run by test/sdk-conformance.test.ts as ``python3 sdks/python/tests/conformance_runner.py <scenario>`` with
``PYTHONPATH=sdks/python/src``: reads one JSON object on stdin, drives the SDK through the scenario's steps against
the real server the harness started, and prints exactly one line ``{"steps": [...]}``.
"""
import hashlib
import json
import os
import sys
import time
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from keyforge import FileStore, FloatingSession, KeyforgeClient, KeyforgeError, LicenseState
from keyforge.license_files import unarmor


class Runner:
    def __init__(self, inputs: Dict[str, Any]) -> None:
        self.inputs = inputs
        self.steps: List[Dict[str, Any]] = []
        self.offset = 0.0  # the run's clock minus the real clock (advanceClock)
        self.client = self.make_client(inputs["server"], os.path.join(inputs["storeDir"], "store.json"))

    def clock(self) -> float:
        return time.time() + self.offset

    def make_client(self, base_url: str, store_path: str) -> KeyforgeClient:
        client = KeyforgeClient(base_url, self.inputs["product"], issuer=self.inputs["issuer"], store=FileStore(store_path), clock=self.clock)
        # The JWKS fetched from the server (not pinned), as an application does at its first online start: the
        # offline calls (license files, air-gapped responses) verify against this copy.
        client.fetch_keys()
        return client

    def step(self, name: str, action: Callable[[], Dict[str, Any]]) -> None:
        """Runs one step: its value, or the SDK's error code; anything else crashes the runner."""
        try:
            value = action()
        except KeyforgeError as error:
            self.steps.append({"name": name, "ok": False, "error": error.code})
            return
        self.steps.append({"name": name, "ok": True, "value": value})

    def control(self, action: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        request = urllib.request.Request(
            f"{self.inputs['control']}/{action}",
            data=json.dumps(body or {}).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # a status >= 400 raises: a harness bug
            answer: Dict[str, Any] = json.loads(response.read().decode("utf-8"))
        return answer

    def advance_clock(self, seconds: int) -> None:
        now = self.control("advanceClock", {"seconds": seconds})["now"]
        self.offset = float(now) - time.time()

    # -- scenarios --------------------------------------------------------------------------------------------

    def activate(self) -> None:
        key, client, i = self.inputs["licenseKey"], self.client, self.inputs
        seats = lambda device: lambda: {"remainingActivations": client.activate(key, device_id=device).remaining_activations}  # noqa: E731
        self.step("activate", seats(i["deviceId"]))
        self.step("activateAgain", seats(i["deviceId"]))
        self.step("activateOther", seats(i["otherDeviceId"]))
        self.step("activateThird", seats(i["thirdDeviceId"]))
        freed = lambda: {"remainingActivations": client.deactivate(key, device_id=i["otherDeviceId"]).remaining_activations}  # noqa: E731
        self.step("deactivateOther", freed)
        self.step("deactivateOtherAgain", freed)
        self.step("seats", lambda: self.control("seats"))

    def validate(self) -> None:
        key, client, i = self.inputs["licenseKey"], self.client, self.inputs
        self.step("activate", lambda: {"remainingActivations": client.activate(key, device_id=i["deviceId"]).remaining_activations})

        def plain() -> Dict[str, Any]:
            entitlement = client.validate(key).entitlement
            return {
                "product": entitlement.product,
                "features": entitlement.features,
                "device": entitlement.device,
                "deviceActivated": entitlement.device_activated,
                "offlineGraceDays": entitlement.offline_grace_days,
            }

        def device(device_id: str) -> Callable[[], Dict[str, Any]]:
            def check() -> Dict[str, Any]:
                entitlement = client.validate(key, device_id=device_id, require_activation=True).entitlement
                return {"device": entitlement.device, "deviceActivated": entitlement.device_activated}

            return check

        self.step("validate", plain)
        self.step("validateDevice", device(i["deviceId"]))
        self.step("validateOtherDevice", device(i["otherDeviceId"]))
        self.step("validateUnknownKey", lambda: {"product": client.validate(i["unknownKey"]).entitlement.product})
        replay = self.make_client(f"{i['control']}/replay", os.path.join(i["storeDir"], "replay", "store.json"))
        self.step("validateReplayFirst", lambda: {"product": replay.validate(key).entitlement.product})
        self.step("validateReplayed", lambda: {"product": replay.validate(key).entitlement.product})

    def revoke_offline(self) -> None:
        key, client, device = self.inputs["licenseKey"], self.client, self.inputs["deviceId"]
        self.step("activate", lambda: {"remainingActivations": client.activate(key, device_id=device).remaining_activations})
        self.step("validate", lambda: {"offlineGraceDays": client.validate(key, device_id=device, require_activation=True).entitlement.offline_grace_days})
        self.control("revoke")
        offline = lambda: {"source": client.validate_offline(key, device_id=device, require_activation=True).source}  # noqa: E731
        self.step("validateOfflineRevoked", offline)
        self.advance_clock(172800)
        self.step("validateOfflineExpired", offline)
        self.step("validateOnline", lambda: {"source": client.validate(key, device_id=device, require_activation=True).source})
        self.step("validateOfflineAfterRejection", offline)

    def watch(self) -> None:
        key, client, device = self.inputs["licenseKey"], self.client, self.inputs["deviceId"]
        self.step("activate", lambda: {"remainingActivations": client.activate(key, device_id=device).remaining_activations})
        changes: List[LicenseState] = []
        # An hour between checks: every check here is one the scenario asks for.
        watcher = client.watch(key, on_change=lambda state, _previous: changes.append(state), device_id=device, interval=3600)

        def found() -> Dict[str, Any]:
            state = watcher.check()
            return {"status": state.status, "source": state.source, "features": sorted(state.features), "code": state.code, "changes": len(changes)}

        self.step("watchFirst", found)
        self.control("setFeatures", {"features": self.inputs["features"]})
        self.step("watchFeaturesChanged", found)
        self.step("watchUnchanged", found)
        self.control("revoke")
        self.step("watchRevoked", found)
        watcher.stop()
        self.step("watchStopped", lambda: {"active": watcher.active})

    def wrong_product(self) -> None:
        key, client, device = self.inputs["licenseKey"], self.client, self.inputs["deviceId"]
        self.step("activate", lambda: {"remainingActivations": client.activate(key, device_id=device).remaining_activations})

        def checkout() -> Dict[str, Any]:
            session = client.checkout(key, device_id=device)
            session.checkin()
            return {"floatingSeats": session.floating_seats}

        self.step("checkout", checkout)
        self.step("validate", lambda: {"product": client.validate(key).entitlement.product})
        self.step("seats", lambda: self.control("seats"))

    def floating(self) -> None:
        key, client, i = self.inputs["licenseKey"], self.client, self.inputs
        sessions: Dict[str, FloatingSession] = {}

        def checkout(name: str, device: str) -> Callable[[], Dict[str, Any]]:
            def take() -> Dict[str, Any]:
                session = client.checkout(key, device_id=device)
                sessions[name] = session
                return {"floatingSeats": session.floating_seats, "remainingFloatingSeats": session.remaining_floating_seats}

            return take

        def held(name: str) -> FloatingSession:
            if name not in sessions:
                raise RuntimeError(f"step needs session {name}, which an earlier step did not check out")
            return sessions[name]

        def checkin(name: str) -> Callable[[], Dict[str, Any]]:
            return lambda: {"checkedIn": held(name).checkin().get("checkedIn")}

        def heartbeat() -> Dict[str, Any]:
            held("C").heartbeat()
            return {}

        self.step("checkoutA", checkout("A", i["deviceA"]))
        self.step("checkoutB", checkout("B", i["deviceB"]))
        self.step("checkoutC", checkout("C", i["deviceC"]))
        self.step("checkinA", checkin("A"))
        self.step("checkoutCAgain", checkout("C", i["deviceC"]))
        self.step("heartbeatC", heartbeat)
        self.step("seats", lambda: self.control("seats"))
        self.step("checkinB", checkin("B"))
        self.step("checkinC", checkin("C"))
        self.step("seatsAfterCheckin", lambda: self.control("seats"))

    def air_gapped(self) -> None:
        key, client, i = self.inputs["licenseKey"], self.client, self.inputs
        written: Dict[str, str] = {}

        def create() -> Dict[str, Any]:
            request = client.create_activation_request(key, device_id=i["deviceId"], device_name=i.get("deviceName"), version=i.get("version"))
            written["request"] = request.request
            fields = json.loads(unarmor("ACTIVATION REQUEST", request.request))
            return {"device": fields["device"], "product": fields["product"]}

        self.step("createRequest", create)
        response = self.control("airGappedRespond", {"request": written["request"]})["response"]

        def apply() -> Dict[str, Any]:
            claims = client.apply_activation_response(response).entitlement.claims
            return {"device": claims.get("device"), "deviceActivated": claims.get("deviceActivated"), "kind": claims.get("kind")}

        self.step("applyResponse", apply)
        self.step("applyResponseAgain", apply)
        offline = lambda: {"source": client.validate_offline(key, device_id=i["deviceId"], require_activation=True).source}  # noqa: E731
        self.step("validateOffline", offline)
        self.step("seatsAfterActivation", lambda: self.control("seats"))

        def deactivate() -> Dict[str, Any]:
            proof = client.deactivate_offline(key)
            written["proof"] = proof.proof
            return {"deviceId": proof.device_id}

        self.step("deactivateOffline", deactivate)
        self.step("validateOfflineAfterDeactivation", offline)
        for name in ("uploadProof", "uploadProofAgain"):
            answer = self.control("airGappedDeactivate", {"proof": written["proof"]})
            if answer.get("deactivated") is True:
                self.steps.append({"name": name, "ok": True, "value": answer})
            else:
                self.steps.append({"name": name, "ok": False, "error": answer.get("error")})
        self.step("seatsAfterDeactivation", lambda: self.control("seats"))

    def metering(self) -> None:
        key, client, i = self.inputs["licenseKey"], self.client, self.inputs

        def meter(quantity: int, idempotency_key: Optional[str]) -> Callable[[], Dict[str, Any]]:
            def send() -> Dict[str, Any]:
                result = client.meter(key, "exports", quantity, idempotency_key=idempotency_key)
                return {"total": getattr(result, "total"), "limit": getattr(result, "limit"), "remaining": getattr(result, "remaining"), "replayed": getattr(result, "replayed")}

            return send

        self.step("meter", meter(3, i["idempotencyKey"]))
        self.step("meterReplayed", meter(3, i["idempotencyKey"]))
        self.step("meterSecond", meter(2, i["secondIdempotencyKey"]))
        self.step("meterOverQuota", meter(6, None))

    def releases(self) -> None:
        key, client, i = self.inputs["licenseKey"], self.client, self.inputs
        where = {"platform": i["platform"], "arch": i["arch"]}
        found: Dict[str, Any] = {}

        def publish(version: str, **extra: Any) -> None:
            filename = f"acme-studio-{version}-{i['platform']}-{i['arch']}.tar.gz"
            self.control("publishRelease", {"version": version, **where, "filename": filename, "content": i["artifactContent"], **extra})

        def check(current: str, device_id: Optional[str] = None) -> Callable[[], Dict[str, Any]]:
            def run() -> Dict[str, Any]:
                answer = client.check_for_update(key, current, device_id=device_id, **where)
                if answer.release is not None and answer.release.get("artifacts"):
                    found.setdefault("artifact", answer.release["artifacts"][0])
                return {"available": answer.available, "reason": answer.reason, "version": answer.release["version"] if answer.release else None}

            return run

        versions = lambda: {"versions": [release["version"] for release in client.list_releases(key, **where)]}  # noqa: E731

        def download() -> Dict[str, Any]:
            data = client.download_artifact(key, found["artifact"], device_id=i["deviceId"])
            assert isinstance(data, bytes)
            return {"filename": found["artifact"]["filename"], "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}

        def download_edited() -> Dict[str, Any]:
            client.download_artifact(key, {**found["artifact"], "sha256": "0" * 64})
            return {}

        # Into a file of a folder of its own: what is there afterwards (the file, and nothing else left behind).
        downloads = os.path.join(i["storeDir"], "downloads")
        os.makedirs(downloads, exist_ok=True)
        target = lambda: os.path.join(downloads, found["artifact"]["filename"])  # noqa: E731

        def on_disk() -> Dict[str, Any]:
            with open(target(), "rb") as file:
                data = file.read()
            return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "leftovers": len(os.listdir(downloads)) - 1}

        def download_to_file() -> Dict[str, Any]:
            client.download_artifact(key, found["artifact"], target(), device_id=i["deviceId"])
            return on_disk()

        def download_to_file_edited() -> Dict[str, Any]:
            client.download_artifact(key, {**found["artifact"], "sha256": "0" * 64}, target(), device_id=i["deviceId"])
            return {}

        # Through the control server's tampering proxy: the file's last byte changed on the way.
        tampered = self.make_client(f"{i['control']}/tamper", os.path.join(i["storeDir"], "tamper", "store.json"))

        def download_to_file_tampered() -> Dict[str, Any]:
            tampered.download_artifact(key, found["artifact"], target(), device_id=i["deviceId"])
            return {}

        publish("1.1.0", requiresMaintenance=True)
        self.step("checkForUpdate", check(i["currentVersion"]))
        self.step("listReleases", versions)
        self.step("activate", lambda: {"remainingActivations": client.activate(key, device_id=i["deviceId"]).remaining_activations})
        self.step("download", download)
        self.step("downloadEditedListing", download_edited)
        self.step("downloadToFile", download_to_file)
        self.step("downloadToFileEdited", download_to_file_edited)
        self.step("downloadToFileTampered", download_to_file_tampered)
        self.step("fileKept", on_disk)
        self.step("checkOtherDevice", check(i["currentVersion"], i["otherDeviceId"]))
        publish("1.2.0", requiredFeatures=["enterprise"])
        self.step("checkFeatureMissing", check("1.1.0"))
        self.control("yankRelease", {"version": "1.2.0"})
        self.step("checkAfterYank", check("1.1.0"))
        self.control("lapseMaintenance")
        self.step("checkMaintenanceExpired", check(i["currentVersion"]))
        self.step("listAfterLapse", versions)


SCENARIOS = {
    "activate": Runner.activate,
    "validate": Runner.validate,
    "revoke-offline": Runner.revoke_offline,
    "wrong-product": Runner.wrong_product,
    "floating": Runner.floating,
    "air-gapped": Runner.air_gapped,
    "metering": Runner.metering,
    "releases": Runner.releases,
    "watch": Runner.watch,
}


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print(f"usage: conformance_runner.py <{'|'.join(SCENARIOS)}>", file=sys.stderr)
        return 2
    inputs = json.loads(sys.stdin.read())
    runner = Runner(inputs)
    try:
        SCENARIOS[sys.argv[1]](runner)
    except BaseException:
        print(f"steps before the crash: {json.dumps(runner.steps)}", file=sys.stderr)
        raise
    sys.stdout.write(json.dumps({"steps": runner.steps}) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
