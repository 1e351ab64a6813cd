package keyforge

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func floatingServer(t *testing.T) (*fakeServer, *sync.Mutex, *[]string) {
	f := newFakeServer(t)
	var mu sync.Mutex
	var events []string
	record := func(event string) {
		mu.Lock()
		events = append(events, event)
		mu.Unlock()
	}
	f.route("/api/v1/float/checkout", func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		record("checkout:" + body["product"].(string))
		writeJSON(w, 200, map[string]any{"isValid": true, "sessionToken": "kfs_secret", "sessionId": "s-1", "leaseExpiresAt": time.Now().Add(time.Minute).Format(time.RFC3339), "leaseSeconds": 300, "heartbeatIntervalSeconds": 60, "floatingSeats": 2, "remainingFloatingSeats": 1, "productName": "Acme Studio", "expiresAt": nil, "features": []string{}, "vendorWarning": nil})
	})
	f.route("/api/v1/float/heartbeat", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer kfs_secret" {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"code": "InvalidRequest", "message": "no token", "requestId": "r"}})
			return
		}
		record("heartbeat")
		writeJSON(w, 200, map[string]any{"isValid": true, "sessionId": "s-1", "leaseExpiresAt": time.Now().Add(time.Minute).Format(time.RFC3339), "leaseSeconds": 300, "heartbeatIntervalSeconds": 60})
	})
	f.route("/api/v1/float/checkin", func(w http.ResponseWriter, r *http.Request) {
		record("checkin:" + r.Header.Get("Authorization"))
		writeJSON(w, 200, map[string]any{"checkedIn": true, "sessionId": "s-1", "endedAt": "now", "endReason": "checkin"})
	})
	return f, &mu, &events
}

func TestFloatingSessionHeartbeatsUntilClosed(t *testing.T) {
	f, mu, events := floatingServer(t)
	client := testClient(t, f, nil)
	session, err := client.Checkout(context.Background(), CheckoutOptions{LicenseKey: "ACME-1", HeartbeatInterval: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if session.RemainingFloatingSeats != 1 || session.HeartbeatInterval() != 30*time.Millisecond || session.State() != SessionActive {
		t.Fatalf("%+v", session)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.count("/api/v1/float/heartbeat") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if f.count("/api/v1/float/heartbeat") < 3 {
		t.Fatal("the session did not heartbeat by itself")
	}
	if err := session.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-session.Done():
	default:
		t.Fatal("Done is not closed after Close")
	}
	beats := f.count("/api/v1/float/heartbeat")
	time.Sleep(100 * time.Millisecond)
	if f.count("/api/v1/float/heartbeat") != beats {
		t.Fatal("heartbeats went on after checkin")
	}
	if err := session.Close(); err != nil || f.count("/api/v1/float/checkin") != 1 {
		t.Fatalf("a second Close must not check in again: %v, %d", err, f.count("/api/v1/float/checkin"))
	}
	mu.Lock()
	defer mu.Unlock()
	if (*events)[0] != "checkout:Acme Studio" || (*events)[len(*events)-1] != "checkin:Bearer kfs_secret" {
		t.Fatalf("events %v", *events)
	}
	if err := session.Heartbeat(); ErrorCode(err) != CodeSessionExpired {
		t.Fatalf("a heartbeat after checkin: %v", err)
	}
}

func TestFloatingSessionLostOnRejection(t *testing.T) {
	f, _, _ := floatingServer(t)
	f.route("/api/v1/float/heartbeat", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"isValid": false, "errorCode": "SessionExpired", "message": "replaced"})
	})
	lost := make(chan error, 1)
	session, err := testClient(t, f, nil).Checkout(context.Background(), CheckoutOptions{LicenseKey: "ACME-1", HeartbeatInterval: 20 * time.Millisecond, OnLost: func(err error) { lost <- err }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		wantCode(t, err, CodeSessionExpired)
	case <-time.After(10 * time.Second):
		t.Fatal("OnLost was not called")
	}
	<-session.Done()
	if session.State() != SessionLost || ErrorCode(session.Err()) != CodeSessionExpired {
		t.Fatalf("%s %v", session.State(), session.Err())
	}
}

