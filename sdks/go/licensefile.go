package keyforge

// The text formats of signed license files, activation requests and deactivation proofs
// (docs/integrate/license-files.md describes each byte; the server reads and writes the same).

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

const (
	// CompactRequestPrefix starts the one-line form of an activation request (for a QR code).
	CompactRequestPrefix = "KFREQ1:"
	maxArmoredChars      = 16384
	fileKeyInfo          = "keyforge license file v1"
	requestMacInfo       = "keyforge activation request v1"
	deactivationKind     = "keyforge-deactivation"
	licenseFileKind      = "license-file"
)

// armor wraps text as `-----BEGIN KEYFORGE <label>-----`, base64 in lines of 64, the END line.
func armor(label, text string) string {
	body := base64.StdEncoding.EncodeToString([]byte(text))
	var b strings.Builder
	b.WriteString("-----BEGIN KEYFORGE " + label + "-----\n")
	for len(body) > 64 {
		b.WriteString(body[:64] + "\n")
		body = body[64:]
	}
	b.WriteString(body + "\n-----END KEYFORGE " + label + "-----\n")
	return b.String()
}

func damaged(message string) *Error { return verificationError(CodeTokenInvalid, message) }

var (
	quoteMarkers = regexp.MustCompile(`(?m)^[ \t]*(?:>[ \t]*)+`)
	base64Body   = regexp.MustCompile(`^[A-Za-z0-9+/]+={0,2}$`)
)

// unarmor is the text armored under label (white space, mail quote markers and surrounding text ignored).
func unarmor(label, text string) (string, error) {
	what := strings.ToLower(label)
	if jsLength(text) > maxArmoredChars {
		return "", damaged(fmt.Sprintf("This is not a %s.", what))
	}
	broken := damaged(fmt.Sprintf("The %s is damaged: copy it again whole.", what))
	trimmed := strings.TrimFunc(text, isJSSpace)
	if label == "ACTIVATION REQUEST" && strings.HasPrefix(trimmed, CompactRequestPrefix) {
		return decodedText(trimmed[len(CompactRequestPrefix):], broken)
	}
	begin := "-----BEGIN KEYFORGE " + label + "-----"
	from := strings.Index(text, begin)
	to := -1
	if from >= 0 {
		if at := strings.Index(text[from:], "-----END KEYFORGE "+label+"-----"); at >= 0 {
			to = from + at
		}
	}
	if from < 0 || to < 0 || to < from+len(begin) {
		return "", damaged(fmt.Sprintf("This is not a whole %s: its BEGIN and END lines must both be there.", what))
	}
	body := quoteMarkers.ReplaceAllString(text[from+len(begin):to], "")
	body = strings.Map(func(r rune) rune {
		if isJSSpace(r) {
			return -1
		}
		return r
	}, body)
	if !base64Body.MatchString(body) {
		return "", broken
	}
	return decodedText(body, broken)
}

// decodedText is the UTF-8 text a base64 body encodes, or broken when it is not base64 or not UTF-8.
func decodedText(body string, broken error) (string, error) {
	raw, ok := atob(body)
	if !ok {
		return "", broken
	}
	decoded, ok := utf8Text(raw)
	if !ok {
		return "", broken
	}
	return decoded, nil
}

// openLicenseFile is the signed token inside a license file: as is, or decrypted (AES-256-GCM under
// HKDF-SHA256 of the license key and, for a device file, the device id).
func openLicenseFile(text, licenseKey, deviceID string) (string, error) {
	payload, err := unarmor("LICENSE FILE", text)
	if err != nil {
		return "", err
	}
	envelope, ok := jsonObjectOf([]byte(payload))
	if !ok {
		return "", damaged("The license file is damaged: its content is not readable.")
	}
	if v, _ := envelope["v"].(float64); v != 1 {
		return "", damaged("This license file is of an unknown version: update the SDK.")
	}
	enc, encPresent := envelope["enc"]
	if token, isString := envelope["token"].(string); encPresent && enc == nil && isString {
		return token, nil
	}
	salt, saltOK := envelope["salt"].(string)
	iv, ivOK := envelope["iv"].(string)
	ct, ctOK := envelope["ct"].(string)
	if enc != "A256GCM" || !saltOK || !ivOK || !ctOK {
		return "", damaged("The license file is damaged.")
	}
	if licenseKey == "" {
		return "", damaged("This license file is encrypted: pass the licenseKey that opens it.")
	}
	forDevice := envelope["device"] == true
	if forDevice && deviceID == "" {
		return "", verificationError(CodeWrongDevice, "This license file is encrypted for one device: pass its deviceId.")
	}
	info := fileKeyInfo
	if forDevice {
		info += "\n" + deviceID
	}
	suffix := ""
	if forDevice {
		suffix = " and device"
	}
	refused := damaged("The license file does not open with this license key" + suffix + ": another license or device, or the file was altered.")
	saltBytes, ok1 := atob(salt)
	ivBytes, ok2 := atob(iv)
	ctBytes, ok3 := atob(ct)
	if !ok1 || !ok2 || !ok3 || len(ivBytes) == 0 {
		return "", refused
	}
	block, err := aes.NewCipher(hkdfSHA256([]byte(normalizeKey(licenseKey)), saltBytes, info))
	if err != nil {
		return "", refused
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(ivBytes))
	if err != nil {
		return "", refused
	}
	plain, err := gcm.Open(nil, ivBytes, ctBytes, []byte(fileKeyInfo))
	if err != nil {
		return "", refused
	}
	token, ok := utf8Text(plain)
	if !ok {
		return "", refused
	}
	return token, nil
}

