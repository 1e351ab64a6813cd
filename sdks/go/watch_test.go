package keyforge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The watcher against a local server: the first finding, each change reported once, the stored token while the
// server is away (with backoff), a freed device, queued usage sent once back online, Stop, a cancelled context, a
// panicking callback and a joined Check.

const watchKey = "ACME-7KQ2-M9XH-4TRB-WZ3P"

// fastWatch lets the schedule run in milliseconds (the floor and first retry are what the tests shorten).
var fastWatch = watchTiming{minInterval: 10 * time.Millisecond, firstRetry: 40 * time.Millisecond}

// watchServer answers validate with a signed token for its current features, unless answer is set.
type watchServer struct {
	*fakeServer
	signer *signer
	mu     sync.Mutex
	// features returns the features of the n-th validate request.
	features func(n int) []string
	answer   http.HandlerFunc
	hold     chan struct{}
	entered  chan struct{}
	bodies   []map[string]any
	// arrivals are when the validate requests came in.
	arrivals []time.Time
}

func newWatchServer(t *testing.T) *watchServer {
	s := &watchServer{fakeServer: newFakeServer(t), signer: newSigner(t, "key-1"), features: func(int) []string { return []string{"export"} }}
	s.route("/.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"keys": []map[string]any{s.signer.jwk()}})
	})
	s.route("/api/v1/validate", func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.arrivals = append(s.arrivals, time.Now())
		n, answer, hold, entered, features := len(s.bodies), s.answer, s.hold, s.entered, s.features
		s.mu.Unlock()
		if entered != nil {
			entered <- struct{}{}
		}
		if hold != nil {
			<-hold
		}
		if answer != nil {
			answer(w, r)
			return
		}
		claims := entitlementClaims(time.Now(), 7)
		claims["features"] = features(n)
		claims["nonce"] = body["challenge"]
		if device, ok := body["deviceId"].(string); ok {
			claims["device"] = device
			claims["deviceActivated"] = body["requireActivation"] == true
		}
		writeJSON(w, 200, map[string]any{"isValid": true, "offlineCacheToken": s.signer.sign(t, claims)})
	})
	return s
}

// set changes the answer: nil answers with a token of these features.
func (s *watchServer) set(features []string, answer http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.features = func(int) []string { return features }
	s.answer = answer
}

// validations counts the validate requests the handler has seen (arrivals, with their times).
func (s *watchServer) validations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrivals)
}

// gap is the time between the arrivals of validate requests i and i+1 (counted from 1).
func (s *watchServer) gap(i int) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrivals[i].Sub(s.arrivals[i-1])
}

func rejecting(code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"isValid": false, "errorCode": code, "message": "no"})
	}
}

func unavailable(retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "ServiceUnavailable", "message": "db", "requestId": "r"}})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingClient counts requests as the client sends them: one already on its way when the watcher stops may
// reach the server after Stop has returned.
func countingClient(t *testing.T, s *watchServer) (*Client, *atomic.Int32) {
	sent := &atomic.Int32{}
	client := testClient(t, s.fakeServer, func(c *Config) {
		c.HTTPClient = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			sent.Add(1)
			return http.DefaultTransport.RoundTrip(r)
		})}
	})
	return client, sent
}

type watchChange struct{ state, previous *LicenseState }

// watchLog records the callbacks.
type watchLog struct {
	mu      sync.Mutex
	changes []watchChange
	errors  []error
	flushed []*UsageFlush
}

func (l *watchLog) changeCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.changes)
}

func (l *watchLog) change(i int) watchChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changes[i]
}

func (l *watchLog) statuses() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var statuses []string
	for _, c := range l.changes {
		statuses = append(statuses, string(c.state.Status)+"/"+c.state.Source)
	}
	return statuses
}

func (l *watchLog) errorCodes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var codes []string
	for _, err := range l.errors {
		codes = append(codes, ErrorCode(err))
	}
	return codes
}

