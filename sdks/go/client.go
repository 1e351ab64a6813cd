package keyforge

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Config configures a Client. ServerURL and Product (or Products) are required.
type Config struct {
	// ServerURL is the licensing server's origin, without /api/v1 (e.g. https://licenses.example.com).
	ServerURL string
	// Product is your application's product name as the vendor named it in Keyforge. Activate and Checkout send
	// it, so the server refuses a key of another product (ProductMismatch) before it takes a seat; a token for
	// another product (and not a bundle containing it) is refused offline (WrongProduct).
	Product string
	// Products names several products instead of Product (an application sold under more than one).
	Products []string
	// Issuer is the expected iss of offline tokens: the server's PUBLIC_URL. Default: ServerURL.
	Issuer string
	// JWKS pins the public keys (the server's /.well-known/jwks.json saved with your application). When set they
	// are the only keys trusted and the JWKS is never fetched. Default: fetched once and cached.
	JWKS *JWKS
	// Store keeps tokens, fetched keys, the installation id, device key pairs and queued usage.
	// Default: a MemoryStore (use NewFileStore for real installations).
	Store Store
	// Timeout bounds each HTTP attempt, the answer's body included (default 10 s).
	Timeout time.Duration
	// Retry is the policy on 429/502/503/504 and network failures.
	Retry RetryPolicy
	// ClockTolerance is the leeway for clock differences when checking token times (default 300 s).
	ClockTolerance time.Duration
	// HTTPClient replaces the default http.Client (its Timeout is left as given; Timeout above applies per attempt).
	// The client uses a copy whose CheckRedirect refuses redirects: the license key is never re-sent elsewhere.
	HTTPClient *http.Client
	// Clock is the local wall clock (default time.Now); for tests.
	Clock func() time.Time
}

// Client is the Keyforge licensing client. One per server and application; safe for concurrent use by
// multiple goroutines (every method may be called concurrently; the store's writes are serialized per client).
type Client struct {
	// ServerURL is the normalized server origin.
	ServerURL string
	// Issuer is the expected iss of tokens.
	Issuer string
	// Products are the accepted product names.
	Products []string

	transport *transport
	keys      *keyRing
	store     Store
	clock     func() time.Time
	tolerance time.Duration

	deviceMu sync.Mutex
	deviceID string

	// storeMu serializes read-modify-write sequences on the store (records, device keys, usage queues).
	storeMu sync.Mutex
	// flushMu holds one lock per usage queue: one sender at a time, so records go in order and once.
	flushMu    sync.Mutex
	flushLocks map[string]*sync.Mutex
}

// tokenRecord is what the store keeps per license: the last verified token and the clock facts to check it offline.
type tokenRecord struct {
	V     int    `json:"v"`
	Token string `json:"token"`
	// SkewMs is the server clock minus the local clock, measured when the token arrived.
	SkewMs float64 `json:"skewMs"`
	// LastSeenAt is the latest server-clock time seen for this license, in ms (detects a clock set back).
	LastSeenAt float64 `json:"lastSeenAt"`
}

