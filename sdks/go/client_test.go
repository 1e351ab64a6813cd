package keyforge

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// licensingServer fakes the public API's licensing routes with a real signer, for the client's own flows
// (the real server is exercised by the conformance scenarios).
type licensingServer struct {
	*fakeServer
	signer    *signer
	mu        sync.Mutex
	jwks      []map[string]any
	revoked   bool
	graceDays int
	nonces    map[string]bool
	lastBody  map[string]any
}

func newLicensingServer(t *testing.T) *licensingServer {
	s := &licensingServer{fakeServer: newFakeServer(t), signer: newSigner(t, "key-1"), graceDays: 7, nonces: map[string]bool{}}
	s.jwks = []map[string]any{s.signer.jwk()}
	s.route("/.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"keys": s.jwks})
	})
	s.route("/api/v1/nonce", func(w http.ResponseWriter, r *http.Request) {
		nonce := randomToken(16)
		s.mu.Lock()
		s.nonces[nonce] = true
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"nonce": nonce, "expiresAt": "x"})
	})
	s.route("/api/v1/activate", func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lastBody = body
		nonce, _ := body["nonce"].(string)
		if !s.nonces[nonce] {
			writeJSON(w, 422, map[string]any{"error": map[string]any{"code": "NonceInvalid", "message": "used", "requestId": "r"}})
			return
		}
		delete(s.nonces, nonce)
		if body["product"] != "Acme Studio" {
			writeJSON(w, 200, map[string]any{"isValid": false, "errorCode": "ProductMismatch", "message": "other product"})
			return
		}
		writeJSON(w, 200, map[string]any{"isValid": true, "productName": "Acme Studio", "remainingActivations": 2, "expiresAt": nil, "features": []string{"export"}, "isTrial": false, "nodeLocked": false, "offlineGraceDays": 7, "vendorWarning": nil})
	})
	s.route("/api/v1/validate", func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.revoked {
			writeJSON(w, 200, map[string]any{"isValid": false, "errorCode": "LicenseRevoked", "message": "revoked", "offlineCacheToken": nil})
			return
		}
		claims := entitlementClaims(time.Now(), s.graceDays)
		if challenge, ok := body["challenge"].(string); ok {
			claims["nonce"] = challenge
		}
		if device, ok := body["deviceId"].(string); ok {
			claims["device"] = device
			if body["requireActivation"] == true {
				claims["deviceActivated"] = true
			}
		}
		writeJSON(w, 200, map[string]any{"isValid": true, "errorCode": nil, "productName": "Acme Studio", "features": []string{"export"}, "offlineCacheToken": s.signer.sign(t, claims)})
	})
	return s
}