// startWatch starts a watcher whose unset callbacks record into the log, and stops it at the end of the test,
// checking that its goroutine ends.
func startWatch(t *testing.T, client *Client, options WatchOptions, timing watchTiming) (*Watcher, *watchLog) {
	t.Helper()
	log := &watchLog{}
	if options.LicenseKey == "" {
		options.LicenseKey = watchKey
	}
	if options.OnChange == nil {
		options.OnChange = func(state, previous *LicenseState) {
			log.mu.Lock()
			log.changes = append(log.changes, watchChange{state, previous})
			log.mu.Unlock()
		}
	}
	if options.OnError == nil {
		options.OnError = func(err error) {
			log.mu.Lock()
			log.errors = append(log.errors, err)
			log.mu.Unlock()
		}
	}
	if options.OnUsageFlushed == nil {
		options.OnUsageFlushed = func(report *UsageFlush) {
			log.mu.Lock()
			log.flushed = append(log.flushed, report)
			log.mu.Unlock()
		}
	}
	w, err := client.watch(context.Background(), options, timing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		waitDone(t, w)
	})
	return w, log
}

func waitDone(t *testing.T, w *Watcher) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher's goroutine did not end")
	}
}

// waitFor polls a condition with a generous deadline (the machine may be slow; the condition is what matters).
func waitFor(t *testing.T, what string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitIdle waits for the check under way to end: a Check during its callbacks would join it, not check again.
func waitIdle(t *testing.T, w *Watcher) {
	t.Helper()
	waitFor(t, "the check to end", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.running == nil
	})
}

func mustCheck(t *testing.T, w *Watcher) *LicenseState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	state, err := w.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

func TestWatchReportsTheFirstFindingAndEachChangeOnce(t *testing.T) {
	s := newWatchServer(t)
	client := testClient(t, s.fakeServer, nil)
	w, log := startWatch(t, client, WatchOptions{}, defaultWatchTiming)
	waitFor(t, "the first finding", func() bool { return log.changeCount() == 1 })
	waitIdle(t, w)
	first := log.change(0)
	if first.previous != nil || first.state.Status != WatchValid || first.state.Source != "online" || strings.Join(first.state.Features, ",") != "export" || first.state.Code != "" || first.state.Entitlement == nil || first.state.CheckedAt.IsZero() {
		t.Fatalf("first finding %+v, previous %v", first.state, first.previous)
	}
	if w.State() != first.state || w.Interval() != DefaultWatchInterval || !w.Active() {
		t.Fatalf("state %+v, interval %v", w.State(), w.Interval())
	}

	if state := mustCheck(t, w); state.Status != WatchValid || log.changeCount() != 1 {
		t.Fatalf("an unchanged finding was reported: %+v, %d changes", state, log.changeCount())
	}
	s.set([]string{"export", "render"}, nil)
	if state := mustCheck(t, w); strings.Join(state.Features, ",") != "export,render" || log.changeCount() != 2 || strings.Join(log.change(1).previous.Features, ",") != "export" {
		t.Fatalf("the new feature: %+v, %d changes", state, log.changeCount())
	}
	s.set([]string{"render", "export"}, nil)
	if mustCheck(t, w); log.changeCount() != 2 {
		t.Fatal("the same features in another order were reported as a change")
	}

	before := s.validations()
	cases := []struct {
		answer http.HandlerFunc
		status WatchStatus
		code   string
	}{
		{rejecting(CodeVersionNotSupported), WatchRejected, CodeVersionNotSupported},
		{rejecting(CodeProductMismatch), WatchRejected, CodeProductMismatch}, // another code: a change
		{rejecting(CodeSuspended), WatchSuspended, CodeSuspended},
		{rejecting(CodeLicenseExpired), WatchExpired, CodeLicenseExpired},
		{rejecting(CodeLicenseNotFound), WatchNotFound, CodeLicenseNotFound},
		{func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 400, map[string]any{"error": map[string]any{"code": "InvalidRequest", "message": "x", "requestId": "r"}})
		}, WatchUnverified, CodeInvalidRequest},
		{rejecting(CodeLicenseRevoked), WatchRevoked, CodeLicenseRevoked},
	}
	for i, c := range cases {
		s.set(nil, c.answer)
		state := mustCheck(t, w)
		if state.Status != c.status || state.Code != c.code || state.Entitlement != nil || len(state.Features) != 0 || ErrorCode(state.Err) != c.code {
			t.Fatalf("%s: %+v", c.code, state)
		}
		if log.changeCount() != 3+i {
			t.Fatalf("%s: %d changes", c.code, log.changeCount())
		}
	}
	if got := s.validations() - before; got != len(cases) {
		t.Fatalf("one request per check: %d for %d checks", got, len(cases))
	}
	if last := log.change(log.changeCount() - 1); last.previous.Status != WatchUnverified {
		t.Fatalf("previous %+v", last.previous)
	}
	// A rejection deletes the stored token: it does not revive offline.
	if _, err := client.ValidateOffline(ValidateOfflineOptions{LicenseKey: watchKey}); ErrorCode(err) != CodeTokenMissing {
		t.Fatalf("the token survived the revocation: %v", err)
	}
}