const (
	// Below this, a measured clock difference is noise (whole-second iat, network latency).
	skewNoiseMs       = 2000
	installationIDKey = "device"
)

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// New checks the configuration and returns a Client.
func New(config Config) (*Client, error) {
	parsed, err := url.Parse(config.ServerURL)
	if err != nil || !parsed.IsAbs() || parsed.Host == "" {
		return nil, errors.New("keyforge: ServerURL must be an absolute http(s) URL, e.g. https://licenses.example.com")
	}
	if parsed.Scheme != "https" && parsed.Scheme != "http" {
		return nil, errors.New("keyforge: ServerURL must be an http(s) URL")
	}
	if parsed.RawQuery != "" || parsed.Fragment != "" || parsed.User != nil || parsed.ForceQuery {
		return nil, errors.New("keyforge: ServerURL must not carry a query, fragment or credentials")
	}
	base := strings.TrimRight(parsed.Scheme+"://"+parsed.Host+parsed.EscapedPath(), "/")
	base = strings.TrimSuffix(base, "/api/v1")
	products := append([]string{}, config.Products...)
	if config.Product != "" {
		products = append([]string{config.Product}, products...)
	}
	if len(products) == 0 {
		return nil, errors.New("keyforge: Product must name your application's product (or Products, its products)")
	}
	for _, name := range products {
		if name == "" {
			return nil, errors.New("keyforge: a product name is empty")
		}
	}
	c := &Client{ServerURL: base, Issuer: config.Issuer, Products: products, store: config.Store, clock: config.Clock, tolerance: config.ClockTolerance, flushLocks: map[string]*sync.Mutex{}}
	if c.Issuer == "" {
		c.Issuer = base
	}
	if c.store == nil {
		c.store = NewMemoryStore()
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	if c.tolerance <= 0 {
		c.tolerance = 300 * time.Second
	}
	timeout := config.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// Redirects are not followed, on the caller's client too (a copy): the license key travels in the body, and Go
	// re-sends a body on 307/308 to wherever the redirect points. A redirect answers as the HTTP error it is (give
	// ServerURL the final address).
	httpClient := &http.Client{}
	if config.HTTPClient != nil {
		copied := *config.HTTPClient
		httpClient = &copied
	}
	httpClient.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.transport = &transport{baseURL: base, client: httpClient, timeout: timeout, retry: config.Retry.withDefaults(), clock: c.clock, rand: rand.New(rand.NewSource(time.Now().UnixNano()))}
	c.keys, err = newKeyRing(config.JWKS, c.transport, c.store, "jwks:"+c.Issuer, c.clock)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func requireKey(licenseKey string) error {
	if strings.TrimSpace(licenseKey) == "" {
		return &Error{Code: CodeInvalidRequest, Kind: KindLocal, Message: "licenseKey must be a non-empty string."}
	}
	return nil
}

// storeError passes a store's own failure on, wrapped (errors.Is/As reach the cause): like the TypeScript SDK,
// which rethrows the store's error, no error code is invented for it.
func storeError(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("keyforge: the store failed: %w", err)
}

// productField is the product(s) as activate and checkout send them: one name, or the list.
func (c *Client) productField() any {
	if len(c.Products) == 1 {
		return c.Products[0]
	}
	return c.Products
}

// deviceOrInstallation is the device id a call was given, else this installation's (DeviceID).
func (c *Client) deviceOrInstallation(deviceID string) (string, error) {
	if deviceID != "" {
		return deviceID, nil
	}
	return c.DeviceID()
}

// DeviceID is this installation's device id: 64 random hex characters created on first use and kept in the
// store. Activate, Deactivate and air-gapped requests use it when no DeviceID is given. With a MemoryStore it
// lasts only as long as the process: use a FileStore (or your own device id, see MachineFingerprint).
func (c *Client) DeviceID() (string, error) {
	c.deviceMu.Lock()
	defer c.deviceMu.Unlock()
	if c.deviceID != "" {
		return c.deviceID, nil
	}
	stored, ok, err := c.store.Get(installationIDKey)
	if err != nil {
		return "", storeError(err)
	}
	if ok && hex64.MatchString(stored) {
		c.deviceID = stored
		return stored, nil
	}
	created := hex.EncodeToString(randomBytes(32))
	if err := c.store.Set(installationIDKey, created); err != nil {
		return "", storeError(err)
	}
	c.deviceID = created
	return created, nil
}

// ActivateOptions are the inputs of Activate (docs/integrate/rest-api.md "POST /api/v1/activate").
type ActivateOptions struct {
	LicenseKey string
	// DeviceID is this machine's id (e.g. from MachineFingerprint); required by node-locked licenses.
	// Default: the installation id (DeviceID), the same on every retry, so a seat is never taken twice.
	DeviceID string
	// DeviceName is a label the vendor sees.
	DeviceName string
	// Version is the running application version, checked against the license's minVersion/maxVersion.
	Version string
	// UserEmail is the end user's email (named-user audit trail).
	UserEmail string
}

// Activation is a granted activation.
type Activation struct {
	ProductName          string   `json:"productName"`
	RemainingActivations int      `json:"remainingActivations"`
	ExpiresAt            *string  `json:"expiresAt"`
	Features             []string `json:"features"`
	IsTrial              bool     `json:"isTrial"`
	TrialDaysRemaining   *int     `json:"trialDaysRemaining"`
	NodeLocked           bool     `json:"nodeLocked"`
	OfflineGraceDays     *int     `json:"offlineGraceDays"`
	// VendorWarning: show it to the user when set (the vendor's own subscription is ending).
	VendorWarning *string `json:"vendorWarning"`
	// DeviceID is the device that holds the seat.
	DeviceID string `json:"-"`
	// Response is the server's whole answer.
	Response map[string]any `json:"-"`
}

func optionalFields(body map[string]any, fields map[string]string) map[string]any {
	for name, value := range fields {
		if value != "" {
			body[name] = value
		}
	}
	return body
}

// Activate registers this installation and takes a seat. Each attempt fetches its own fresh nonce; an attempt
// whose answer is lost is retried with the same device, which the server answers with the same seat. The
// client's product is sent along: a key of another product is refused with ProductMismatch, no seat taken.
//
// Errors (*Error): rejections SeatsExhausted, ProductMismatch, DeviceIdRequired, LicenseExpired …; API and
// network errors after the retries.
func (c *Client) Activate(ctx context.Context, options ActivateOptions) (*Activation, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	deviceID, err := c.deviceOrInstallation(options.DeviceID)
	if err != nil {
		return nil, err
	}
	got, err := c.transport.retrying(ctx, func() (*answer, error) {
		issued, err := c.transport.once(ctx, "GET", "/api/v1/nonce", nil, "")
		if err != nil {
			return nil, err
		}
		nonce, ok := issued.json["nonce"].(string)
		if !ok {
			return nil, &Error{Code: CodeInvalidResponse, Kind: KindAPI, Status: issued.status, Message: "GET /api/v1/nonce answered without a nonce."}
		}
		body := optionalFields(map[string]any{"licenseKey": options.LicenseKey, "deviceId": deviceID, "product": c.productField(), "nonce": nonce},
			map[string]string{"deviceName": options.DeviceName, "version": options.Version, "userEmail": options.UserEmail})
		return c.transport.once(ctx, "POST", "/api/v1/activate", body, "")
	}, nil)
	if err != nil {
		return nil, err
	}
	if got.json["isValid"] != true {
		return nil, rejection(got.json)
	}
	activation := &Activation{}
	_ = json.Unmarshal(got.raw, activation)
	activation.DeviceID, activation.Response = deviceID, got.json
	if activation.Features == nil {
		activation.Features = []string{}
	}
	return activation, nil
}

// ValidateOptions are the inputs of Validate (docs/integrate/rest-api.md "POST /api/v1/validate").
type ValidateOptions struct {
	LicenseKey string
	// Version is the running application version; empty: no version check.
	Version string
	// DeviceID binds the offline token to this device: ValidateOffline with the same DeviceID then refuses a token
	// copied from another machine.
	DeviceID string
	// RequireActivation also asks the server whether this device still holds an activation: a device never
	// activated, or deactivated, is refused with DeviceNotActivated, and the token must attest the device.
	// Without DeviceID, the installation id is sent, as Activate does.
	RequireActivation bool
	// OfflineFallback answers from the stored token (as ValidateOffline) when the server cannot be reached
	// (network failure, timeouts, 429/503 after the retries). Never after a definite answer.
	OfflineFallback bool
}

// ValidateOfflineOptions are the inputs of ValidateOffline.
type ValidateOfflineOptions struct {
	LicenseKey string
	// DeviceID: refuse a token that is not bound to this device.
	DeviceID string
	// RequireActivation: refuse a token that does not attest this device's activation.
	RequireActivation bool
}

// Validation is a granted validation.
type Validation struct {
	// Source is "online" (the server answered now) or "offline" (the stored token, within its grace period).
	Source string
	// Entitlement is the signed entitlement: use it, not the unsigned fields of License, to unlock features.
	Entitlement *Entitlement
	// License is the server's whole answer (online only; nil offline). Its fields are not signed.
	License map[string]any
	// OfflineToken is the signed token (a compact JWS) the entitlement came from.
	OfflineToken string
	// OfflineUntil is when the offline grace period ends (the token's expiry).
	OfflineUntil time.Time
	// ClockSkewSeconds is how far the local clock is behind (+) or ahead (−) of the server's, measured online.
	ClockSkewSeconds int
	// OnlineError says why the online call failed, for an offline answer given by OfflineFallback.
	OnlineError error
}

// Validate checks the license with the server (on every launch) and verifies the signed entitlement: EdDSA
// only, a trusted key, the issuer, this request's challenge, the product and (when given) the device. The token
// is then stored for ValidateOffline. A rejection deletes the stored token.
func (c *Client) Validate(ctx context.Context, options ValidateOptions) (*Validation, error) {
	return c.validate(ctx, options, true)
}

// validate is Validate with the transport's retries, or one attempt (a watcher's: its schedule is the retry).
func (c *Client) validate(ctx context.Context, options ValidateOptions, retry bool) (*Validation, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	challenge := randomToken(24)
	deviceID := options.DeviceID
	if options.RequireActivation && deviceID == "" {
		var err error
		if deviceID, err = c.DeviceID(); err != nil {
			return nil, err
		}
	}
	body := optionalFields(map[string]any{"licenseKey": options.LicenseKey, "challenge": challenge}, map[string]string{"version": options.Version, "deviceId": deviceID})
	if options.RequireActivation {
		body["requireActivation"] = true
	}
	attempt := func() (*answer, error) { return c.transport.once(ctx, "POST", "/api/v1/validate", body, "") }
	var got *answer
	var err error
	if retry {
		got, err = c.transport.retrying(ctx, attempt, nil)
	} else {
		got, err = attempt()
	}
	if err != nil {
		if !options.OfflineFallback || !IsTransient(err) || ctx.Err() != nil {
			return nil, err
		}
		offline, offlineErr := c.ValidateOffline(ValidateOfflineOptions{LicenseKey: options.LicenseKey, DeviceID: deviceID, RequireActivation: options.RequireActivation})
		if offlineErr != nil {
			// Nothing stored: the network failure is the news. Otherwise why the stored token does not do.
			if ErrorCode(offlineErr) == CodeTokenMissing {
				return nil, err
			}
			return nil, offlineErr
		}
		offline.OnlineError = err
		return offline, nil
	}
	receivedAt := float64(c.clock().UnixMilli())
	if got.json["isValid"] != true {
		// A definite "no": the stored token must not keep the application running offline.
		_ = c.Forget(options.LicenseKey)
		return nil, rejection(got.json)
	}
	token, ok := got.json["offlineCacheToken"].(string)
	if !ok {
		return nil, verificationError(CodeTokenMissing, "The server answered without an offline token.")
	}
	skew, err := skewOf(token, receivedAt)
	if err != nil {
		return nil, err
	}
	now := receivedAt + skew
	entitlement, err := c.verifyToken(ctx, token, verifyOptions{online: true, now: msTime(now), challenge: challenge, deviceID: deviceID, requireActivation: options.RequireActivation})
	if err != nil {
		return nil, err
	}
	if err := c.saveRecord(options.LicenseKey, tokenRecord{V: 1, Token: token, SkewMs: skew, LastSeenAt: now}); err != nil {
		return nil, err
	}
	return &Validation{Source: "online", Entitlement: entitlement, License: got.json, OfflineToken: token, OfflineUntil: entitlement.ExpiresAt, ClockSkewSeconds: int(math.Round(skew / 1000))}, nil
}

func msTime(ms float64) time.Time { return time.UnixMilli(int64(ms)) }

// skewOf is the server clock minus the local clock from a fresh token's iat; 0 within the noise.
func skewOf(token string, receivedAt float64) (float64, error) {
	claims, ok := jwtClaims(token)
	if !ok {
		return 0, verificationError(CodeTokenInvalid, "The offline token is not a JWT.")
	}
	iat, ok := claims["iat"].(float64)
	if !ok {
		return 0, nil
	}
	skew := iat*1000 - receivedAt
	if math.Abs(skew) <= skewNoiseMs {
		return 0, nil
	}
	return skew, nil
}

// ValidateOffline answers from the last token Validate stored (or the installed license file), without a
// network: it must verify against the pinned or cached keys, be within its grace period (exp, with the clock
// difference measured online), be for this product and (when given) this device, and the clock must not have
// been set back.
//
// Errors (*Error, KindVerification): TokenMissing, TokenInvalid, TokenExpired, WrongProduct, WrongDevice,
// ClockRollback, OfflineNotAllowed, KeyUnknown.
func (c *Client) ValidateOffline(options ValidateOfflineOptions) (*Validation, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	record, err := c.loadRecord(options.LicenseKey)
	if err != nil {
		return nil, err
	}
	now := float64(c.clock().UnixMilli()) + record.SkewMs
	toleranceMs := float64(c.tolerance.Milliseconds())
	if now < record.LastSeenAt-toleranceMs {
		return nil, verificationError(CodeClockRollback, "The clock is earlier than a time already seen for this license: it has been set back.")
	}
	entitlement, err := c.verifyToken(context.Background(), record.Token, verifyOptions{online: false, now: msTime(now), deviceID: options.DeviceID, requireActivation: options.RequireActivation})
	if err != nil {
		return nil, err
	}
	if now < float64(entitlement.IssuedAt.UnixMilli())-toleranceMs {
		return nil, verificationError(CodeClockRollback, "The clock is earlier than the time the token was issued: it has been set back.")
	}
	// A license file is the vendor's own grant of offline use, until its ttl.
	if (entitlement.OfflineGraceDays == nil || *entitlement.OfflineGraceDays == 0) && entitlement.Claims["kind"] != licenseFileKind {
		return nil, verificationError(CodeOfflineNotAllowed, "This license has no offline grace period: it must be validated online.")
	}
	if now > record.LastSeenAt {
		// Best effort: a read-only store still answers offline (it only loses the rollback high-water mark).
		record.LastSeenAt = now
		_ = c.saveRecord(options.LicenseKey, record)
	}
	return &Validation{Source: "offline", Entitlement: entitlement, OfflineToken: record.Token, OfflineUntil: entitlement.ExpiresAt, ClockSkewSeconds: int(math.Round(record.SkewMs / 1000))}, nil
}

// DeactivateOptions are the inputs of Deactivate.
type DeactivateOptions struct {
	LicenseKey string
	// DeviceID defaults to the installation id (as Activate).
	DeviceID string
}

// Deactivation is a freed seat.
type Deactivation struct {
	// RemainingActivations is nil when a retry found the seat already freed by the first, unanswered attempt.
	RemainingActivations *int
}

// Deactivate frees the seat of a device (default: this installation) and deletes the stored token. Safe to
// retry: when an attempt's answer was lost and the retry finds the seat already free, it succeeds with
// RemainingActivations nil.
//
// Errors: rejections ActivationNotFound, LicenseNotFound.
func (c *Client) Deactivate(ctx context.Context, options DeactivateOptions) (*Deactivation, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	deviceID, err := c.deviceOrInstallation(options.DeviceID)
	if err != nil {
		return nil, err
	}
	unanswered := false
	got, err := c.transport.retrying(ctx, func() (*answer, error) {
		return c.transport.once(ctx, "POST", "/api/v1/deactivate", map[string]any{"licenseKey": options.LicenseKey, "deviceId": deviceID}, "")
	}, func(err error) {
		var e *Error
		if errors.As(err, &e) && e.Kind == KindNetwork {
			unanswered = true
		}
	})
	if err != nil {
		return nil, err
	}
	if got.json["deactivated"] != true && !(unanswered && got.json["errorCode"] == CodeActivationNotFound) {
		return nil, rejection(got.json)
	}
	if err := c.Forget(options.LicenseKey); err != nil {
		return nil, err
	}
	result := &Deactivation{}
	if remaining, ok := got.json["remainingActivations"].(float64); ok {
		n := int(remaining)
		result.RemainingActivations = &n
	}
	return result, nil
}

// Forget deletes the stored token (or installed license file) of a license, e.g. when the user removes the key.
func (c *Client) Forget(licenseKey string) error {
	if err := requireKey(licenseKey); err != nil {
		return err
	}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	return storeError(c.store.Delete(c.recordKey(licenseKey)))
}

// FetchKeys fetches the server's JWKS now (also useful at build time, to save the keys you then pin with
// Config.JWKS). With pinned keys it returns them without a request.
func (c *Client) FetchKeys(ctx context.Context) (*JWKS, error) {
	keys, err := c.keys.fetch(ctx)
	if err != nil {
		return nil, err
	}
	return &JWKS{Keys: keys}, nil
}

// digest names a license in the store, so the store never holds the key itself.
func (c *Client) digest(licenseKey string) string {
	return sha256Hex(c.Issuer + "\n" + normalizeKey(licenseKey))[:32]
}

func (c *Client) recordKey(licenseKey string) string { return "license:" + c.digest(licenseKey) }
func (c *Client) usageName(licenseKey string) string { return "usage:" + c.digest(licenseKey) }

func (c *Client) saveRecord(licenseKey string, record tokenRecord) error {
	return c.saveRecordAt(c.recordKey(licenseKey), record)
}

func (c *Client) saveRecordAt(key string, record tokenRecord) error {
	encoded, err := json.Marshal(record)
	if err != nil {
		return storeError(err)
	}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	return storeError(c.store.Set(key, string(encoded)))
}

func (c *Client) loadRecord(licenseKey string) (tokenRecord, error) {
	raw, ok, err := c.store.Get(c.recordKey(licenseKey))
	if err != nil {
		return tokenRecord{}, storeError(err)
	}
	if !ok || raw == "" {
		return tokenRecord{}, verificationError(CodeTokenMissing, "No verified token is stored for this license: validate online first.")
	}
	var fields map[string]any
	if json.Unmarshal([]byte(raw), &fields) != nil {
		return tokenRecord{}, verificationError(CodeTokenInvalid, "The stored token record is not valid JSON: tampered or corrupted.")
	}
	v, _ := fields["v"].(float64)
	token, tokenOK := fields["token"].(string)
	skew, skewOK := fields["skewMs"].(float64)
	lastSeen, lastOK := fields["lastSeenAt"].(float64)
	if v != 1 || !tokenOK || !skewOK || !lastOK {
		return tokenRecord{}, verificationError(CodeTokenInvalid, "The stored token record is malformed: tampered or corrupted.")
	}
	return tokenRecord{V: 1, Token: token, SkewMs: skew, LastSeenAt: lastSeen}, nil
}