// deviceKey is the device key pair of an offline activation, as kept in the store (a JWK with its private part).
type deviceKey struct {
	JWK deviceJWK `json:"jwk"`
	// Pub is the public key x, base64url.
	Pub string `json:"pub"`
}

type deviceJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	D   string `json:"d"`
}

func newDeviceKey() (deviceKey, error) {
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return deviceKey{}, err
	}
	x := base64url(public)
	return deviceKey{JWK: deviceJWK{Kty: "OKP", Crv: "Ed25519", X: x, D: base64url(private.Seed())}, Pub: x}, nil
}

func (k deviceJWK) privateKey() (ed25519.PrivateKey, bool) {
	seed, err := base64.RawURLEncoding.DecodeString(k.D)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, false
	}
	return ed25519.NewKeyFromSeed(seed), true
}

// keyHint is the license key's public hint (ACME-…-WZ3P), as the server shows it: which license, not the key.
// An imported key's: its first and last 4 characters from 16 on, its last 2 below (ASCII: bytes are characters).
func keyHint(licenseKey string) string {
	key := normalizeKey(licenseKey)
	if !keyforgeKey.MatchString(key) {
		if len(key) >= 16 {
			return key[:4] + "…" + key[len(key)-4:]
		}
		if len(key) < 2 {
			return "…" + key
		}
		return "…" + key[len(key)-2:]
	}
	parts := strings.Split(key, "-")
	return parts[0] + "-…-" + parts[len(parts)-1]
}

// requestFields are an activation request's fields, in the order the MAC covers them.
type requestFields struct {
	Hint      string
	Device    string
	Name      *string
	Pub       string
	Challenge string
	Iat       int64
	Product   []string
	Version   *string
}

// requestMac is HMAC-SHA256 under HKDF-SHA256(license key, no salt, "keyforge activation request v1") over
// JSON.stringify(["keyforge activation request v1", hint, device, name, pub, challenge, iat, product, version]).
func requestMac(licenseKey string, f requestFields) string {
	key := hkdfSHA256([]byte(normalizeKey(licenseKey)), nil, requestMacInfo)
	message := "[" + strings.Join([]string{
		jsString(requestMacInfo), jsString(f.Hint), jsString(f.Device), jsNullableString(f.Name), jsString(f.Pub),
		jsString(f.Challenge), strconv.FormatInt(f.Iat, 10), jsStringArray(f.Product), jsNullableString(f.Version),
	}, ",") + "]"
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(message))
	return base64url(mac.Sum(nil))
}

// encodeRequest is the activation request's armored text and its one-line (QR) form.
func encodeRequest(f requestFields, mac string) (request, compact string) {
	json := `{"v":1,"hint":` + jsString(f.Hint) + `,"device":` + jsString(f.Device) + `,"name":` + jsNullableString(f.Name) +
		`,"pub":` + jsString(f.Pub) + `,"challenge":` + jsString(f.Challenge) + `,"iat":` + strconv.FormatInt(f.Iat, 10) +
		`,"product":` + jsStringArray(f.Product) + `,"version":` + jsNullableString(f.Version) + `,"mac":` + jsString(mac) + `}`
	return armor("ACTIVATION REQUEST", json), CompactRequestPrefix + base64url([]byte(json))
}

// signDeactivationProof is a compact JWS (EdDSA) by the device's private key naming its activation, license and
// device, armored; jti is a random id that makes each proof unique.
func signDeactivationProof(private ed25519.PrivateKey, activation, license, device string, iat int64, jti string) string {
	header := base64url([]byte(`{"alg":"EdDSA"}`))
	payload := base64url([]byte(`{"kind":` + jsString(deactivationKind) + `,"activation":` + jsString(activation) + `,"license":` +
		jsString(license) + `,"device":` + jsString(device) + `,"iat":` + strconv.FormatInt(iat, 10) + `,"jti":` + jsString(jti) + `}`))
	signature := ed25519.Sign(private, []byte(header+"."+payload))
	return armor("DEACTIVATION PROOF", header+"."+payload+"."+base64url(signature))
}