func TestFloatingSessionHeartbeatRetriesTransientFailures(t *testing.T) {
	f, _, _ := floatingServer(t)
	var failures int
	var mu sync.Mutex
	f.route("/api/v1/float/heartbeat", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		failures++
		n := failures
		mu.Unlock()
		if n <= 2 {
			writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "ServiceUnavailable", "message": "x", "requestId": "r"}})
			return
		}
		writeJSON(w, 200, map[string]any{"isValid": true, "sessionId": "s-1", "leaseExpiresAt": time.Now().Format(time.RFC3339), "leaseSeconds": 300, "heartbeatIntervalSeconds": 60})
	})
	errorsSeen := make(chan error, 10)
	session, err := testClient(t, f, nil).Checkout(context.Background(), CheckoutOptions{LicenseKey: "ACME-1", HeartbeatInterval: 200 * time.Millisecond, OnHeartbeatError: func(err error) { errorsSeen <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	deadline := time.Now().Add(10 * time.Second)
	for f.count("/api/v1/float/heartbeat") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(errorsSeen) != 2 || session.State() != SessionActive {
		t.Fatalf("%d heartbeat errors, state %s", len(errorsSeen), session.State())
	}
	wantCode(t, <-errorsSeen, CodeServiceUnavailable)
}

func TestMeteringQueuesOfflineAndSendsInOrder(t *testing.T) {
	f := newFakeServer(t)
	var mu sync.Mutex
	down := true
	seen := map[string]bool{}
	var order []string
	f.route("/api/v1/meter", func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		mu.Lock()
		defer mu.Unlock()
		if down {
			writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "ServiceUnavailable", "message": "x", "requestId": "r"}})
			return
		}
		key := body["idempotencyKey"].(string)
		if seen[key] {
			w.Header().Set("Idempotent-Replayed", "true")
		} else {
			order = append(order, key+"@"+body["timestamp"].(string))
		}
		seen[key] = true
		writeJSON(w, 200, map[string]any{"isValid": true, "event": body["event"], "quantity": body["quantity"], "occurredAt": "x", "period": "lifetime", "periodStart": nil, "periodEnd": nil, "total": len(order), "limit": 10, "remaining": 10 - len(order)})
	})
	client := testClient(t, f, func(c *Config) { c.Retry.Attempts = 2 })
	for _, key := range []string{"k1", "k2"} {
		result, err := client.Meter(context.Background(), MeterOptions{LicenseKey: "ACME-1", Event: "exports", IdempotencyKey: key, QueueOffline: true})
		if err != nil {
			t.Fatal(err)
		}
		if !result.Queued || ErrorCode(result.Reason) != CodeServiceUnavailable || result.Timestamp == "" {
			t.Fatalf("%+v", result)
		}
	}
	pending, _ := client.PendingUsage("ACME-1")
	if len(pending) != 2 || pending[0].IdempotencyKey != "k1" {
		t.Fatalf("pending %+v", pending)
	}
	// Without QueueOffline a failure is the caller's.
	_, err := client.Meter(context.Background(), MeterOptions{LicenseKey: "ACME-1", Event: "exports"})
	wantCode(t, err, CodeServiceUnavailable)

	mu.Lock()
	down = false
	mu.Unlock()
	result, err := client.Meter(context.Background(), MeterOptions{LicenseKey: "ACME-1", Event: "exports", IdempotencyKey: "k3", QueueOffline: true})
	if err != nil || result.Queued || result.Total != 3 {
		t.Fatalf("%+v %v", result, err)
	}
	mu.Lock()
	got := strings.Join(order, ",")
	mu.Unlock()
	if !strings.HasPrefix(got, "k1@") || !strings.Contains(got, ",k2@") || !strings.Contains(got, ",k3@") || strings.Index(got, "k2@") > strings.Index(got, "k3@") {
		t.Fatalf("sent out of order: %s", got)
	}
	if pending, _ := client.PendingUsage("ACME-1"); len(pending) != 0 {
		t.Fatalf("still pending %+v", pending)
	}
	replayed, err := client.Meter(context.Background(), MeterOptions{LicenseKey: "ACME-1", Event: "exports", IdempotencyKey: "k3"})
	if err != nil || !replayed.Replayed {
		t.Fatalf("%+v %v", replayed, err)
	}
}