func TestActivateFetchesANonceAndSendsTheProduct(t *testing.T) {
	s := newLicensingServer(t)
	client := testClient(t, s.fakeServer, nil)
	activation, err := client.Activate(context.Background(), ActivateOptions{LicenseKey: "ACME-1", DeviceName: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	installation, _ := client.DeviceID()
	if activation.RemainingActivations != 2 || activation.DeviceID != installation || len(installation) != 64 {
		t.Fatalf("%+v (installation %s)", activation, installation)
	}
	if s.lastBody["product"] != "Acme Studio" || s.lastBody["deviceName"] != "laptop" || s.lastBody["deviceId"] != installation {
		t.Fatalf("activate body %v", s.lastBody)
	}
	if s.count("/api/v1/nonce") != 1 {
		t.Fatal("one nonce per attempt")
	}
	other, _ := New(Config{ServerURL: s.URL, Products: []string{"Other App"}, Issuer: testIssuer})
	_, err = other.Activate(context.Background(), ActivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	if !errors.Is(err, ErrProductMismatch) {
		t.Fatalf("want ProductMismatch, got %v", err)
	}
}

func TestValidateStoresTheTokenAndFallsBackOffline(t *testing.T) {
	s := newLicensingServer(t)
	dir := t.TempDir()
	store, err := NewFileStore(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	client := testClient(t, s.fakeServer, func(c *Config) { c.Store = store })
	validation, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1", DeviceID: "dev-1", RequireActivation: true})
	if err != nil {
		t.Fatal(err)
	}
	if validation.Source != "online" || validation.Entitlement.Device != "dev-1" || !validation.Entitlement.DeviceActivated || validation.Entitlement.Features[0] != "export" {
		t.Fatalf("%+v", validation.Entitlement)
	}
	// The store: a 0700 directory of 0600 files, none holding the license key.
	info, _ := os.Stat(store.Dir())
	if info.Mode().Perm() != 0o700 {
		t.Fatalf("store directory mode %v", info.Mode().Perm())
	}
	entries, _ := os.ReadDir(store.Dir())
	if len(entries) == 0 {
		t.Fatal("nothing stored")
	}
	for _, entry := range entries {
		info, _ := entry.Info()
		data, _ := os.ReadFile(filepath.Join(store.Dir(), entry.Name()))
		if info.Mode().Perm() != 0o600 || strings.Contains(string(data), "ACME-1") || strings.Contains(entry.Name(), "ACME") {
			t.Fatalf("%s: mode %v", entry.Name(), info.Mode().Perm())
		}
	}

	// The server goes away: offline fallback answers from the stored token, also in a new process (new client).
	s.Close()
	restarted := testClient(t, s.fakeServer, func(c *Config) { c.Store = store; c.Retry.Attempts = 1 })
	offline, err := restarted.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1", DeviceID: "dev-1", RequireActivation: true, OfflineFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	if offline.Source != "offline" || ErrorCode(offline.OnlineError) != CodeNetworkError {
		t.Fatalf("source %s, online error %v", offline.Source, offline.OnlineError)
	}
	_, err = restarted.ValidateOffline(ValidateOfflineOptions{LicenseKey: "ACME-1", DeviceID: "other-device"})
	wantCode(t, err, CodeWrongDevice)
	_, err = restarted.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeNetworkError)
}

func TestValidateOfflineChecksTheClock(t *testing.T) {
	s := newLicensingServer(t)
	now := time.Now()
	clock := func() time.Time { return now }
	client := testClient(t, s.fakeServer, func(c *Config) { c.Clock = func() time.Time { return clock() } })
	if _, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(3 * 24 * time.Hour)
	if _, err := client.ValidateOffline(ValidateOfflineOptions{LicenseKey: "ACME-1"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(-2 * 24 * time.Hour) // set back below a time already seen
	_, err := client.ValidateOffline(ValidateOfflineOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeClockRollback)
	now = now.Add(10 * 24 * time.Hour)
	_, err = client.ValidateOffline(ValidateOfflineOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeTokenExpired)
	_, err = client.ValidateOffline(ValidateOfflineOptions{LicenseKey: "ACME-OTHER"})
	wantCode(t, err, CodeTokenMissing)
}

func TestRejectionDeletesTheStoredToken(t *testing.T) {
	s := newLicensingServer(t)
	client := testClient(t, s.fakeServer, nil)
	if _, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.revoked = true
	s.mu.Unlock()
	_, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1", OfflineFallback: true})
	wantCode(t, err, CodeLicenseRevoked)
	_, err = client.ValidateOffline(ValidateOfflineOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeTokenMissing)
}

func TestReplayedValidateAnswerIsRefused(t *testing.T) {
	s := newLicensingServer(t)
	var captured []byte
	s.route("/api/v1/validate", func(w http.ResponseWriter, r *http.Request) {
		if captured == nil {
			claims := entitlementClaims(time.Now(), 7)
			claims["nonce"] = readBody(r)["challenge"]
			captured, _ = json.Marshal(map[string]any{"isValid": true, "errorCode": nil, "offlineCacheToken": s.signer.sign(t, claims)})
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(captured)
	})
	client := testClient(t, s.fakeServer, nil)
	if _, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"}); err != nil {
		t.Fatal(err)
	}
	_, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeChallengeMismatch)
}

func TestKeyRotationRefetchesTheJWKSOnce(t *testing.T) {
	s := newLicensingServer(t)
	client := testClient(t, s.fakeServer, nil)
	if _, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"}); err != nil {
		t.Fatal(err)
	}
	if n := s.count("/.well-known/jwks.json"); n != 1 {
		t.Fatalf("the JWKS was fetched %d times, want once (cached)", n)
	}
	// The server rotates: a new key signs; the first token naming it refetches the JWKS.
	rotated := newSigner(t, "key-2")
	s.mu.Lock()
	s.jwks = []map[string]any{rotated.jwk(), s.signer.jwk()}
	s.signer = rotated
	s.mu.Unlock()
	validation, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
	if err != nil {
		t.Fatal(err)
	}
	if validation.Entitlement.KeyID != "key-2" || s.count("/.well-known/jwks.json") != 2 {
		t.Fatalf("kid %s after %d JWKS fetches", validation.Entitlement.KeyID, s.count("/.well-known/jwks.json"))
	}
	// A kid the server never published: one refetch, then refused without hammering the server.
	rogue := newSigner(t, "rogue")
	s.mu.Lock()
	s.signer = rogue
	s.mu.Unlock()
	for i := 0; i < 3; i++ {
		_, err = client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
		wantCode(t, err, CodeKeyUnknown)
	}
	if n := s.count("/.well-known/jwks.json"); n != 3 {
		t.Fatalf("the JWKS was fetched %d times, want 3 (one refetch for the unknown kid)", n)
	}
}

func TestHostileJWKSIsNotTrusted(t *testing.T) {
	s := newLicensingServer(t)
	x := s.signer.jwk()["x"]
	s.mu.Lock()
	s.jwks = []map[string]any{
		{"kty": "RSA", "kid": "key-1", "n": "AQAB", "e": "AQAB"},
		{"kty": "OKP", "crv": "X25519", "kid": "key-1", "x": x},
		{"kty": "OKP", "crv": "Ed25519", "kid": "key-1", "x": x, "alg": "ES256"},
		{"kty": "OKP", "crv": "Ed25519", "kid": "key-1"},
		{"kty": "OKP", "crv": "Ed25519", "kid": "key-1", "x": 12},
	}
	s.mu.Unlock()
	client := testClient(t, s.fakeServer, nil)
	_, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeKeyUnknown)
	// A JWKS entry of the right type whose x is not a 32-byte key: refused, not a crash.
	s.mu.Lock()
	s.jwks = []map[string]any{{"kty": "OKP", "crv": "Ed25519", "kid": "key-1", "x": "AAAA"}}
	s.mu.Unlock()
	client = testClient(t, s.fakeServer, nil)
	_, err = client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeTokenInvalid)
	// Not JSON at all.
	s.route("/.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("not json")) })
	client = testClient(t, s.fakeServer, nil)
	_, err = client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeKeyUnknown)
}

