package keyforge

import (
	"context"
	"errors"
	"time"
)

// VerifyTokenOptions are the inputs of VerifyOfflineToken.
type VerifyTokenOptions struct {
	// JWKS holds the trusted keys (the server's /.well-known/jwks.json); required.
	JWKS *JWKS
	// Issuer is the expected iss (the server's PUBLIC_URL); required.
	Issuer string
	// Products are the accepted products (the token's product, or one of its bundleProducts); required.
	Products []string
	// Now is the time to check against (default: time.Now()).
	Now time.Time
	// ClockTolerance is the leeway for clock differences (default 300 s).
	ClockTolerance time.Duration
	// DeviceID: the token must be bound to this device.
	DeviceID string
	// RequireActivation: the token must attest that its device holds an activation.
	RequireActivation bool
	// Challenge: the token must echo it (nonce claim).
	Challenge string
}

// VerifyOfflineToken verifies a signed offline token (or a license file's token) without a client or a network:
// EdDSA only, a key of the given JWKS, the issuer, its times, the product, and the device and challenge when given
// — the checks Validate applies to the server's answer. For example in your own back end, on a token a desktop
// application sent it.
func VerifyOfflineToken(token string, options VerifyTokenOptions) (*Entitlement, error) {
	if options.JWKS == nil || options.Issuer == "" || len(options.Products) == 0 {
		return nil, errors.New("keyforge: VerifyOfflineToken needs JWKS, Issuer and Products")
	}
	now := options.Now
	if now.IsZero() {
		now = time.Now()
	}
	client, err := New(Config{ServerURL: "http://localhost", Issuer: options.Issuer, Products: options.Products, JWKS: options.JWKS, ClockTolerance: options.ClockTolerance, Clock: func() time.Time { return now }})
	if err != nil {
		return nil, err
	}
	return client.verifyToken(context.Background(), token, verifyOptions{now: now, deviceID: options.DeviceID, requireActivation: options.RequireActivation, challenge: options.Challenge})
}