func TestWatchAnswersFromTheStoredTokenWhileTheServerIsAway(t *testing.T) {
	s := newWatchServer(t)
	client := testClient(t, s.fakeServer, nil)
	w, log := startWatch(t, client, WatchOptions{}, defaultWatchTiming)
	waitFor(t, "the first finding", func() bool { return log.changeCount() == 1 })
	waitIdle(t, w)

	s.set(nil, unavailable(""))
	before := s.validations()
	state := mustCheck(t, w)
	if state.Status != WatchValid || state.Source != "offline" || state.Code != CodeServiceUnavailable || state.Err == nil || strings.Join(state.Features, ",") != "export" || state.Entitlement == nil {
		t.Fatalf("offline %+v", state)
	}
	if s.validations() != before+1 {
		t.Fatalf("a check is one request (the schedule is the retry): %d", s.validations()-before)
	}
	if codes := log.errorCodes(); len(codes) == 0 || codes[0] != CodeServiceUnavailable {
		t.Fatalf("the failed check is reported: %v", codes)
	}
	if err := client.Forget(watchKey); err != nil {
		t.Fatal(err)
	}
	if state := mustCheck(t, w); state.Status != WatchUnreachable || state.Code != CodeServiceUnavailable || state.Source != "" {
		t.Fatalf("without a token %+v", state)
	}
	s.set([]string{"export"}, nil)
	if state := mustCheck(t, w); state.Status != WatchValid || state.Source != "online" {
		t.Fatalf("back online %+v", state)
	}
	if got := strings.Join(log.statuses(), " "); got != "valid/online valid/offline unreachable/ valid/online" {
		t.Fatalf("changes %s", got)
	}
}

func TestWatchBacksOffWhileTheServerIsAway(t *testing.T) {
	s := newWatchServer(t)
	client := testClient(t, s.fakeServer, nil)
	w, log := startWatch(t, client, WatchOptions{Interval: 2 * time.Second}, fastWatch)
	waitFor(t, "the first finding", func() bool { return log.changeCount() == 1 })
	waitIdle(t, w)

	s.set(nil, unavailable(""))
	mustCheck(t, w)
	failed := s.validations()
	// The retries come by themselves, sooner than the interval, each after a longer wait: at least half of
	// 40 ms, 80 ms, 160 ms … (measured at the server, from one request to the next: never a request storm).
	waitFor(t, "retries", func() bool { return s.validations() >= failed+4 })
	for n := 1; n <= 4; n++ {
		least := (fastWatch.firstRetry << (n - 1)) / 2
		if gap := s.gap(failed + n - 1); gap < least {
			t.Fatalf("retry %d came %v after the failure, before the backoff's %v", n, gap, least)
		}
	}
	if state := w.State(); state.Status != WatchValid || state.Source != "offline" {
		t.Fatalf("while away %+v", state)
	}
	if n := log.changeCount(); n != 2 {
		t.Fatalf("the same offline finding was reported again: %d changes", n)
	}
	w.Stop()

	// Retry-After beats a shorter backoff (here the interval is 50 ms).
	s.set([]string{"export"}, nil)
	w2, log2 := startWatch(t, testClient(t, s.fakeServer, nil), WatchOptions{Interval: 50 * time.Millisecond}, fastWatch)
	waitFor(t, "the first finding", func() bool { return log2.changeCount() == 1 && log2.change(0).state.Source == "online" })
	s.set(nil, unavailable("1"))
	// A scheduled check may have been under way (and joined) with the old answer: until one met the 503.
	waitFor(t, "a check that met the 503", func() bool { return mustCheck(t, w2).Source == "offline" })
	failed = s.validations()
	time.Sleep(500 * time.Millisecond)
	if s.validations() != failed {
		t.Fatal("retried before the server's Retry-After")
	}
	s.set([]string{"export"}, nil)
	waitFor(t, "the retry", func() bool { return s.validations() > failed })
	if gap := s.gap(failed); gap < time.Second {
		t.Fatalf("retried %v after a Retry-After of 1 s", gap)
	}
	waitFor(t, "back online", func() bool { return w2.State().Source == "online" })
}