func TestPinnedKeysAreTheOnlyOnesTrusted(t *testing.T) {
	s := newLicensingServer(t)
	pinned := &JWKS{Keys: []JWK{{Kty: "OKP", Crv: "Ed25519", X: base64url(s.signer.private.Public().(ed25519.PublicKey)), Kid: "key-1", Alg: "EdDSA"}}}
	client := testClient(t, s.fakeServer, func(c *Config) { c.JWKS = pinned })
	if _, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"}); err != nil {
		t.Fatal(err)
	}
	if s.count("/.well-known/jwks.json") != 0 {
		t.Fatal("pinned keys must never fetch the JWKS")
	}
	s.mu.Lock()
	s.signer = newSigner(t, "key-2")
	s.mu.Unlock()
	_, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: "ACME-1"})
	wantCode(t, err, CodeKeyUnknown)
	if _, err := New(Config{ServerURL: s.URL, Product: "Acme Studio", JWKS: &JWKS{Keys: []JWK{{Kty: "RSA", Kid: "k"}}}}); err == nil {
		t.Fatal("a pinned JWKS without an Ed25519 key must be refused")
	}
}

func TestConfigIsChecked(t *testing.T) {
	for _, bad := range []Config{
		{ServerURL: "licenses.example.com", Product: "A"},
		{ServerURL: "ftp://licenses.example.com", Product: "A"},
		{ServerURL: "https://user:pw@licenses.example.com", Product: "A"},
		{ServerURL: "https://licenses.example.com?x=1", Product: "A"},
		{ServerURL: "https://licenses.example.com"},
	} {
		if _, err := New(bad); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
	client, err := New(Config{ServerURL: "https://licenses.example.com/api/v1/", Product: "A"})
	if err != nil || client.ServerURL != "https://licenses.example.com" || client.Issuer != "https://licenses.example.com" {
		t.Fatalf("%v %+v", err, client)
	}
}

func TestFileStoreTightensAnExistingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(dir)
	if info.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v", info.Mode().Perm())
	}
	if err := store.Set("jwks:https://x/y", "v1"); err != nil {
		t.Fatal(err)
	}
	if err := store.Set("jwks:https://x/y", "v2"); err != nil {
		t.Fatal(err)
	}
	value, ok, err := store.Get("jwks:https://x/y")
	if err != nil || !ok || value != "v2" {
		t.Fatalf("%q %v %v", value, ok, err)
	}
	if err := store.Delete("jwks:https://x/y"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := store.Get("jwks:https://x/y"); ok {
		t.Fatal("deleted value still there")
	}
}

