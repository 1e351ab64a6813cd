"""The SDK's error codes are the TypeScript SDK's, spelled identically, and every code the sources raise is listed."""
import re
from pathlib import Path

from keyforge.errors import ERROR_CODES

SOURCES = Path(__file__).resolve().parent.parent / "src" / "keyforge"
TS_ERRORS = Path(__file__).resolve().parents[3] / "sdk" / "src" / "errors.ts"
TS_CLASS_OF_TYPE = {
    "RejectionCode": "LicenseRejectedError",
    "ApiErrorCode": "ApiError",
    "NetworkErrorCode": "NetworkError",
    "VerificationErrorCode": "VerificationError",
    "SessionErrorCode": "KeyforgeError",
}


def typescript_codes() -> dict:
    source = re.sub(r"/\*[\s\S]*?\*/|//[^\n]*", "", TS_ERRORS.read_text(encoding="utf-8"))
    codes: dict = {}
    for name, body in re.findall(r"export type (\w+Code)\s*=([^;]*);", source):
        literals = re.findall(r"'([A-Za-z]+)'", body)
        if literals:
            codes.setdefault(TS_CLASS_OF_TYPE[name], set()).update(literals)
    # Codes thrown as a plain KeyforgeError that no code type lists (as docs/scripts/error-reference.ts reads them).
    typed = set().union(*codes.values())
    for file in TS_ERRORS.parent.glob("*.ts"):
        plain = set(re.findall(r"new KeyforgeError\('([A-Za-z]+)'", file.read_text(encoding="utf-8"))) - typed
        codes.setdefault("KeyforgeError", set()).update(plain)
    return codes


def test_the_codes_of_each_class_are_the_typescript_sdks() -> None:
    typescript = typescript_codes()
    assert {name: set(codes) for name, codes in ERROR_CODES.items()} == typescript


def test_every_code_the_sources_raise_is_listed_under_its_class() -> None:
    raised = set()
    for file in SOURCES.glob("*.py"):
        text = file.read_text(encoding="utf-8")
        for class_name, code in re.findall(r'\b(KeyforgeError|LicenseRejectedError|ApiError|NetworkError|VerificationError)\(\s*"([A-Za-z]+)"', text):
            raised.add((class_name, code))
    assert raised, "the pattern found nothing: the test would pass vacuously"
    # The base class may carry any listed code (a checked-in session raises SessionExpired as a KeyforgeError).
    listed = set().union(*ERROR_CODES.values())
    unlisted = {(class_name, code) for class_name, code in raised if code not in (listed if class_name == "KeyforgeError" else ERROR_CODES[class_name])}
    assert unlisted == set()