func TestWatchReportsAFreedDevice(t *testing.T) {
	s := newWatchServer(t)
	client := testClient(t, s.fakeServer, nil)
	w, log := startWatch(t, client, WatchOptions{DeviceID: "device-1"}, defaultWatchTiming)
	waitFor(t, "the first finding", func() bool { return log.changeCount() == 1 })
	waitIdle(t, w)
	s.mu.Lock()
	sent := s.bodies[0]
	s.mu.Unlock()
	if sent["deviceId"] != "device-1" || sent["requireActivation"] != true {
		t.Fatalf("validate body %v", sent)
	}
	if entitlement := log.change(0).state.Entitlement; !entitlement.DeviceActivated || entitlement.Device != "device-1" {
		t.Fatalf("%+v", entitlement)
	}
	s.set(nil, rejecting(CodeDeviceNotActivated))
	if state := mustCheck(t, w); state.Status != WatchDeviceFreed || state.Code != CodeDeviceNotActivated {
		t.Fatalf("%+v", state)
	}

	// RequireActivation false: the license only, with the device still bound to the token.
	s.set([]string{"export"}, nil)
	off := false
	_, log2 := startWatch(t, client, WatchOptions{DeviceID: "device-1", RequireActivation: &off}, defaultWatchTiming)
	waitFor(t, "the first finding", func() bool { return log2.changeCount() == 1 })
	s.mu.Lock()
	sent = s.bodies[len(s.bodies)-1]
	s.mu.Unlock()
	if _, present := sent["requireActivation"]; present || sent["deviceId"] != "device-1" {
		t.Fatalf("validate body %v", sent)
	}
}

func TestWatchSendsQueuedUsageOnceBackOnline(t *testing.T) {
	s := newWatchServer(t)
	var meterDown atomic.Bool
	meterDown.Store(true)
	var sent sync.Map
	s.route("/api/v1/meter", func(w http.ResponseWriter, r *http.Request) {
		if meterDown.Load() {
			unavailable("")(w, r)
			return
		}
		body := readBody(r)
		count, _ := sent.LoadOrStore(body["idempotencyKey"], new(atomic.Int32))
		count.(*atomic.Int32).Add(1)
		writeJSON(w, 200, map[string]any{"isValid": true, "event": body["event"], "quantity": body["quantity"], "total": 2, "limit": nil, "remaining": nil})
	})
	client := testClient(t, s.fakeServer, func(c *Config) { c.Retry.Attempts = 1 })
	queued, err := client.Meter(context.Background(), MeterOptions{LicenseKey: watchKey, Event: "exports", Quantity: 2, IdempotencyKey: "u-1", QueueOffline: true})
	if err != nil || !queued.Queued {
		t.Fatalf("%+v %v", queued, err)
	}
	meterDown.Store(false)
	w, log := startWatch(t, client, WatchOptions{}, defaultWatchTiming)
	waitFor(t, "the usage report", func() bool { log.mu.Lock(); defer log.mu.Unlock(); return len(log.flushed) == 1 })
	waitIdle(t, w)
	log.mu.Lock()
	report := log.flushed[0]
	log.mu.Unlock()
	if len(report.Sent) != 1 || report.Sent[0].IdempotencyKey != "u-1" || report.Remaining != 0 {
		t.Fatalf("%+v", report)
	}
	if pending, _ := client.PendingUsage(watchKey); len(pending) != 0 {
		t.Fatalf("still pending %+v", pending)
	}
	mustCheck(t, w)
	count, _ := sent.Load("u-1")
	if n := count.(*atomic.Int32).Load(); n != 1 {
		t.Fatalf("the record was sent %d times", n)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.flushed) != 1 {
		t.Fatal("an empty flush was reported")
	}
}

