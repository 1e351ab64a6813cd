package keyforge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// WatchStatus is what a Watcher found (the TypeScript SDK's watch statuses, spelled the same).
type WatchStatus string

const (
	// WatchValid: the license may be used, checked online now (Source "online") or, with the server out of
	// reach, vouched for by the stored token within its offline grace period (Source "offline").
	WatchValid WatchStatus = "valid"
	// WatchSuspended, WatchRevoked, WatchExpired: the server said so (Suspended, LicenseRevoked, LicenseExpired).
	WatchSuspended WatchStatus = "suspended"
	WatchRevoked   WatchStatus = "revoked"
	WatchExpired   WatchStatus = "expired"
	// WatchDeviceFreed: this device no longer holds an activation (DeviceNotActivated); device-scoped watches only.
	WatchDeviceFreed WatchStatus = "device-freed"
	// WatchNotFound: the key is no longer known (deleted, or reissued and past its overlap).
	WatchNotFound WatchStatus = "not-found"
	// WatchRejected: another rejection; Code says which (e.g. VersionNotSupported).
	WatchRejected WatchStatus = "rejected"
	// WatchUnverified: the server answered, but the answer did not check out (a token that does not verify, an
	// HTTP error that is not transient).
	WatchUnverified WatchStatus = "unverified"
	// WatchUnreachable: no answer, and no stored token vouches for the license (none stored, past its grace
	// period, a clock set back, no offline grace).
	WatchUnreachable WatchStatus = "unreachable"
)

// watchStatuses maps the rejections with a status of their own; other rejections are WatchRejected.
var watchStatuses = map[string]WatchStatus{
	CodeLicenseRevoked:     WatchRevoked,
	CodeSuspended:          WatchSuspended,
	CodeLicenseExpired:     WatchExpired,
	CodeDeviceNotActivated: WatchDeviceFreed,
	CodeLicenseNotFound:    WatchNotFound,
}

// LicenseState is one finding of a Watcher. Callbacks and State share it: treat it as read-only.
type LicenseState struct {
	Status WatchStatus
	// Source is where a WatchValid status came from: "online" (the server now) or "offline" (the stored
	// token); "" for the other statuses.
	Source string
	// Entitlement is the signed entitlement when WatchValid, else nil.
	Entitlement *Entitlement
	// Features are the entitlement's features (empty unless WatchValid).
	Features []string
	// Code is the rejection, verification, HTTP or network code behind a status other than an online
	// WatchValid (for an offline WatchValid: why the server was not reached); else "".
	Code string
	// Err is the error behind Code.
	Err error
	// CheckedAt is when the check ended (the client's clock).
	CheckedAt time.Time
}

