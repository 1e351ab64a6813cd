"""Random and mutated tokens, license files, activation responses and requests: the SDK refuses them with a
KeyforgeError (or accepts a mutation that changes nothing signed), never another exception, never a hang.

Mutations start from the conformance vectors, so they reach past the armor and the JSON into the signature,
claims and decryption checks. Deterministic (derandomized) and bounded: a few thousand cases in all."""
import json
from pathlib import Path
from typing import Any, Callable, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keyforge import KeyforgeClient, KeyforgeError, MemoryStore, verify_offline_token
from keyforge.license_files import open_license_file, unarmor

VECTORS: Dict[str, Any] = json.loads((Path(__file__).resolve().parents[3] / "sdks" / "conformance" / "vectors.json").read_text(encoding="utf-8"))
TOKENS: List[str] = [vector["token"] for vector in VECTORS["offlineTokens"]]
FILES: List[str] = [vector["file"] for vector in VECTORS["licenseFiles"]] + [vector["response"] for vector in VECTORS["activationResponses"]]
REQUESTS: List[str] = [vector["request"] for vector in VECTORS["activationRequests"]] + [vector["compact"] for vector in VECTORS["activationRequests"]]
LICENSE_KEY = next(vector["licenseKey"] for vector in VECTORS["licenseFiles"] if vector.get("licenseKey"))
DEVICE_ID = next(vector["deviceId"] for vector in VECTORS["licenseFiles"] if vector.get("deviceId"))
NOW = VECTORS["offlineTokens"][0]["now"]

FUZZ = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)


def mutate(text: str, data: st.DataObject) -> str:
    """One to four edits: a character replaced, inserted or deleted, a slice cut or doubled."""
    alphabet = "ABCabc019-_+/=.{}\":, \n>\x00é\u2028"
    for _ in range(data.draw(st.integers(1, 4))):
        if not text:
            return data.draw(st.text(max_size=50))
        position = data.draw(st.integers(0, len(text) - 1))
        kind = data.draw(st.sampled_from(["replace", "insert", "delete", "cut", "double"]))
        character = data.draw(st.sampled_from(alphabet))
        if kind == "replace":
            text = text[:position] + character + text[position + 1 :]
        elif kind == "insert":
            text = text[:position] + character + text[position:]
        elif kind == "delete":
            text = text[:position] + text[position + 1 :]
        elif kind == "cut":
            text = text[:position]
        else:
            text = text[:position] + text[position:] + text[position:]
    return text


def refused_or_accepted(check: Callable[[], Any]) -> None:
    try:
        check()
    except KeyforgeError:
        pass


def verify_token(token: str) -> None:
    for jwks in VECTORS["jwks"].values():
        refused_or_accepted(
            lambda: verify_offline_token(token, jwks=jwks, issuer=VECTORS["issuer"], product=VECTORS["product"], now=NOW, device_id=DEVICE_ID, require_activation=True, challenge="c")
        )


def file_client() -> KeyforgeClient:
    return KeyforgeClient(VECTORS["issuer"], VECTORS["product"], jwks=VECTORS["jwks"]["rotated"], store=MemoryStore(), clock=lambda: float(NOW))


@FUZZ
@given(st.text(max_size=400))
def test_random_text_as_a_token(token: str) -> None:
    verify_token(token)


@FUZZ
@given(st.lists(st.binary(max_size=120), min_size=3, max_size=3))
def test_random_segments_as_a_token(parts: List[bytes]) -> None:
    import base64

    verify_token(".".join(base64.urlsafe_b64encode(part).rstrip(b"=").decode() for part in parts))


@FUZZ
@given(st.data())
def test_mutated_tokens(data: st.DataObject) -> None:
    verify_token(mutate(data.draw(st.sampled_from(TOKENS)), data))


@FUZZ
@given(st.data())
def test_mutated_license_files(data: st.DataObject) -> None:
    text = mutate(data.draw(st.sampled_from(FILES)), data)
    client = file_client()
    refused_or_accepted(lambda: client.verify_license_file(text, license_key=LICENSE_KEY, device_id=DEVICE_ID))
    refused_or_accepted(lambda: client.verify_license_file(text))
    refused_or_accepted(lambda: client.install_license_file(text, license_key=LICENSE_KEY))
    refused_or_accepted(lambda: client.apply_activation_response(text, license_key=LICENSE_KEY))
    refused_or_accepted(lambda: client.apply_activation_response(text))


@FUZZ
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda raw: raw.decode("latin-1"))))
def test_random_text_as_a_license_file(text: str) -> None:
    client = file_client()
    refused_or_accepted(lambda: client.verify_license_file(text, license_key=LICENSE_KEY, device_id=DEVICE_ID))
    refused_or_accepted(lambda: open_license_file("-----BEGIN KEYFORGE LICENSE FILE-----\n" + text + "\n-----END KEYFORGE LICENSE FILE-----"))


@FUZZ
@given(st.dictionaries(st.sampled_from(["v", "enc", "token", "salt", "iv", "ct", "device", "kdf"]), st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40)), max_size=8))
def test_random_envelopes(envelope: Dict[str, Any]) -> None:
    import base64

    text = "-----BEGIN KEYFORGE LICENSE FILE-----\n" + base64.b64encode(json.dumps(envelope).encode()).decode() + "\n-----END KEYFORGE LICENSE FILE-----\n"
    refused_or_accepted(lambda: open_license_file(text, license_key=LICENSE_KEY, device_id=DEVICE_ID))
    refused_or_accepted(lambda: open_license_file(text, license_key=LICENSE_KEY))


@FUZZ
@given(st.data())
def test_mutated_activation_requests(data: st.DataObject) -> None:
    text = mutate(data.draw(st.sampled_from(REQUESTS)), data)
    refused_or_accepted(lambda: unarmor("ACTIVATION REQUEST", text))
