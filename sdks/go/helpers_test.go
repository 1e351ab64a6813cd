package keyforge

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	mathrand "math/rand"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// signer signs tokens as the server does (EdDSA, kid, typ JWT).
type signer struct {
	kid     string
	private ed25519.PrivateKey
}

func newSigner(t testing.TB, kid string) *signer {
	t.Helper()
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &signer{kid: kid, private: private}
}

func (s *signer) jwk() map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "x": base64url(s.private.Public().(ed25519.PublicKey)), "kid": s.kid, "alg": "EdDSA", "use": "sig"}
}

func (s *signer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	header, _ := json.Marshal(map[string]any{"alg": "EdDSA", "kid": s.kid, "typ": "JWT"})
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	input := base64url(header) + "." + base64url(payload)
	return input + "." + base64url(ed25519.Sign(s.private, []byte(input)))
}

const testIssuer = "https://licenses.example.test"

// entitlementClaims are the claims of a valid token for "Acme Studio", signed now, for `grace` days.
func entitlementClaims(now time.Time, graceDays int) map[string]any {
	return map[string]any{
		"iss": testIssuer, "sub": "lic-1", "tenant": "t-1", "productId": "p-1", "product": "Acme Studio", "bundleProducts": nil,
		"features": []string{"export"}, "licenseExpiresAt": nil, "isTrial": false, "nodeLocked": false, "offlineGraceDays": graceDays,
		"maintenanceExpiresAt": nil, "minVersion": nil, "maxVersion": nil, "iat": now.Unix(), "exp": now.Add(time.Duration(graceDays) * 24 * time.Hour).Unix(),
	}
}

// fakeServer is an httptest server whose routes the test sets; it counts requests per path.
type fakeServer struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	counts map[string]int
}

func newFakeServer(t testing.TB) *fakeServer {
	f := &fakeServer{routes: map[string]http.HandlerFunc{}, counts: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.counts[r.URL.Path]++
		handler := f.routes[r.URL.Path]
		f.mu.Unlock()
		if handler == nil {
			http.NotFound(w, r)
			return
		}
		handler(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) route(path string, handler http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[path] = handler
}

func (f *fakeServer) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[path]
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func readBody(r *http.Request) map[string]any {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	return body
}

// fastRetry keeps the tests' backoff short (the policy's shape is what is tested, not its durations).
var fastRetry = RetryPolicy{Attempts: 4, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond, MaxRetryAfter: 2 * time.Second}

func testClient(t testing.TB, f *fakeServer, change func(*Config)) *Client {
	t.Helper()
	config := Config{ServerURL: f.URL, Product: "Acme Studio", Issuer: testIssuer, Retry: fastRetry, Timeout: 2 * time.Second}
	if change != nil {
		change(&config)
	}
	client, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func wantCode(t testing.TB, err error, code string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("expected %s, got no error", code)
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("expected a *keyforge.Error %s, got %T: %v", code, err, err)
	}
	if e.Code != code {
		t.Fatalf("expected %s, got %s: %v", code, e.Code, err)
	}
	return e
}

func newTestRand() *mathrand.Rand { return mathrand.New(mathrand.NewSource(1)) }