func TestWatchStopEndsTheChecksAndTheCallbacks(t *testing.T) {
	s := newWatchServer(t)
	// Every finding differs from the one before, so every check calls OnChange.
	s.mu.Lock()
	s.features = func(n int) []string {
		if n%2 == 0 {
			return []string{"export"}
		}
		return []string{"render"}
	}
	s.mu.Unlock()
	var stopped, late atomic.Bool
	client, sent := countingClient(t, s)
	w, log := startWatch(t, client, WatchOptions{Interval: 20 * time.Millisecond, OnChange: func(state, previous *LicenseState) {
		if stopped.Load() {
			late.Store(true)
		}
	}}, fastWatch)
	waitFor(t, "checks by themselves", func() bool { return s.validations() >= 3 })
	w.Stop()
	stopped.Store(true)
	after := sent.Load()
	waitDone(t, w)
	time.Sleep(150 * time.Millisecond)
	if sent.Load() != after || late.Load() {
		t.Fatalf("the watcher went on after Stop: %d requests, a late callback: %v", sent.Load()-after, late.Load())
	}
	if _, err := w.Check(context.Background()); !errors.Is(err, ErrWatcherStopped) || w.Active() {
		t.Fatalf("Check after Stop: %v", err)
	}
	w.Stop() // idempotent
	if len(log.errorCodes()) != 0 {
		t.Fatalf("errors %v", log.errorCodes())
	}

	// Stop from a callback returns at once (no deadlock); the goroutine ends when the callback has returned.
	ready := make(chan *Watcher, 1)
	self, err := client.watch(context.Background(), WatchOptions{LicenseKey: watchKey, Interval: 20 * time.Millisecond, OnChange: func(state, previous *LicenseState) {
		w := <-ready
		w.Stop()
		if state, err := w.Check(context.Background()); !errors.Is(err, ErrWatcherStopped) || state != nil {
			t.Errorf("Check from a callback after Stop: %v", err)
		}
	}}, fastWatch)
	if err != nil {
		t.Fatal(err)
	}
	ready <- self
	waitDone(t, self)
}

func TestWatchStopsWhenItsContextEnds(t *testing.T) {
	s := newWatchServer(t)
	client, sent := countingClient(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{}, 1)
	w, err := client.watch(ctx, WatchOptions{LicenseKey: watchKey, Interval: 20 * time.Millisecond, OnChange: func(state, previous *LicenseState) {
		select {
		case first <- struct{}{}:
		default:
		}
	}}, fastWatch)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("no first finding")
	}
	cancel()
	waitDone(t, w)
	after := sent.Load()
	time.Sleep(100 * time.Millisecond)
	if sent.Load() != after || w.Active() {
		t.Fatal("the watcher went on after its context ended")
	}
	if _, err := w.Check(context.Background()); !errors.Is(err, ErrWatcherStopped) {
		t.Fatalf("Check: %v", err)
	}
	if _, err := client.Watch(ctx, WatchOptions{LicenseKey: watchKey, OnChange: func(_, _ *LicenseState) {}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch with an ended context: %v", err)
	}
}

func TestWatchRecoversFromPanickingCallbacks(t *testing.T) {
	s := newWatchServer(t)
	client := testClient(t, s.fakeServer, nil)
	var calls atomic.Int32
	var mu sync.Mutex
	var reported []error
	w, _ := startWatch(t, client, WatchOptions{
		OnChange: func(state, previous *LicenseState) {
			if calls.Add(1) == 1 {
				panic("boom")
			}
		},
		OnError: func(err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
			panic("the error hook fails too")
		},
	}, defaultWatchTiming)
	waitFor(t, "the panic reported", func() bool { mu.Lock(); defer mu.Unlock(); return len(reported) == 1 })
	waitIdle(t, w)
	mu.Lock()
	message := reported[0].Error()
	mu.Unlock()
	if !strings.Contains(message, "OnChange panicked: boom") {
		t.Fatalf("reported %q", message)
	}
	s.set([]string{"export", "render"}, nil)
	if state := mustCheck(t, w); strings.Join(state.Features, ",") != "export,render" || calls.Load() != 2 || !w.Active() {
		t.Fatalf("the watcher did not go on: %+v, %d calls", state, calls.Load())
	}
}

func TestWatchCheckJoinsACheckUnderWay(t *testing.T) {
	s := newWatchServer(t)
	client := testClient(t, s.fakeServer, nil)
	w, log := startWatch(t, client, WatchOptions{}, defaultWatchTiming)
	waitFor(t, "the first finding", func() bool { return log.changeCount() == 1 })
	waitIdle(t, w)
	hold, entered := make(chan struct{}), make(chan struct{}, 10)
	s.mu.Lock()
	s.hold, s.entered = hold, entered
	s.mu.Unlock()
	before := s.validations()

	results := make(chan *LicenseState, 3)
	check := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		state, err := w.Check(ctx)
		if err != nil {
			t.Error(err)
		}
		results <- state
	}
	go check()
	<-entered // the first check's request is at the server
	var started sync.WaitGroup
	for i := 0; i < 2; i++ {
		started.Add(1)
		go func() {
			started.Done()
			check()
		}()
	}
	started.Wait()
	waitFor(t, "both to join the check under way", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.running != nil && w.running.waiting == 3
	})
	s.mu.Lock()
	s.hold, s.entered = nil, nil
	s.mu.Unlock()
	close(hold)
	first := <-results
	if second, third := <-results, <-results; first == nil || second != first || third != first {
		t.Fatal("the joined checks did not share the finding")
	}
	if got := s.validations() - before; got != 1 {
		t.Fatalf("%d requests for one joined check", got)
	}
	// A short ctx bounds the wait, not the check.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check with an ended context: %v", err)
	}
}

