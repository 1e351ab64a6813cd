package keyforge

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Entitlement is what the server signed (the claims of the offline token or license file). Unlike the rest of a
// validate answer, every field here is covered by the Ed25519 signature: unlock features from it.
type Entitlement struct {
	// LicenseID is the license's id (sub), never the key.
	LicenseID string
	TenantID  string
	ProductID string
	// Product is the license's product.
	Product string
	// BundleProducts lists the member products when the license is for a bundle, else nil.
	BundleProducts []string
	Features       []string
	// LicenseExpiresAt is the license's own expiry (ISO 8601), nil for perpetual.
	LicenseExpiresAt *string
	IsTrial          bool
	NodeLocked       bool
	// OfflineGraceDays is the days the application may run offline on this token; nil: none.
	OfflineGraceDays     *float64
	MaintenanceExpiresAt *string
	MinVersion           *string
	MaxVersion           *string
	// Device is the deviceId the token is bound to, or "".
	Device string
	// DeviceActivated is true when the server checked that Device holds an activation.
	DeviceActivated bool
	// IssuedAt is when the server signed it (its clock).
	IssuedAt time.Time
	// ExpiresAt is when it stops verifying: the end of the offline grace period (or of the license file).
	ExpiresAt time.Time
	// KeyID is the kid of the key that signed it.
	KeyID string
	// Claims holds every claim as signed, including any a newer server adds.
	Claims map[string]any
}

type verifyOptions struct {
	online            bool
	now               time.Time
	deviceID          string
	requireActivation bool
	challenge         string
}

func tokenInvalid(reason string) *Error {
	return verificationError(CodeTokenInvalid, fmt.Sprintf("The offline token is not valid (%s): tampered, or not signed by this server.", reason))
}

func decodeSegment(segment string) ([]byte, bool) {
	out, err := base64.RawURLEncoding.DecodeString(segment)
	return out, err == nil
}

func jsonObjectOf(data []byte) (map[string]any, bool) {
	var value any
	if json.Unmarshal(data, &value) != nil {
		return nil, false
	}
	object, ok := value.(map[string]any)
	return object, ok
}

// verifyToken verifies a compact JWS: EdDSA only, a trusted key, issuer, times, then product, device and challenge
// (the checks of the TypeScript SDK's verifyOfflineToken, in the same order, so the same token gets the same code).
func (c *Client) verifyToken(ctx context.Context, token string, o verifyOptions) (*Entitlement, error) {
	kid, claims, err := c.verifyJWS(ctx, token, o.online)
	if err != nil {
		return nil, err
	}
	return c.checkClaims(kid, claims, o)
}

// verifyJWS checks a compact JWS's form, algorithm (EdDSA only), key (a trusted kid) and signature, and returns the
// kid and the payload's claims. Shared by offline tokens, license files and artifact signatures.
func (c *Client) verifyJWS(ctx context.Context, token string, online bool) (string, map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", nil, tokenInvalid("not a compact JWS")
	}
	headerBytes, ok := decodeSegment(parts[0])
	if !ok {
		return "", nil, tokenInvalid("its header is not base64url")
	}
	header, ok := jsonObjectOf(headerBytes)
	if !ok {
		return "", nil, tokenInvalid("its header is not a JSON object")
	}
	if _, present := header["crit"]; present {
		return "", nil, tokenInvalid("it names critical header parameters")
	}
	alg, _ := header["alg"].(string)
	if alg != "EdDSA" {
		return "", nil, tokenInvalid(fmt.Sprintf("algorithm %q is not allowed: only EdDSA", alg))
	}
	kidValue, present := header["kid"]
	if !present {
		return "", nil, verificationError(CodeTokenInvalid, "The token names no signing key (kid).")
	}
	kid, isString := kidValue.(string)
	if !isString {
		return "", nil, verificationError(CodeKeyUnknown, "The token's kid is not a key id.")
	}
	key, err := c.keys.keyFor(ctx, kid, online)
	if err != nil {
		return "", nil, err
	}
	signature, ok := decodeSegment(parts[2])
	if !ok || len(signature) != ed25519.SignatureSize {
		return "", nil, tokenInvalid("its signature is malformed")
	}
	if !ed25519.Verify(key, []byte(parts[0]+"."+parts[1]), signature) {
		return "", nil, tokenInvalid("the signature does not verify")
	}
	payloadBytes, ok := decodeSegment(parts[1])
	if !ok {
		return "", nil, tokenInvalid("its payload is not base64url")
	}
	claims, ok := jsonObjectOf(payloadBytes)
	if !ok {
		return "", nil, tokenInvalid("its payload is not a JSON object")
	}
	return kid, claims, nil
}