func TestMeteringDropsRecordsRefusedForGood(t *testing.T) {
	f := newFakeServer(t)
	f.route("/api/v1/meter", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"isValid": false, "errorCode": "QuotaExceeded", "message": "over", "total": 10, "limit": 10, "remaining": 0})
	})
	client := testClient(t, f, nil)
	if err := client.appendUsage(client.usageName("ACME-1"), QueuedUsage{Event: "exports", Quantity: 1, Timestamp: isoTime(time.Now()), IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	flushed, err := client.FlushUsage(context.Background(), "ACME-1")
	if err != nil || len(flushed.Dropped) != 1 || flushed.Remaining != 0 {
		t.Fatalf("%+v %v", flushed, err)
	}
	e := wantCode(t, flushed.Dropped[0].Err, CodeQuotaExceeded)
	if e.Response["limit"] != float64(10) {
		t.Fatalf("the rejection carries the server's answer: %v", e.Response)
	}
}

func TestAirGappedRoundTrip(t *testing.T) {
	f := newFakeServer(t)
	server := newSigner(t, "key-1")
	pinned := &JWKS{Keys: []JWK{{Kty: "OKP", Crv: "Ed25519", X: server.jwk()["x"].(string), Kid: "key-1"}}}
	client := testClient(t, f, func(c *Config) { c.JWKS = pinned; c.Store = mustFileStore(t) })
	const key = "ACME-7KQ2-M9XH-4TRB-WZ3P"
	request, err := client.CreateActivationRequest(ActivationRequestOptions{LicenseKey: key, DeviceID: "plant-7", DeviceName: "press", Version: "1.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	// The server's side: read the request, check its MAC, answer with a device license file.
	text, err := unarmor("ACTIVATION REQUEST", request.Request)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	_ = json.Unmarshal([]byte(text), &fields)
	name, version := fields["name"].(string), fields["version"].(string)
	mac := requestMac(key, requestFields{Hint: fields["hint"].(string), Device: fields["device"].(string), Name: &name, Pub: fields["pub"].(string), Challenge: fields["challenge"].(string), Iat: int64(fields["iat"].(float64)), Product: []string{"Acme Studio"}, Version: &version})
	if mac != fields["mac"] || fields["hint"] != "ACME-…-WZ3P" || strings.Contains(request.Request, key) {
		t.Fatalf("request fields %v", fields)
	}
	if compact, _ := unarmor("ACTIVATION REQUEST", request.Compact); compact != text {
		t.Fatal("the compact form is not the same request")
	}
	claims := entitlementClaims(time.Now(), 7)
	for name, value := range map[string]any{"kind": "license-file", "ttl": 86400, "device": "plant-7", "deviceActivated": true, "nonce": request.Challenge, "deviceKey": fields["pub"], "activation": "act-1"} {
		claims[name] = value
	}
	envelope, _ := json.Marshal(map[string]any{"v": 1, "enc": nil, "token": server.sign(t, claims)})
	response := armor("LICENSE FILE", string(envelope))

	// Quoted in a mail reply, it still applies.
	quoted := "> " + strings.ReplaceAll(strings.TrimSuffix(response, "\n"), "\n", "\n> ")
	validation, err := client.ApplyActivationResponse(context.Background(), "Here it is:\n"+quoted+"\n-- \nsupport", "")
	if err != nil {
		t.Fatal(err)
	}
	if validation.Entitlement.Device != "plant-7" {
		t.Fatalf("%+v", validation.Entitlement)
	}
	_, err = client.ApplyActivationResponse(context.Background(), response, "")
	wantCode(t, err, CodeChallengeMismatch)
	if _, err := client.ValidateOffline(ValidateOfflineOptions{LicenseKey: key, DeviceID: "plant-7", RequireActivation: true}); err != nil {
		t.Fatal(err)
	}

	proof, err := client.DeactivateOffline(key)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := unarmor("DEACTIVATION PROOF", proof.Proof)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jws, ".")
	public, _ := base64.RawURLEncoding.DecodeString(fields["pub"].(string))
	signature, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if !ed25519.Verify(public, []byte(parts[0]+"."+parts[1]), signature) {
		t.Fatal("the proof does not verify under the request's device key")
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var proofClaims map[string]any
	_ = json.Unmarshal(payload, &proofClaims)
	if proofClaims["kind"] != "keyforge-deactivation" || proofClaims["activation"] != "act-1" || proofClaims["license"] != "lic-1" || proofClaims["device"] != "plant-7" {
		t.Fatalf("proof claims %v", proofClaims)
	}
	_, err = client.ValidateOffline(ValidateOfflineOptions{LicenseKey: key})
	wantCode(t, err, CodeTokenMissing)
	_, err = client.DeactivateOffline(key)
	wantCode(t, err, CodeTokenMissing)
}

func mustFileStore(t *testing.T) *FileStore {
	store, err := NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return store
}
