// Activate this installation, validate the license key and verify the signed offline token, with Go's standard
// library only (Go 1.19 or later).
//
//	KEYFORGE_URL  the server's public URL, e.g. https://licenses.example.com
//	LICENSE_KEY   the key shown once when the license was created (never put it in a URL)
//	DEVICE_ID     optional: this machine's identifier (default: its hostname)
//	PRODUCT       optional: this application's product name; the server then refuses a key of another product
//	              (ProductMismatch) before it takes a seat
//
// Exit status: 0 licensed, 1 refused (the errorCode is printed), 2 the server could not be asked.
//
// Build, then run the binary (in this directory, beside go.mod):
//
//	go build -o keyforge-license . && KEYFORGE_URL=… LICENSE_KEY=… ./keyforge-license; echo "exit status $?"
//
// Not `go run`: it reports "exit status N" itself and exits with status 1 whatever the program's status, so a caller
// could not tell a refusal (1) from a server it could not ask (2).
package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

var client = &http.Client{Timeout: 10 * time.Second}

type answer struct {
	IsValid              bool     `json:"isValid"`
	ErrorCode            string   `json:"errorCode"`
	Message              string   `json:"message"`
	ProductName          string   `json:"productName"`
	RemainingActivations int      `json:"remainingActivations"`
	ExpiresAt            *string  `json:"expiresAt"`
	Features             []string `json:"features"`
	OfflineCacheToken    string   `json:"offlineCacheToken"`
}

// call GETs (body nil) or POSTs JSON and decodes the answer; an HTTP error (429: honour Retry-After; 5xx) or no
// answer exits with status 2.
func call(url string, body any, into any) {
	var response *http.Response
	var err error
	if body == nil {
		response, err = client.Get(url)
	} else {
		encoded, _ := json.Marshal(body)
		response, err = client.Post(url, "application/json", bytes.NewReader(encoded))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer response.Body.Close()
	text, _ := io.ReadAll(response.Body)
	if response.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "%s: HTTP %d %s\n", url, response.StatusCode, text)
		os.Exit(2)
	}
	if err := json.Unmarshal(text, into); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func refuse(step, code, message string) {
	fmt.Printf("%s: refused %s: %s\n", step, code, message)
	os.Exit(1)
}

type claims struct {
	Product         string `json:"product"`
	Device          string `json:"device"`
	DeviceActivated bool   `json:"deviceActivated"`
	Exp             int64  `json:"exp"`
}

// verifyToken checks the EdDSA (Ed25519) JWT against a key of the server's JWKS (fetch them once, or ship them with
// the application) and returns its claims; offline, trust only a token that verifies and has not expired.
func verifyToken(baseURL, token string) (*claims, string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, "", fmt.Errorf("not a JWT")
	}
	var header struct{ Alg, Kid string }
	if raw, err := base64.RawURLEncoding.DecodeString(parts[0]); err != nil || json.Unmarshal(raw, &header) != nil || header.Alg != "EdDSA" {
		return nil, "", fmt.Errorf("not an EdDSA token")
	}
	var jwks struct {
		Keys []struct{ Kid, Crv, X string } `json:"keys"`
	}
	call(baseURL+"/.well-known/jwks.json", nil, &jwks)
	for _, key := range jwks.Keys {
		if key.Kid != header.Kid || key.Crv != "Ed25519" {
			continue
		}
		public, err := base64.RawURLEncoding.DecodeString(key.X)
		signature, err2 := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil || err2 != nil || len(public) != ed25519.PublicKeySize {
			return nil, "", fmt.Errorf("malformed key or signature")
		}
		if !ed25519.Verify(ed25519.PublicKey(public), []byte(parts[0]+"."+parts[1]), signature) {
			return nil, "", fmt.Errorf("the signature does not verify")
		}
		var c claims
		if raw, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(raw, &c) != nil {
			return nil, "", fmt.Errorf("malformed claims")
		}
		if time.Now().Unix() >= c.Exp {
			return nil, "", fmt.Errorf("expired")
		}
		return &c, key.Kid, nil
	}
	return nil, "", fmt.Errorf("unknown signing key %s", header.Kid)
}

func main() {
	baseURL := strings.TrimSuffix(os.Getenv("KEYFORGE_URL"), "/")
	licenseKey := os.Getenv("LICENSE_KEY")
	if baseURL == "" || licenseKey == "" {
		fmt.Fprintln(os.Stderr, "set KEYFORGE_URL and LICENSE_KEY")
		os.Exit(2)
	}
	api := baseURL + "/api/v1"
	deviceID := os.Getenv("DEVICE_ID")
	if deviceID == "" {
		deviceID, _ = os.Hostname()
	}
	product := os.Getenv("PRODUCT")

	// 1. A fresh single-use nonce, then the activation: takes a seat, or reuses this device's seat. With "product", a
	// key of another product (not a bundle containing it) is refused with ProductMismatch and no seat is taken.
	var nonce struct{ Nonce string }
	call(api+"/nonce", nil, &nonce)
	activation := map[string]string{"licenseKey": licenseKey, "nonce": nonce.Nonce, "deviceId": deviceID}
	if product != "" {
		activation["product"] = product
	}
	var activated answer
	call(api+"/activate", activation, &activated)
	if !activated.IsValid {
		refuse("activate", activated.ErrorCode, activated.Message)
	}
	fmt.Printf("activate: ok, %s, %d activation(s) left\n", activated.ProductName, activated.RemainingActivations)

	// 2. On every launch: validate. requireActivation refuses a device whose activation was removed
	// (DeviceNotActivated). HTTP 200 can carry a refusal: grant access only when isValid is true.
	var result answer
	call(api+"/validate", map[string]any{"licenseKey": licenseKey, "deviceId": deviceID, "requireActivation": true}, &result)
	if !result.IsValid {
		refuse("validate", result.ErrorCode, result.Message)
	}
	expires := "never"
	if result.ExpiresAt != nil {
		expires = *result.ExpiresAt
	}
	fmt.Printf("validate: ok, %s, expires %s, features [%s]\n", result.ProductName, expires, strings.Join(result.Features, ", "))

	// 3. The offline token: keep it for launches without a network, and trust it only once it verifies.
	c, kid, err := verifyToken(baseURL, result.OfflineCacheToken)
	if err != nil {
		refuse("token", "TokenInvalid", err.Error())
	}
	if c.Device != deviceID || !c.DeviceActivated {
		refuse("token", "TokenInvalid", "not for this device")
	}
	fmt.Printf("token: signature verified (key %s), valid offline until %s\n", kid, time.Unix(c.Exp, 0).UTC().Format(time.RFC3339))
}