func TestMachineFingerprint(t *testing.T) {
	id, err := MachineID()
	if err != nil {
		if ErrorCode(err) != CodeMachineIDUnavailable {
			t.Fatalf("%v", err)
		}
		t.Skip("this machine has no machine id (a minimal container)")
	}
	a, _ := MachineFingerprint("Acme Studio")
	b, _ := MachineFingerprint("Acme Studio")
	c, _ := MachineFingerprint("Other App")
	if a != b || a == c || len(a) != 64 || a != sha256Hex("Acme Studio\n"+id) {
		t.Fatalf("fingerprints %s %s %s", a, b, c)
	}
}

func TestVerifyOfflineTokenWithoutAClient(t *testing.T) {
	server := newSigner(t, "key-1")
	jwks := &JWKS{Keys: []JWK{{Kty: "OKP", Crv: "Ed25519", X: server.jwk()["x"].(string), Kid: "key-1"}}}
	now := time.Now()
	claims := entitlementClaims(now, 7)
	claims["device"] = "dev-1"
	token := server.sign(t, claims)
	entitlement, err := VerifyOfflineToken(token, VerifyTokenOptions{JWKS: jwks, Issuer: testIssuer, Products: []string{"Acme Studio"}, DeviceID: "dev-1"})
	if err != nil || entitlement.LicenseID != "lic-1" || *entitlement.OfflineGraceDays != 7 {
		t.Fatalf("%+v %v", entitlement, err)
	}
	_, err = VerifyOfflineToken(token, VerifyTokenOptions{JWKS: jwks, Issuer: testIssuer, Products: []string{"Other App"}})
	wantCode(t, err, CodeWrongProduct)
	_, err = VerifyOfflineToken(token, VerifyTokenOptions{JWKS: jwks, Issuer: testIssuer, Products: []string{"Acme Studio"}, Now: now.Add(8 * 24 * time.Hour)})
	wantCode(t, err, CodeTokenExpired)
	_, err = VerifyOfflineToken(token, VerifyTokenOptions{JWKS: jwks, Issuer: "https://elsewhere", Products: []string{"Acme Studio"}})
	wantCode(t, err, CodeWrongIssuer)
}