func TestWatchOptionsAreChecked(t *testing.T) {
	client := testClient(t, newFakeServer(t), nil)
	noop := func(_, _ *LicenseState) {}
	for name, options := range map[string]WatchOptions{
		"empty key":         {OnChange: noop},
		"no OnChange":       {LicenseKey: watchKey},
		"negative interval": {LicenseKey: watchKey, OnChange: noop, Interval: -time.Second},
	} {
		if w, err := client.Watch(context.Background(), options); w != nil || ErrorCode(err) != CodeInvalidRequest {
			t.Fatalf("%s: %v", name, err)
		}
	}
	w, err := client.Watch(context.Background(), WatchOptions{LicenseKey: watchKey, OnChange: noop, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if w.Interval() != time.Second {
		t.Fatalf("the floor: %v", w.Interval())
	}
	long, err := client.Watch(context.Background(), WatchOptions{LicenseKey: watchKey, OnChange: noop, Interval: 200 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer long.Stop()
	if long.Interval() != maxWatchInterval {
		t.Fatalf("the ceiling: %v", long.Interval())
	}

}

func TestWatchDelays(t *testing.T) {
	client := testClient(t, newFakeServer(t), nil)
	w := &Watcher{client: client, interval: 15 * time.Minute, timing: defaultWatchTiming}
	for i := 0; i < 50; i++ {
		if d := w.nextDelay(nil); d < 810*time.Second || d > 990*time.Second {
			t.Fatalf("the interval ±10 %%: %v", d)
		}
	}
	down := &Error{Code: CodeNetworkError, Kind: KindNetwork}
	for n, ceiling := 1, 2*time.Second; n <= 12; n, ceiling = n+1, ceiling*2 {
		if ceiling > w.interval {
			ceiling = w.interval
		}
		w.failures = n
		if d := w.nextDelay(down); d < ceiling/2 || d > ceiling {
			t.Fatalf("failure %d: %v, not within %v-%v", n, d, ceiling/2, ceiling)
		}
	}
	wait := 30 * time.Second
	w.failures = 1
	if d := w.nextDelay(&Error{Code: CodeServiceUnavailable, Kind: KindAPI, Status: 503, RetryAfter: &wait}); d != wait {
		t.Fatalf("Retry-After: %v", d)
	}
	huge := &Watcher{client: client, interval: maxWatchInterval, timing: defaultWatchTiming, failures: 60}
	if d, e := huge.nextDelay(nil), huge.nextDelay(down); d <= 0 || e <= 0 || e > maxWatchInterval {
		t.Fatalf("delays at the ceiling: %v, %v", d, e)
	}
	short := &Watcher{client: client, interval: 500 * time.Millisecond, timing: defaultWatchTiming, failures: 1}
	if d := short.nextDelay(down); d > 500*time.Millisecond {
		t.Fatalf("a retry after longer than the interval: %v", d)
	}
}

func TestWatchLeavesNoGoroutineBehind(t *testing.T) {
	s := newWatchServer(t)
	// Served in memory: no connection goroutines to tell apart from the watchers'.
	handler := s.Config.Handler
	client := testClient(t, s.fakeServer, func(c *Config) {
		c.HTTPClient = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			recorder := httptest.NewRecorder()
			handler.ServeHTTP(recorder, r)
			return recorder.Result(), nil
		})}
	})
	baseline := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var watchers []*Watcher
	for i := 0; i < 20; i++ {
		w, err := client.watch(ctx, WatchOptions{LicenseKey: watchKey, Interval: 10 * time.Millisecond, OnChange: func(_, _ *LicenseState) {}}, fastWatch)
		if err != nil {
			t.Fatal(err)
		}
		watchers = append(watchers, w)
	}
	waitFor(t, "checks", func() bool { return s.validations() >= 40 })
	for i, w := range watchers {
		if i%2 == 0 {
			w.Stop()
		}
	}
	cancel() // the others end with their context
	for _, w := range watchers {
		waitDone(t, w)
	}
	waitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= baseline })
}
