package keyforge

// Small helpers that reproduce, byte for byte, what the server and the TypeScript SDK compute with JavaScript
// (JSON.stringify, atob, String.prototype.toUpperCase, the \s class), so MACs and digests agree.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

func base64url(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

// randomBytes is n bytes from the operating system's CSPRNG.
func randomBytes(n int) []byte {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic("keyforge: the operating system's random source failed: " + err.Error())
	}
	return buf
}

// randomToken is n random bytes, base64url-encoded.
func randomToken(n int) string { return base64url(randomBytes(n)) }

func sha256Hex(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// isJSSpace is JavaScript's \s: Unicode white space, line terminators and the BOM.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// keyforgeKey is Keyforge's own key format, PREFIX-XXXX-XXXX-XXXX-XXXX.
var keyforgeKey = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,11}(-[ABCDEFGHJKMNPQRSTVWXYZ23456789]{4}){4}$`)

// normalizeKey is a license key as the server compares it: a Keyforge key with its white space removed, upper case;
// any other key (one imported from another licensing service) exactly as given, only the white space around it trimmed.
func normalizeKey(licenseKey string) string {
	var b strings.Builder
	for _, r := range licenseKey {
		if !isJSSpace(r) {
			b.WriteRune(r)
		}
	}
	if keyforge := strings.ToUpper(b.String()); keyforgeKey.MatchString(keyforge) {
		return keyforge
	}
	return strings.TrimFunc(licenseKey, isJSSpace)
}

// jsLength is the length JavaScript reports for s (UTF-16 code units).
func jsLength(s string) int {
	n := 0
	for _, r := range s {
		n += len(utf16.Encode([]rune{r}))
	}
	return n
}

// atob decodes standard or URL-safe base64 as the TypeScript SDK's fromBase64 does (the forgiving-base64 rules
// of atob: padding optional, but when present it must be right).
func atob(text string) ([]byte, bool) {
	text = strings.NewReplacer("-", "+", "_", "/").Replace(text)
	text = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r' {
			return -1
		}
		return r
	}, text)
	if len(text)%4 == 0 {
		if strings.HasSuffix(text, "==") {
			text = text[:len(text)-2]
		} else if strings.HasSuffix(text, "=") {
			text = text[:len(text)-1]
		}
	}
	if len(text)%4 == 1 || strings.ContainsRune(text, '=') {
		return nil, false
	}
	out, err := base64.RawStdEncoding.DecodeString(text)
	return out, err == nil
}

// utf8Text decodes as `new TextDecoder('utf-8', { fatal: true })`: invalid UTF-8 fails, a leading BOM is dropped.
func utf8Text(data []byte) (string, bool) {
	if !utf8.Valid(data) {
		return "", false
	}
	return strings.TrimPrefix(string(data), "\ufeff"), true
}

// jsString is JSON.stringify of a string.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteString(strconv.FormatInt(int64(r)>>4, 16))
				b.WriteString(strconv.FormatInt(int64(r)&15, 16))
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsNullableString is JSON.stringify of a string or null.
func jsNullableString(s *string) string {
	if s == nil {
		return "null"
	}
	return jsString(*s)
}

func jsStringArray(items []string) string {
	if items == nil {
		return "null"
	}
	parts := make([]string, len(items))
	for i, item := range items {
		parts[i] = jsString(item)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// hkdfSHA256 is HKDF-SHA256 (RFC 5869) with a 32-byte output: one block of the expand step.
func hkdfSHA256(ikm, salt []byte, info string) []byte {
	if len(salt) == 0 {
		salt = make([]byte, sha256.Size)
	}
	extract := hmac.New(sha256.New, salt)
	extract.Write(ikm)
	prk := extract.Sum(nil)
	expand := hmac.New(sha256.New, prk)
	expand.Write([]byte(info))
	expand.Write([]byte{1})
	return expand.Sum(nil)
}
