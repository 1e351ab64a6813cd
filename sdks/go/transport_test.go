package keyforge

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetriesTransientFailuresThenSucceeds(t *testing.T) {
	f := newFakeServer(t)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		if f.count("/api/v1/deactivate") < 3 {
			writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "ServiceUnavailable", "message": "database away", "requestId": "r"}})
			return
		}
		writeJSON(w, 200, map[string]any{"deactivated": true, "remainingActivations": 2})
	})
	result, err := testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if *result.RemainingActivations != 2 || f.count("/api/v1/deactivate") != 3 {
		t.Fatalf("remaining %v after %d attempts", *result.RemainingActivations, f.count("/api/v1/deactivate"))
	}
}

func TestRateLimitedForeverIsBounded(t *testing.T) {
	f := newFakeServer(t)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.Header().Set("X-Request-Id", "req-1")
		writeJSON(w, 429, map[string]any{"error": map[string]any{"code": "RateLimited", "message": "slow down", "requestId": "req-1"}})
	})
	_, err := testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	e := wantCode(t, err, CodeRateLimited)
	if e.Kind != KindAPI || e.Status != 429 || e.RequestID != "req-1" || e.RetryAfter == nil || *e.RetryAfter != 0 {
		t.Fatalf("unexpected error fields: %+v", e)
	}
	if n := f.count("/api/v1/deactivate"); n != fastRetry.Attempts {
		t.Fatalf("%d attempts, want %d", n, fastRetry.Attempts)
	}
	if !IsTransient(err) || !errors.Is(err, ErrRateLimited) {
		t.Fatal("RateLimited must be transient and match ErrRateLimited")
	}
}

func TestRetryAfterLongerThanAllowedIsNotWaitedFor(t *testing.T) {
	f := newFakeServer(t)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		writeJSON(w, 429, map[string]any{"error": map[string]any{"code": "RateLimited", "message": "slow down", "requestId": "r"}})
	})
	started := time.Now()
	_, err := testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	e := wantCode(t, err, CodeRateLimited)
	if *e.RetryAfter != time.Hour || f.count("/api/v1/deactivate") != 1 {
		t.Fatalf("retryAfter %v, %d attempts (want 1 h, 1)", *e.RetryAfter, f.count("/api/v1/deactivate"))
	}
	if time.Since(started) > 30*time.Second {
		t.Fatal("waited for a Retry-After beyond the policy")
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	f := newFakeServer(t)
	var first time.Time
	var second time.Time
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		if f.count("/api/v1/deactivate") == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, map[string]any{"error": map[string]any{"code": "RateLimited", "message": "slow down", "requestId": "r"}})
			return
		}
		second = time.Now()
		writeJSON(w, 200, map[string]any{"deactivated": true, "remainingActivations": 1})
	})
	if _, err := testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"}); err != nil {
		t.Fatal(err)
	}
	if second.Sub(first) < time.Second {
		t.Fatalf("retried after %v, before the server's Retry-After of 1 s", second.Sub(first))
	}
}

func TestDefiniteAnswersAreNotRetried(t *testing.T) {
	f := newFakeServer(t)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"code": "InvalidRequest", "message": "bad", "requestId": "r", "fields": map[string]any{"deviceId": "Required"}}})
	})
	_, err := testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	e := wantCode(t, err, CodeInvalidRequest)
	if e.Fields["deviceId"] != "Required" || f.count("/api/v1/deactivate") != 1 || IsTransient(err) {
		t.Fatalf("fields %v, %d attempts", e.Fields, f.count("/api/v1/deactivate"))
	}
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"deactivated": false, "errorCode": "ActivationNotFound", "message": "none"})
	})
	_, err = testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	e = wantCode(t, err, CodeActivationNotFound)
	var asError *Error
	if e.Kind != KindRejected || !errors.As(err, &asError) || !errors.Is(err, ErrActivationNotFound) || errors.Is(err, ErrSeatsExhausted) {
		t.Fatalf("a rejection must be a KindRejected *Error matching its sentinel only: %+v", e)
	}
}

func TestAnswersThatAreNotJSON(t *testing.T) {
	f := newFakeServer(t)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>a captive portal</html>"))
	})
	_, err := testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	wantCode(t, err, CodeInvalidResponse)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, []int{1, 2}) })
	_, err = testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	wantCode(t, err, CodeInvalidResponse)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		_, _ = w.Write([]byte("Internal Server Error"))
	})
	_, err = testClient(t, f, nil).Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	e := wantCode(t, err, CodeInternalError)
	if e.Status != 500 {
		t.Fatalf("status %d", e.Status)
	}
}

