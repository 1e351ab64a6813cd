package keyforge

import (
	"context"
	"sync"
	"time"
)

// CheckoutOptions are the inputs of Checkout (docs/integrate/rest-api.md "Floating seats").
type CheckoutOptions struct {
	LicenseKey string
	// DeviceID: one seat per device (a checkout with the device of an active session replaces it). Default: a
	// random id per Checkout call, so a retry after a lost answer replaces its own first session.
	DeviceID   string
	DeviceName string
	Version    string
	// HeartbeatInterval heartbeats more often than the server asks (never less often).
	HeartbeatInterval time.Duration
	// OnLost is called (from the session's goroutine) when the seat is gone: a rejection from the server, or a
	// whole lease without a heartbeat getting through.
	OnLost func(error)
	// OnHeartbeatError is called (from the session's goroutine) when a heartbeat failed and will be retried.
	OnHeartbeatError func(error)
}

// SessionState is a floating session's state.
type SessionState string

const (
	// SessionActive: the seat is held.
	SessionActive SessionState = "active"
	// SessionLost: the server ended it or the lease lapsed.
	SessionLost SessionState = "lost"
	// SessionClosed: checked in.
	SessionClosed SessionState = "closed"
)

// CheckinResult is the answer to a checkin.
type CheckinResult struct {
	SessionID string `json:"sessionId"`
	EndedAt   string `json:"endedAt"`
	// EndReason is "checkin", or how the session had already ended (expired, replaced, revoked …).
	EndReason string `json:"endReason"`
}

// FloatingSession is a floating seat. A goroutine heartbeats it at the server's interval while it is active;
// Close (or Checkin) stops the heartbeats and frees the seat. Transient heartbeat failures are retried with
// backoff; the seat is reported lost (OnLost, Done closes, Err returns why) when the server rejects a heartbeat
// or when no heartbeat got through for a whole lease. Safe for concurrent use. The session token never leaves it.
type FloatingSession struct {
	SessionID              string
	DeviceID               string
	ProductName            string
	Features               []string
	ExpiresAt              *string
	FloatingSeats          int
	RemainingFloatingSeats int
	VendorWarning          *string
	LeaseSeconds           float64

	token     string
	transport *transport
	options   CheckoutOptions

	mu         sync.Mutex
	state      SessionState
	lostReason error
	leaseEnds  time.Time
	interval   time.Duration
	renewedAt  time.Time
	failures   int
	timer      *time.Timer
	done       chan struct{}
	cancel     context.CancelFunc
	beatCtx    context.Context
	beatMu     sync.Mutex
	checkinMu  sync.Mutex
	checkedIn  *CheckinResult
}

func positiveNumber(value any, fallback float64) float64 {
	if n, ok := value.(float64); ok && n > 0 && n < 1e9 {
		return n
	}
	return fallback
}

// Checkout takes a floating seat and returns the session, which heartbeats itself until Close. Retries replace
// their own unanswered checkout (same device), so a lost answer never holds a second seat.
//
// Errors: rejections FloatingSeatsExhausted (retry later), FloatingNotEnabled, ProductMismatch …
func (c *Client) Checkout(ctx context.Context, options CheckoutOptions) (*FloatingSession, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	deviceID := options.DeviceID
	if deviceID == "" {
		deviceID = randomToken(24)
	}
	body := optionalFields(map[string]any{"licenseKey": options.LicenseKey, "deviceId": deviceID, "product": c.productField()},
		map[string]string{"deviceName": options.DeviceName, "version": options.Version})
	got, err := c.transport.retrying(ctx, func() (*answer, error) {
		return c.transport.once(ctx, "POST", "/api/v1/float/checkout", body, "")
	}, nil)
	if err != nil {
		return nil, err
	}
	if got.json["isValid"] != true {
		return nil, rejection(got.json)
	}
	token, tokenOK := got.json["sessionToken"].(string)
	sessionID, idOK := got.json["sessionId"].(string)
	if !tokenOK || !idOK {
		return nil, &Error{Code: CodeInvalidResponse, Kind: KindAPI, Status: 200, Message: "POST /api/v1/float/checkout answered without a session."}
	}
	s := &FloatingSession{SessionID: sessionID, DeviceID: deviceID, token: token, transport: c.transport, options: options, state: SessionActive, done: make(chan struct{}), renewedAt: time.Now()}
	s.ProductName, _ = got.json["productName"].(string)
	s.Features = stringsOf(got.json["features"])
	s.ExpiresAt = stringPointer(got.json["expiresAt"])
	s.VendorWarning = stringPointer(got.json["vendorWarning"])
	s.FloatingSeats = int(positiveNumber(got.json["floatingSeats"], 0))
	s.RemainingFloatingSeats = int(positiveNumber(got.json["remainingFloatingSeats"], 0))
	s.LeaseSeconds = positiveNumber(got.json["leaseSeconds"], 300)
	s.leaseEnds = parseTime(got.json["leaseExpiresAt"])
	s.interval = s.intervalFor(got.json["heartbeatIntervalSeconds"])
	s.beatCtx, s.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.schedule(s.interval)
	s.mu.Unlock()
	return s, nil
}

func parseTime(value any) time.Time {
	text, _ := value.(string)
	at, _ := time.Parse(time.RFC3339Nano, text)
	return at
}

