#!/usr/bin/env bash
# Activate this installation, validate the key and verify the signed offline token, with curl, jq and openssl (3.0+).
#   KEYFORGE_URL  the server's public URL, e.g. https://licenses.example.com
#   LICENSE_KEY   the key shown once when the license was created (never put it in a URL)
#   DEVICE_ID     optional: this machine's identifier (default: its hostname)
#   PRODUCT       optional: this application's product name; the server then refuses a key of another product
#                 (ProductMismatch) before it takes a seat
# Exit status: 0 licensed, 1 refused (the errorCode is printed), 2 the server could not be asked.
set -euo pipefail
: "${KEYFORGE_URL:?set KEYFORGE_URL}" "${LICENSE_KEY:?set LICENSE_KEY}"
API="${KEYFORGE_URL%/}/api/v1"
DEVICE_ID="${DEVICE_ID:-$(hostname)}"

# POST a JSON body; fail (exit 2) on an HTTP error such as 429 (honour its Retry-After) or 5xx.
post() { curl -sS --fail-with-body "$API$1" -H 'content-type: application/json' -d "$2" || exit 2; }

# 1. A fresh single-use nonce, then the activation: takes a seat, or reuses this device's seat. With `product`, a key
# of another product (not a bundle containing it) is refused with ProductMismatch and no seat is taken.
NONCE=$(curl -sS --fail "$API/nonce" | jq -r .nonce) || exit 2
ACTIVATED=$(post /activate "$(jq -n --arg key "$LICENSE_KEY" --arg nonce "$NONCE" --arg device "$DEVICE_ID" --arg product "${PRODUCT:-}" \
  '{licenseKey: $key, nonce: $nonce, deviceId: $device} + (if $product != "" then {product: $product} else {} end)')")
if [ "$(jq -r .isValid <<<"$ACTIVATED")" != true ]; then
  echo "activate: refused $(jq -r '.errorCode + ": " + .message' <<<"$ACTIVATED")"; exit 1
fi
echo "activate: ok, $(jq -r '"\(.productName), \(.remainingActivations) activation(s) left"' <<<"$ACTIVATED")"

# 2. On every launch: validate. requireActivation refuses a device whose activation was removed (DeviceNotActivated).
# HTTP 200 can carry a refusal: grant access only when isValid is true.
RESULT=$(post /validate "$(jq -n --arg key "$LICENSE_KEY" --arg device "$DEVICE_ID" \
  '{licenseKey: $key, deviceId: $device, requireActivation: true}')")
if [ "$(jq -r .isValid <<<"$RESULT")" != true ]; then
  echo "validate: refused $(jq -r '.errorCode + ": " + .message' <<<"$RESULT")"; exit 1
fi
echo "validate: ok, $(jq -r '"\(.productName), expires \(.expiresAt // "never"), features [\(.features | join(", "))]"' <<<"$RESULT")"

# 3. The offline token: an EdDSA (Ed25519) JWT. Keep it; offline, trust it only once its signature verifies
# against a key of /.well-known/jwks.json (fetch them once, or ship them with the application) and it has not expired.
TOKEN=$(jq -r .offlineCacheToken <<<"$RESULT")
b64url() { local s; s=$(tr '_-' '/+' <<<"$1"); while [ $(( ${#s} % 4 )) -ne 0 ]; do s="$s="; done; base64 -d <<<"$s"; }
HEADER=$(b64url "${TOKEN%%.*}"); REST="${TOKEN#*.}"; PAYLOAD_B64="${REST%%.*}"; SIGNATURE_B64="${REST#*.}"
CLAIMS=$(b64url "$PAYLOAD_B64")
KID=$(jq -r .kid <<<"$HEADER")
[ "$(jq -r .alg <<<"$HEADER")" = EdDSA ] || { echo "token: refused: not EdDSA"; exit 1; }
X=$(curl -sS --fail "${KEYFORGE_URL%/}/.well-known/jwks.json" | jq -r --arg kid "$KID" '.keys[] | select(.kid == $kid and .crv == "Ed25519") | .x') || exit 2
[ -n "$X" ] || { echo "token: refused: unknown signing key $KID"; exit 1; }
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
# An Ed25519 public key in PEM: the fixed SubjectPublicKeyInfo prefix, then the 32 bytes of the JWK's x.
{ printf '\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00'; b64url "$X"; } > "$WORK/key.der"
openssl pkey -pubin -inform DER -in "$WORK/key.der" -out "$WORK/key.pem"
printf '%s' "${TOKEN%%.*}.$PAYLOAD_B64" > "$WORK/signed"
b64url "$SIGNATURE_B64" > "$WORK/signature"
if ! openssl pkeyutl -verify -pubin -inkey "$WORK/key.pem" -rawin -in "$WORK/signed" -sigfile "$WORK/signature" >/dev/null; then
  echo "token: refused: the signature does not verify"; exit 1
fi
jq -e --arg device "$DEVICE_ID" --argjson now "$(date +%s)" '.exp > $now and .device == $device and .deviceActivated == true' <<<"$CLAIMS" >/dev/null \
  || { echo "token: refused: expired, or not for this device"; exit 1; }
echo "token: signature verified (key $KID), valid offline until $(jq -r '.exp | todate' <<<"$CLAIMS")"