// sameFinding: what makes two findings "the same" for OnChange (the status, its source, the features, the
// license's expiry, and the code of a rejected or unverified status).
func sameFinding(a, b *LicenseState) bool {
	if a.Status != b.Status || a.Source != b.Source || len(a.Features) != len(b.Features) || expiryOf(a) != expiryOf(b) {
		return false
	}
	if (a.Status == WatchRejected || a.Status == WatchUnverified) && a.Code != b.Code {
		return false
	}
	x, y := append([]string{}, a.Features...), append([]string{}, b.Features...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func expiryOf(state *LicenseState) string {
	if state.Entitlement == nil || state.Entitlement.LicenseExpiresAt == nil {
		return ""
	}
	return *state.Entitlement.LicenseExpiresAt
}

// WatchOptions are the inputs of Watch.
type WatchOptions struct {
	LicenseKey string
	// DeviceID makes the watch device-scoped (RequireActivation defaults to true then): a device freed in the
	// console or by the customer is reported as WatchDeviceFreed.
	DeviceID string
	// RequireActivation overrides the default (true with a DeviceID, else false); true without a DeviceID
	// watches the installation id (DeviceID()).
	RequireActivation *bool
	// Version is the running application version, checked as Validate checks it.
	Version string
	// Interval between checks (±10 % jitter). Zero: 15 minutes; at least 1 s, at most a year; negative is an error.
	Interval time.Duration
	// OnChange (required) is called with the first finding (previous nil) and whenever the status, its source,
	// the features or the license's expiry change.
	OnChange func(state, previous *LicenseState)
	// OnError is called with each failed check (the stored token answers meanwhile), queued usage that could not
	// be sent and a panic recovered from OnChange or OnUsageFlushed.
	OnError func(error)
	// OnUsageFlushed is called when an online check sent (or dropped) usage queued offline.
	OnUsageFlushed func(*UsageFlush)
}

// DefaultWatchInterval is the time between a Watcher's checks when WatchOptions.Interval is zero.
const DefaultWatchInterval = 15 * time.Minute

// maxWatchInterval keeps the jitter and backoff arithmetic far from overflowing time.Duration (a wrapped,
// negative delay would be a busy loop).
const maxWatchInterval = 365 * 24 * time.Hour

// ErrWatcherStopped is what Watcher.Check returns once the watcher is stopped.
var ErrWatcherStopped = errors.New("keyforge: the watcher is stopped")

// watchTiming is the watcher's floor and first retry; tests shorten them.
type watchTiming struct {
	minInterval time.Duration
	firstRetry  time.Duration
}

// defaultWatchTiming: a typo must not hammer the server; a failed check is first retried after about 2 s.
var defaultWatchTiming = watchTiming{minInterval: time.Second, firstRetry: 2 * time.Second}

// Watcher revalidates a license on its own goroutine (from Client.Watch). It checks at once, then every
// interval with ±10 % jitter (so a fleet started together spreads out); a check that gets no answer is retried
// sooner with exponential backoff (about 2 s, 4 s, 8 s …, never longer than the interval, at least the server's
// Retry-After) while the stored token answers. Callbacks run one at a time on that goroutine and should return
// quickly. Safe for concurrent use.
type Watcher struct {
	client   *Client
	target   watchTarget
	options  WatchOptions
	interval time.Duration
	timing   watchTiming
	ctx      context.Context
	cancel   context.CancelFunc
	kick     chan struct{}
	done     chan struct{}
	// failures counts checks in a row without an answer (the watcher's goroutine only).
	failures int

	mu         sync.Mutex
	changed    *sync.Cond
	state      *LicenseState
	running    *watchRun
	inCallback bool
	ended      bool
}

type watchTarget struct {
	licenseKey        string
	deviceID          string
	requireActivation bool
	version           string
}

// watchRun is one check, which Check calls join.
type watchRun struct {
	finished chan struct{}
	// settled: the finding is known and its callbacks are running.
	settled bool
	// waiting counts the Check calls waiting for this finding (what a test of joined checks waits for).
	waiting int
	state   *LicenseState
	err     error
}

// watchProbe is what one check found.
type watchProbe struct {
	state *LicenseState
	// transient is the failure (no answer, 429, 502-504) the check met: the next check backs off.
	transient error
	usage     *UsageFlush
	errors    []error
}

func invalidWatch(message string) error {
	return &Error{Code: CodeInvalidRequest, Kind: KindLocal, Message: message}
}

// Watch revalidates a license in the background and reports what changes: the Watcher checks at once, then
// every Interval, and calls OnChange with the first finding and whenever the status (valid, suspended, revoked,
// expired, device-freed …), its source (online, or the stored token while the server is out of reach), the
// features or the license's expiry change. Each check is one request (the schedule is the retry); one that gets
// no answer falls back to the stored token within its offline grace period and is retried with backoff. After
// each online check the license's queued usage is sent (OnUsageFlushed). It holds a goroutine until Stop is
// called or ctx ends.
func (c *Client) Watch(ctx context.Context, options WatchOptions) (*Watcher, error) {
	return c.watch(ctx, options, defaultWatchTiming)
}

func (c *Client) watch(ctx context.Context, options WatchOptions, timing watchTiming) (*Watcher, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	if options.OnChange == nil {
		return nil, invalidWatch("Watch needs an OnChange callback.")
	}
	if options.Interval < 0 {
		return nil, invalidWatch("Interval must be positive (zero: the default, 15 minutes).")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	interval := options.Interval
	if interval == 0 {
		interval = DefaultWatchInterval
	}
	if interval < timing.minInterval {
		interval = timing.minInterval
	}
	if interval > maxWatchInterval {
		interval = maxWatchInterval
	}
	requireActivation := options.DeviceID != ""
	if options.RequireActivation != nil {
		requireActivation = *options.RequireActivation
	}
	w := &Watcher{
		client:   c,
		target:   watchTarget{licenseKey: options.LicenseKey, deviceID: options.DeviceID, requireActivation: requireActivation, version: options.Version},
		options:  options,
		interval: interval,
		timing:   timing,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	w.changed = sync.NewCond(&w.mu)
	w.ctx, w.cancel = context.WithCancel(ctx)
	go w.loop()
	return w, nil
}

// State is the last finding (nil before the first check ends).
func (w *Watcher) State() *LicenseState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

// Interval is the time between checks (Interval as given, or its default, floor or ceiling).
func (w *Watcher) Interval() time.Duration { return w.interval }

// Active is false once the watcher is stopped (Stop, or its context ended).
func (w *Watcher) Active() bool { return w.ctx.Err() == nil }

// Done is closed when the watcher's goroutine has ended: stopped, and no callback running.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Check checks now and returns the finding once its callbacks have run; the schedule restarts from it. A check
// already under way is joined instead, even one whose callbacks are running: that one answers at once with its
// finding (so a callback may call Check). ctx bounds the wait only. Errors: ErrWatcherStopped once stopped; the
// store's failure when the check could not be made.
func (w *Watcher) Check(ctx context.Context) (*LicenseState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	if w.ctx.Err() != nil {
		w.mu.Unlock()
		return nil, ErrWatcherStopped
	}
	run := w.running
	if run == nil {
		run = &watchRun{finished: make(chan struct{})}
		w.running = run
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	if run.settled {
		w.mu.Unlock()
		return run.state, run.err
	}
	run.waiting++
	w.mu.Unlock()
	select {
	case <-run.finished:
		return run.state, run.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stop stops the watcher and waits for its goroutine to end (a check under way is abandoned): once it returns,
// no request is sent and no callback runs. The one exception is a callback running when Stop is called (a
// callback may call Stop itself): Stop does not wait for it, and Done is closed when it has returned.
// Idempotent.
func (w *Watcher) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancel()
	for !w.ended && !w.inCallback {
		w.changed.Wait()
	}
}

func (w *Watcher) loop() {
	timer := time.NewTimer(0)
	defer func() {
		timer.Stop()
		w.mu.Lock()
		if run := w.running; run != nil && !run.settled {
			run.err = ErrWatcherStopped
			close(run.finished)
		}
		w.running = nil
		w.ended = true
		w.changed.Broadcast()
		w.mu.Unlock()
		close(w.done)
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-timer.C:
		case <-w.kick:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
		if w.ctx.Err() != nil {
			return
		}
		timer.Reset(w.run())
	}
}

// run makes one check, reports it and returns the wait before the next.
func (w *Watcher) run() time.Duration {
	w.mu.Lock()
	run := w.running
	if run == nil {
		run = &watchRun{finished: make(chan struct{})}
		w.running = run
	}
	// This check answers a pending Check call: its wake-up is used up.
	select {
	case <-w.kick:
	default:
	}
	w.mu.Unlock()

	probe, err := w.client.probe(w.ctx, w.target)
	w.mu.Lock()
	if w.ctx.Err() != nil {
		// Stopped meanwhile: the finding is dropped (the loop's exit answers the Check calls).
		w.mu.Unlock()
		return w.interval
	}
	var previous *LicenseState
	if err == nil {
		previous = w.state
		w.state = probe.state
		run.state = probe.state
	}
	run.err = err
	run.settled = true
	w.mu.Unlock()

	delay := w.interval
	if err != nil {
		// The probe reports its own failures: this is the store's (the device id could not be read or kept).
		w.report(err)
	} else {
		delay = w.afterCheck(probe, previous)
	}
	w.mu.Lock()
	close(run.finished)
	w.running = nil
	w.mu.Unlock()
	return delay
}

// afterCheck calls the callbacks for a finding and returns the wait before the next check.
func (w *Watcher) afterCheck(probe watchProbe, previous *LicenseState) time.Duration {
	if probe.transient != nil {
		w.failures++
		w.report(probe.transient)
	} else {
		w.failures = 0
	}
	for _, err := range probe.errors {
		w.report(err)
	}
	if usage := probe.usage; usage != nil && (len(usage.Sent) > 0 || len(usage.Dropped) > 0) && w.options.OnUsageFlushed != nil {
		w.report(w.deliver("OnUsageFlushed", func() { w.options.OnUsageFlushed(usage) }))
	}
	if previous == nil || !sameFinding(previous, probe.state) {
		w.report(w.deliver("OnChange", func() { w.options.OnChange(probe.state, previous) }))
	}
	return w.nextDelay(probe.transient)
}

// nextDelay is the wait before the next check: the interval ±10 %, or after a check without an answer (failures
// in a row) a backoff up to the interval, at least the server's Retry-After.
func (w *Watcher) nextDelay(transient error) time.Duration {
	if transient == nil {
		return w.interval*9/10 + w.client.transport.jitter(w.interval/5)
	}
	first := w.timing.firstRetry
	if first > w.interval {
		first = w.interval
	}
	delay := w.client.transport.backoff(w.failures, first, w.interval)
	if wait := retryAfter(transient); wait != nil && *wait > delay {
		delay = *wait
	}
	return delay
}

// deliver runs a callback unless the watcher is stopped; a panic in it is returned as an error.
func (w *Watcher) deliver(name string, callback func()) (err error) {
	w.mu.Lock()
	if w.ctx.Err() != nil {
		w.mu.Unlock()
		return nil
	}
	w.inCallback = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.inCallback = false
		w.changed.Broadcast()
		w.mu.Unlock()
	}()
	defer func() {
		if recovered := recover(); recovered != nil {
			if cause, ok := recovered.(error); ok {
				err = fmt.Errorf("keyforge: the watcher's %s panicked: %w", name, cause)
			} else {
				err = fmt.Errorf("keyforge: the watcher's %s panicked: %v", name, recovered)
			}
		}
	}()
	callback()
	return nil
}

func (w *Watcher) report(err error) {
	if err == nil || w.options.OnError == nil {
		return
	}
	// A panicking error hook must not stop the watcher; there is nowhere left to report it.
	_ = w.deliver("OnError", func() { w.options.OnError(err) })
}

// probe is one check of a watcher: online (one attempt), else the stored token.
func (c *Client) probe(ctx context.Context, target watchTarget) (watchProbe, error) {
	deviceID := target.deviceID
	if deviceID == "" && target.requireActivation {
		var err error
		if deviceID, err = c.DeviceID(); err != nil {
			return watchProbe{}, err
		}
	}
	state := func(status WatchStatus, source string, entitlement *Entitlement, reason error) *LicenseState {
		found := &LicenseState{Status: status, Source: source, Entitlement: entitlement, Features: []string{}, Code: ErrorCode(reason), Err: reason, CheckedAt: c.clock()}
		if entitlement != nil {
			found.Features = append(found.Features, entitlement.Features...)
		}
		return found
	}
	online, err := c.validate(ctx, ValidateOptions{LicenseKey: target.licenseKey, Version: target.version, DeviceID: deviceID, RequireActivation: target.requireActivation}, false)
	if err != nil {
		if ctx.Err() != nil {
			return watchProbe{}, ctx.Err()
		}
		var e *Error
		if errors.As(err, &e) && e.Kind == KindRejected {
			status, known := watchStatuses[e.Code]
			if !known {
				status = WatchRejected
			}
			return watchProbe{state: state(status, "", nil, err)}, nil
		}
		if !IsTransient(err) {
			return watchProbe{state: state(WatchUnverified, "", nil, err)}, nil
		}
		offline, offlineErr := c.ValidateOffline(ValidateOfflineOptions{LicenseKey: target.licenseKey, DeviceID: deviceID, RequireActivation: target.requireActivation})
		if offlineErr != nil {
			// Nothing stored: the network failure is the news; otherwise why the stored token does not do.
			reason := offlineErr
			if ErrorCode(offlineErr) == CodeTokenMissing {
				reason = err
			}
			return watchProbe{state: state(WatchUnreachable, "", nil, reason), transient: err}, nil
		}
		return watchProbe{state: state(WatchValid, "offline", offline.Entitlement, err), transient: err}, nil
	}
	probe := watchProbe{state: state(WatchValid, "online", online.Entitlement, nil)}
	// Back online: what was recorded meanwhile goes now.
	usage, err := c.FlushUsage(ctx, target.licenseKey)
	switch {
	case ctx.Err() != nil:
		return watchProbe{}, ctx.Err()
	case err != nil:
		probe.errors = append(probe.errors, err)
	default:
		probe.usage = usage
		if usage.StoppedBy != nil {
			probe.errors = append(probe.errors, usage.StoppedBy)
		}
	}
	return probe, nil
}