func (s *FloatingSession) intervalFor(serverSeconds any) time.Duration {
	seconds := positiveNumber(serverSeconds, 60)
	if seconds > s.LeaseSeconds {
		seconds = s.LeaseSeconds
	}
	interval := time.Duration(seconds * float64(time.Second))
	if wanted := s.options.HeartbeatInterval; wanted > 0 && wanted < interval {
		interval = wanted
	}
	return interval
}

// State is the session's state.
func (s *FloatingSession) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Err is why the seat was lost (state SessionLost), else nil.
func (s *FloatingSession) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostReason
}

// Done is closed when the seat is lost or checked in: select on it in work that must stop without a seat.
func (s *FloatingSession) Done() <-chan struct{} { return s.done }

// LeaseExpiresAt is the lease end the server last confirmed.
func (s *FloatingSession) LeaseExpiresAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaseEnds
}

// HeartbeatInterval is how often the session heartbeats.
func (s *FloatingSession) HeartbeatInterval() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interval
}

// schedule arms the next heartbeat (s.mu held).
func (s *FloatingSession) schedule(delay time.Duration) {
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.state != SessionActive {
		return
	}
	s.timer = time.AfterFunc(delay, func() { _ = s.beat() })
}

// Heartbeat renews the lease now (the session does it by itself). It returns why when the seat is lost.
func (s *FloatingSession) Heartbeat() error {
	if err := s.beat(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case SessionLost:
		return s.lostReason
	case SessionClosed:
		return &Error{Code: CodeSessionExpired, Kind: KindSession, Message: "The session is checked in."}
	}
	return nil
}

func (s *FloatingSession) beat() error {
	s.beatMu.Lock()
	defer s.beatMu.Unlock()
	s.mu.Lock()
	if s.state != SessionActive {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	// One attempt: this loop is the retry (it knows the lease; a heartbeat must not hang in retries).
	got, err := s.transport.once(s.beatCtx, "POST", "/api/v1/float/heartbeat", map[string]any{}, s.token)
	s.mu.Lock()
	if s.state != SessionActive {
		s.mu.Unlock()
		return nil
	}
	if err == nil && got.json["isValid"] != true {
		s.end(SessionLost, rejection(got.json))
		s.mu.Unlock()
		return nil
	}
	if err == nil {
		s.renewedAt = time.Now()
		s.failures = 0
		if at := parseTime(got.json["leaseExpiresAt"]); !at.IsZero() {
			s.leaseEnds = at
		}
		if value, present := got.json["heartbeatIntervalSeconds"]; present {
			s.interval = s.intervalFor(value)
		}
		s.schedule(s.interval)
		s.mu.Unlock()
		return nil
	}
	s.failures++
	lease := time.Duration(s.LeaseSeconds * float64(time.Second))
	if time.Since(s.renewedAt) >= lease {
		s.end(SessionLost, &Error{Code: CodeLeaseLapsed, Kind: KindSession, Message: "No heartbeat got through for a whole lease: the server has freed the seat.", Err: err})
		s.mu.Unlock()
		return nil
	}
	delay := s.interval
	if IsTransient(err) {
		if wait := retryAfter(err); wait != nil {
			delay = *wait
		} else {
			delay = s.transport.backoff(s.failures, time.Second, s.interval)
		}
		if delay > s.interval {
			delay = s.interval
		}
	}
	// One last try right before the lease would lapse; never a busy loop.
	if untilLapse := lease - time.Since(s.renewedAt); delay > untilLapse {
		delay = untilLapse
	}
	if delay < 100*time.Millisecond {
		delay = 100 * time.Millisecond
	}
	s.schedule(delay)
	onError := s.options.OnHeartbeatError
	s.mu.Unlock()
	if onError != nil {
		onError(err)
	}
	return nil
}

// end moves to a final state (s.mu held).
func (s *FloatingSession) end(state SessionState, reason error) {
	s.state = state
	s.lostReason = reason
	if s.timer != nil {
		s.timer.Stop()
	}
	s.cancel()
	close(s.done)
	if state == SessionLost && reason != nil && s.options.OnLost != nil {
		go s.options.OnLost(reason)
	}
}

// Checkin frees the seat now (idempotent, retried on transient failures). Heartbeats stop first.
func (s *FloatingSession) Checkin(ctx context.Context) (*CheckinResult, error) {
	s.mu.Lock()
	if s.state == SessionActive {
		s.end(SessionClosed, nil)
	}
	s.mu.Unlock()
	s.checkinMu.Lock()
	defer s.checkinMu.Unlock()
	if s.checkedIn != nil {
		return s.checkedIn, nil
	}
	got, err := s.transport.retrying(ctx, func() (*answer, error) {
		return s.transport.once(ctx, "POST", "/api/v1/float/checkin", map[string]any{}, s.token)
	}, nil)
	if err != nil {
		return nil, err
	}
	if got.json["checkedIn"] != true {
		return nil, rejection(got.json)
	}
	result := &CheckinResult{}
	result.SessionID, _ = got.json["sessionId"].(string)
	result.EndedAt, _ = got.json["endedAt"].(string)
	result.EndReason, _ = got.json["endReason"].(string)
	s.checkedIn = result
	return result, nil
}

// Close checks in (with a 10 s bound) and returns the checkin's error, if any (the lease then lapses by itself).
// Use it with defer right after Checkout.
func (s *FloatingSession) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.Checkin(ctx)
	return err
}