func TestServerThatNeverAnswersTimesOut(t *testing.T) {
	f := newFakeServer(t)
	release := make(chan struct{})
	defer close(release)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	client := testClient(t, f, func(c *Config) {
		c.Timeout = 150 * time.Millisecond
		c.Retry.Attempts = 2
	})
	started := time.Now()
	_, err := client.Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	e := wantCode(t, err, CodeTimeout)
	if e.Kind != KindNetwork || !IsTransient(err) || f.count("/api/v1/deactivate") != 2 {
		t.Fatalf("kind %s, %d attempts", e.Kind, f.count("/api/v1/deactivate"))
	}
	if time.Since(started) > 20*time.Second {
		t.Fatal("the timeout did not bound the call")
	}
}

func TestSlowBodyTimesOut(t *testing.T) {
	f := newFakeServer(t)
	release := make(chan struct{})
	defer close(release)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{"deactivated":`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	client := testClient(t, f, func(c *Config) { c.Timeout = 150 * time.Millisecond; c.Retry.Attempts = 1 })
	_, err := client.Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	wantCode(t, err, CodeTimeout)
}

func TestConnectionRefusedIsANetworkError(t *testing.T) {
	f := newFakeServer(t)
	url := f.URL
	f.Close()
	client, err := New(Config{ServerURL: url, Product: "Acme Studio", Retry: RetryPolicy{Attempts: 2, BaseDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	wantCode(t, err, CodeNetworkError)
}

func TestCallerCancellationIsReturnedAsIs(t *testing.T) {
	f := newFakeServer(t)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "ServiceUnavailable", "message": "x", "requestId": "r"}})
	})
	client := testClient(t, f, func(c *Config) { c.Retry = RetryPolicy{Attempts: 100, BaseDelay: time.Second, MaxDelay: time.Second} })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := client.Deactivate(ctx, DeactivateOptions{LicenseKey: "ACME-1", DeviceID: "d"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
}

func TestHugeAnswerIsRefusedWithoutReadingItAll(t *testing.T) {
	f := newFakeServer(t)
	f.route("/.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"keys":[`))
		chunk := []byte(strings.Repeat(`{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k"},`, 1000))
		for i := 0; i < 2000; i++ { // about 100 MB if it were all read
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	client := testClient(t, f, nil)
	_, err := client.FetchKeys(context.Background())
	e := wantCode(t, err, CodeInvalidResponse)
	if e.Status != 200 || IsTransient(err) {
		t.Fatalf("%+v", e)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := parseRetryAfter("7", now); d == nil || *d != 7*time.Second {
		t.Fatalf("seconds: %v", d)
	}
	if d := parseRetryAfter("Thu, 01 Jan 2026 00:00:10 GMT", now); d == nil || *d != 10*time.Second {
		t.Fatalf("date: %v", d)
	}
	for _, bad := range []string{"", "soon", "-1", "1.5"} {
		if d := parseRetryAfter(bad, now); d != nil {
			t.Fatalf("%q gave %v", bad, *d)
		}
	}
}

func TestBackoffIsBoundedWithJitter(t *testing.T) {
	tr := &transport{retry: RetryPolicy{}.withDefaults(), rand: newTestRand()}
	for n := 1; n < 20; n++ {
		ceiling := 500 * time.Millisecond << uint(n-1)
		if ceiling > 8*time.Second || ceiling <= 0 {
			ceiling = 8 * time.Second
		}
		d := tr.backoff(n, 500*time.Millisecond, 8*time.Second)
		if d < ceiling/2 || d > ceiling {
			t.Fatalf("retry %d waits %v, outside [%v, %v]", n, d, ceiling/2, ceiling)
		}
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	elsewhere := newFakeServer(t)
	elsewhere.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"deactivated": true, "remainingActivations": 1})
	})
	f := newFakeServer(t)
	f.route("/api/v1/deactivate", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/api/v1/deactivate", http.StatusTemporaryRedirect)
	})
	for _, own := range []*http.Client{nil, {}} {
		client := testClient(t, f, func(config *Config) { config.HTTPClient = own })
		_, err := client.Deactivate(context.Background(), DeactivateOptions{LicenseKey: "ACME-AAAA-BBBB", DeviceID: "dev"})
		if got := wantCode(t, err, "InvalidRequest"); got.Status != http.StatusTemporaryRedirect {
			t.Fatalf("status %d, want 307", got.Status)
		}
		if n := elsewhere.count("/api/v1/deactivate"); n != 0 {
			t.Fatalf("the license key was re-sent to the redirect's address (%d requests)", n)
		}
	}
}