func TestClientIsSafeForConcurrentUse(t *testing.T) {
	s := newLicensingServer(t)
	client := testClient(t, s.fakeServer, func(c *Config) { c.Store = mustFileStore(t) })
	var wg sync.WaitGroup
	failures := make(chan error, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := []string{"ACME-1", "ACME-2"}[i%2]
			if _, err := client.Validate(context.Background(), ValidateOptions{LicenseKey: key}); err != nil {
				failures <- err
				return
			}
			if _, err := client.ValidateOffline(ValidateOfflineOptions{LicenseKey: key}); err != nil {
				failures <- err
			}
			if _, err := client.DeviceID(); err != nil {
				failures <- err
			}
		}(i)
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Fatal(err)
	}
	if n := s.count("/.well-known/jwks.json"); n != 1 {
		t.Fatalf("concurrent validations fetched the JWKS %d times, want once", n)
	}
}

func TestDeactivateRetryFindingTheSeatFreedSucceeds(t *testing.T) {
	f := newFakeServer(t)
	release := make(chan struct{})
	defer close(release)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		if f.count("/api/v1/deactivate") == 1 {
			// The first answer is lost: the seat was freed, the client never heard.
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		writeJSON(w, 200, map[string]any{"deactivated": false, "errorCode": "ActivationNotFound", "message": "none"})
	})
	client := testClient(t, f, func(c *Config) { c.Timeout = 150 * time.Millisecond })
	result, err := client.Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	if err != nil || result.RemainingActivations != nil {
		t.Fatalf("%+v %v", result, err)
	}
	// Without a lost answer, ActivationNotFound is the answer.
	_, err = client.Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	wantCode(t, err, CodeActivationNotFound)
}

func TestFetchLicenseFileInstallsIt(t *testing.T) {
	v := loadVectors(t)
	var plain string
	for _, vector := range v.LicenseFiles {
		if vector.Name == "device-file" {
			plain = vector.File
		}
	}
	if plain == "" {
		t.Fatal("no device-file vector")
	}
	f := newFakeServer(t)
	var asked map[string]any
	f.route("/api/v1/license-file", func(w http.ResponseWriter, r *http.Request) {
		asked = readBody(r)
		writeJSON(w, 200, map[string]any{"isValid": true, "licenseFile": plain, "issuedAt": "x", "expiresAt": "y", "deviceId": "conformance-device-1", "encrypted": false})
	})
	jwks, _ := ParseJWKS(v.JWKS["rotated"])
	client := testClient(t, f, func(c *Config) {
		c.Issuer, c.JWKS, c.Clock = v.Issuer, jwks, func() time.Time { return time.Unix(1780315260, 0) }
	})
	fetched, err := client.FetchLicenseFile(context.Background(), FetchLicenseFileOptions{LicenseKey: "ACME-7KQ2-M9XH-4TRB-WZ3P", DeviceID: "conformance-device-1"})
	if err != nil {
		t.Fatal(err)
	}
	if fetched.LicenseFile != plain || fetched.Entitlement.Claims["kind"] != "license-file" || asked["deviceId"] != "conformance-device-1" || asked["encrypt"] != nil {
		t.Fatalf("%+v, asked %v", fetched, asked)
	}
	offline, err := client.ValidateOffline(ValidateOfflineOptions{LicenseKey: "ACME-7KQ2-M9XH-4TRB-WZ3P", DeviceID: "conformance-device-1"})
	if err != nil || offline.Source != "offline" {
		t.Fatalf("%+v %v", offline, err)
	}
	f.route("/api/v1/license-file", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"isValid": false, "errorCode": "DeviceNotActivated", "message": "no activation"})
	})
	_, err = client.FetchLicenseFile(context.Background(), FetchLicenseFileOptions{LicenseKey: "ACME-7KQ2-M9XH-4TRB-WZ3P", DeviceID: "other"})
	wantCode(t, err, CodeDeviceNotActivated)
}