// checkClaims makes the claim checks of an offline token (issuer, times, product, device, challenge).
func (c *Client) checkClaims(kid string, claims map[string]any, o verifyOptions) (*Entitlement, error) {
	// Presence, in the order the reference implementation checks it: iss, product, exp, iat, sub.
	for _, claim := range []string{"iss", "product", "exp", "iat", "sub"} {
		if _, present := claims[claim]; !present {
			if claim == "iss" {
				return nil, verificationError(CodeWrongIssuer, fmt.Sprintf("The offline token was not issued by %s.", c.Issuer))
			}
			return nil, tokenInvalid(fmt.Sprintf("missing required %q claim", claim))
		}
	}
	if iss, _ := claims["iss"].(string); iss != c.Issuer {
		return nil, verificationError(CodeWrongIssuer, fmt.Sprintf("The offline token was not issued by %s.", c.Issuer))
	}
	now := math.Floor(float64(o.now.UnixMilli()) / 1000)
	tolerance := c.tolerance.Seconds()
	iat, isNumber := claims["iat"].(float64)
	if !isNumber {
		return nil, tokenInvalid(`"iat" claim must be a number`)
	}
	if nbfValue, present := claims["nbf"]; present {
		nbf, isNumber := nbfValue.(float64)
		if !isNumber {
			return nil, tokenInvalid(`"nbf" claim must be a number`)
		}
		if nbf > now+tolerance {
			return nil, tokenInvalid(`"nbf" claim timestamp check failed`)
		}
	}
	exp, isNumber := claims["exp"].(float64)
	if !isNumber {
		return nil, tokenInvalid(`"exp" claim must be a number`)
	}
	if exp <= now-tolerance {
		return nil, verificationError(CodeTokenExpired, "The offline token has expired: the offline grace period is over; validate online.")
	}

	product, _ := claims["product"].(string)
	bundle := stringsOf(claims["bundleProducts"])
	if !c.acceptsProduct(product, bundle) {
		return nil, verificationError(CodeWrongProduct, fmt.Sprintf("The license is for %q, not %s.", product, quoteList(c.Products)))
	}
	device, _ := claims["device"].(string)
	_, deviceIsString := claims["device"].(string)
	if o.deviceID != "" && (!deviceIsString || device != o.deviceID) {
		if !deviceIsString {
			return nil, verificationError(CodeWrongDevice, "The token is not bound to a device, but this check asks for one.")
		}
		return nil, verificationError(CodeWrongDevice, "The token is bound to another device.")
	}
	activated, _ := claims["deviceActivated"].(bool)
	if o.requireActivation && !activated {
		return nil, verificationError(CodeWrongDevice, "The token does not attest that this device holds an activation: validate online with requireActivation.")
	}
	if o.challenge != "" {
		if nonce, _ := claims["nonce"].(string); nonce != o.challenge {
			return nil, verificationError(CodeChallengeMismatch, "The token does not echo this request's challenge: a replayed or foreign answer.")
		}
	}
	entitlement := &Entitlement{
		Product:              product,
		BundleProducts:       bundle,
		Features:             stringsOf(claims["features"]),
		LicenseExpiresAt:     stringPointer(claims["licenseExpiresAt"]),
		MaintenanceExpiresAt: stringPointer(claims["maintenanceExpiresAt"]),
		MinVersion:           stringPointer(claims["minVersion"]),
		MaxVersion:           stringPointer(claims["maxVersion"]),
		Device:               device,
		DeviceActivated:      activated,
		IssuedAt:             secondsTime(iat),
		ExpiresAt:            secondsTime(exp),
		KeyID:                kid,
		Claims:               claims,
	}
	entitlement.LicenseID, _ = claims["sub"].(string)
	entitlement.TenantID, _ = claims["tenant"].(string)
	entitlement.ProductID, _ = claims["productId"].(string)
	entitlement.IsTrial, _ = claims["isTrial"].(bool)
	entitlement.NodeLocked, _ = claims["nodeLocked"].(bool)
	if entitlement.Features == nil {
		entitlement.Features = []string{}
	}
	if grace, ok := claims["offlineGraceDays"].(float64); ok {
		entitlement.OfflineGraceDays = &grace
	}
	return entitlement, nil
}

func (c *Client) acceptsProduct(product string, bundle []string) bool {
	for _, accepted := range c.Products {
		if accepted == product {
			return true
		}
		for _, member := range bundle {
			if member == accepted {
				return true
			}
		}
	}
	return false
}

func secondsTime(seconds float64) time.Time {
	return time.UnixMilli(int64(seconds * 1000))
}

// stringsOf is the value as a list of strings, or nil when it is not exactly that.
func stringsOf(value any) []string {
	items, ok := value.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		s, ok := item.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

func stringPointer(value any) *string {
	if s, ok := value.(string); ok {
		return &s
	}
	return nil
}

func quoteList(names []string) string {
	quoted := make([]string, len(names))
	for i, name := range names {
		quoted[i] = fmt.Sprintf("%q", name)
	}
	return strings.Join(quoted, " or ")
}

// jwtClaims decodes a JWT's claims without verifying it (to read iat and nonce before verification).
func jwtClaims(token string) (map[string]any, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, false
	}
	payload, ok := decodeSegment(parts[1])
	if !ok {
		return nil, false
	}
	return jsonObjectOf(payload)
}
