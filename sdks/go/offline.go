package keyforge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
)

// LicenseFileOptions say how to open and check a signed license file.
type LicenseFileOptions struct {
	// LicenseKey opens an encrypted file, and names the license in the store (rollback check, install).
	LicenseKey string
	// DeviceID: a device file must be bound to it (an encrypted device file opens only with it).
	DeviceID string
	// RequireActivation refuses a file that does not attest this device's activation (deviceActivated).
	RequireActivation bool
	// FetchKeys fetches the server's JWKS when the file's key is not pinned or cached (default: fully offline).
	FetchKeys bool
}

// VerifyLicenseFile verifies a signed license file offline (-----BEGIN KEYFORGE LICENSE FILE-----): opened
// with the license key when encrypted, signed by a pinned or cached key (EdDSA), not expired, for this product
// and (when given) bound to this device, and the clock not set back.
//
// Errors (KindVerification): TokenInvalid (damaged, edited, not a license file, or it does not open with this
// key and device), TokenExpired, WrongDevice, WrongProduct, ClockRollback, KeyUnknown.
func (c *Client) VerifyLicenseFile(ctx context.Context, text string, options LicenseFileOptions) (*Entitlement, error) {
	token, err := openLicenseFile(text, options.LicenseKey, options.DeviceID)
	if err != nil {
		return nil, err
	}
	var highWater *float64
	if options.LicenseKey != "" {
		if record, err := c.loadRecord(options.LicenseKey); err == nil {
			highWater = &record.LastSeenAt
		}
	}
	return c.verifyFileToken(ctx, token, options, highWater, "")
}

// InstallLicenseFile verifies a license file (as VerifyLicenseFile) and stores it for the license, so
// ValidateOffline answers from it until it expires.
func (c *Client) InstallLicenseFile(ctx context.Context, text string, options LicenseFileOptions) (*Validation, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	token, err := openLicenseFile(text, options.LicenseKey, options.DeviceID)
	if err != nil {
		return nil, err
	}
	return c.storeFile(ctx, c.recordKey(options.LicenseKey), token, options, "")
}

// FetchLicenseFileOptions are the inputs of FetchLicenseFile.
type FetchLicenseFileOptions struct {
	LicenseKey string
	// DeviceID asks for a file bound to this device, which must hold an activation.
	DeviceID string
	// Encrypt asks for a file that reveals nothing without the key (and device).
	Encrypt bool
}

// LicenseFileValidation is an installed license file.
type LicenseFileValidation struct {
	Validation
	// LicenseFile is the file's text (keep it, e.g. to install it again elsewhere).
	LicenseFile string
}

// FetchLicenseFile fetches a signed license file while online (POST /api/v1/license-file) and installs it, so
// the application keeps working offline until the file expires, whatever the license's offline grace period.
//
// Errors: rejections LicenseNotFound, LicenseRevoked, Suspended, LicenseExpired, DeviceNotActivated; verification
// errors when the file does not check out.
func (c *Client) FetchLicenseFile(ctx context.Context, options FetchLicenseFileOptions) (*LicenseFileValidation, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	body := optionalFields(map[string]any{"licenseKey": options.LicenseKey}, map[string]string{"deviceId": options.DeviceID})
	if options.Encrypt {
		body["encrypt"] = true
	}
	got, err := c.transport.retrying(ctx, func() (*answer, error) {
		return c.transport.once(ctx, "POST", "/api/v1/license-file", body, "")
	}, nil)
	if err != nil {
		return nil, err
	}
	if got.json["isValid"] != true {
		return nil, rejection(got.json)
	}
	file, ok := got.json["licenseFile"].(string)
	if !ok {
		return nil, &Error{Code: CodeInvalidResponse, Kind: KindAPI, Status: 200, Message: "POST /api/v1/license-file answered without a file."}
	}
	validation, err := c.InstallLicenseFile(ctx, file, LicenseFileOptions{LicenseKey: options.LicenseKey, DeviceID: options.DeviceID, RequireActivation: options.DeviceID != ""})
	if err != nil {
		return nil, err
	}
	return &LicenseFileValidation{Validation: *validation, LicenseFile: file}, nil
}

// verifyFileToken verifies a license file's token: a signed file (kind), then the clock checks of ValidateOffline.
func (c *Client) verifyFileToken(ctx context.Context, token string, options LicenseFileOptions, highWater *float64, challenge string) (*Entitlement, error) {
	now := float64(c.clock().UnixMilli())
	toleranceMs := float64(c.tolerance.Milliseconds())
	if highWater != nil && now < *highWater-toleranceMs {
		return nil, verificationError(CodeClockRollback, "The clock is earlier than a time already seen for this license: it has been set back.")
	}
	entitlement, err := c.verifyToken(ctx, token, verifyOptions{online: options.FetchKeys, now: msTime(now), deviceID: options.DeviceID, requireActivation: options.RequireActivation, challenge: challenge})
	if err != nil {
		return nil, err
	}
	if entitlement.Claims["kind"] != licenseFileKind {
		return nil, verificationError(CodeTokenInvalid, "This is not a license file (an online token, or something else).")
	}
	if now < float64(entitlement.IssuedAt.UnixMilli())-toleranceMs {
		return nil, verificationError(CodeClockRollback, "The clock is earlier than the time the license file was issued: it has been set back.")
	}
	return entitlement, nil
}

// storeFile verifies a license file's token and stores it as the license's record (ValidateOffline answers from it).
func (c *Client) storeFile(ctx context.Context, recordKey, token string, options LicenseFileOptions, challenge string) (*Validation, error) {
	var highWater *float64
	if raw, ok, err := c.store.Get(recordKey); err != nil {
		return nil, storeError(err)
	} else if ok {
		var previous map[string]any
		if json.Unmarshal([]byte(raw), &previous) == nil {
			if seen, ok := previous["lastSeenAt"].(float64); ok {
				highWater = &seen
			}
		}
	}
	entitlement, err := c.verifyFileToken(ctx, token, options, highWater, challenge)
	if err != nil {
		return nil, err
	}
	// A file is verified with the local clock (an air-gapped machine has no other): no clock difference is assumed.
	lastSeen := float64(c.clock().UnixMilli())
	if highWater != nil {
		lastSeen = math.Max(lastSeen, *highWater)
	}
	if err := c.saveRecordAt(recordKey, tokenRecord{V: 1, Token: token, SkewMs: 0, LastSeenAt: lastSeen}); err != nil {
		return nil, err
	}
	return &Validation{Source: "offline", Entitlement: entitlement, OfflineToken: token, OfflineUntil: entitlement.ExpiresAt}, nil
}

// deviceKeyRecord is what the store keeps of a license's offline activation: the device key pairs.
type deviceKeyRecord struct {
	V int `json:"v"`
	// Active is the key of the activation the installed license file is bound to.
	Active *activeDeviceKey `json:"active,omitempty"`
	// Pending is the key of the request written last and not yet answered.
	Pending *pendingDeviceKey `json:"pending,omitempty"`
}

type activeDeviceKey struct {
	deviceKey
	DeviceID   string `json:"deviceId"`
	Activation string `json:"activation"`
	License    string `json:"license"`
}

type pendingDeviceKey struct {
	deviceKey
	DeviceID  string `json:"deviceId"`
	Challenge string `json:"challenge"`
}

func (c *Client) deviceKeys(digest string) deviceKeyRecord {
	raw, ok, err := c.store.Get("device-key:" + digest)
	var record deviceKeyRecord
	if err != nil || !ok || json.Unmarshal([]byte(raw), &record) != nil || record.V != 1 {
		return deviceKeyRecord{V: 1}
	}
	return record
}

func (c *Client) setJSON(key string, value any) error {
	encoded, err := json.Marshal(value)
	if err != nil {
		return storeError(err)
	}
	return storeError(c.store.Set(key, string(encoded)))
}

// ActivationRequestOptions are the inputs of CreateActivationRequest.
type ActivationRequestOptions struct {
	LicenseKey string
	// DeviceID defaults to the installation id (as Activate).
	DeviceID string
	// DeviceName is a label the vendor (and the customer) sees.
	DeviceName string
	// Version is the running application version, checked against the license's minVersion/maxVersion.
	Version string
}

// ActivationRequest is an activation request, to carry to a machine that reaches the server.
type ActivationRequest struct {
	// Request is the armored request (-----BEGIN KEYFORGE ACTIVATION REQUEST-----).
	Request string
	// Compact is the same request on one line (KFREQ1:…), for a QR code.
	Compact  string
	DeviceID string
	// Challenge is the request's challenge: the response must echo it.
	Challenge string
}

// CreateActivationRequest writes an activation request for a machine that cannot reach the server. It carries
// this device's id and name, a fresh Ed25519 public key (the private half stays in the store), a random
// challenge, the key's public hint and a MAC under the license key (the key itself is never in it). A newer
// request replaces an unanswered one.
func (c *Client) CreateActivationRequest(options ActivationRequestOptions) (*ActivationRequest, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	deviceID, err := c.deviceOrInstallation(options.DeviceID)
	if err != nil {
		return nil, err
	}
	key, err := newDeviceKey()
	if err != nil {
		return nil, fmt.Errorf("keyforge: no device key could be generated: %w", err)
	}
	fields := requestFields{
		Hint: keyHint(options.LicenseKey), Device: deviceID, Pub: key.Pub, Challenge: randomToken(32),
		Iat: int64(math.Floor(float64(c.clock().UnixMilli()) / 1000)), Product: append([]string{}, c.Products...),
	}
	if options.DeviceName != "" {
		fields.Name = &options.DeviceName
	}
	if options.Version != "" {
		fields.Version = &options.Version
	}
	mac := requestMac(options.LicenseKey, fields)
	digest := c.digest(options.LicenseKey)
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	record := c.deviceKeys(digest)
	record.Pending = &pendingDeviceKey{deviceKey: key, DeviceID: deviceID, Challenge: fields.Challenge}
	if err := c.setJSON("device-key:"+digest, record); err != nil {
		return nil, err
	}
	if err := storeError(c.store.Set("offline-request:"+fields.Challenge, digest)); err != nil {
		return nil, err
	}
	request, compact := encodeRequest(fields, mac)
	return &ActivationRequest{Request: request, Compact: compact, DeviceID: deviceID, Challenge: fields.Challenge}, nil
}

// ApplyActivationResponse installs the answer to this installation's activation request: a device license file
// that must echo the request's challenge, be bound to its device and device key, attest the activation and
// verify as VerifyLicenseFile does. ValidateOffline then answers from it until it expires. licenseKey is needed
// only when the response was encrypted ("" otherwise).
//
// Errors (KindVerification): ChallengeMismatch (not the answer to this installation's last request, or applied
// already), WrongDevice, TokenInvalid (altered) …
func (c *Client) ApplyActivationResponse(ctx context.Context, text, licenseKey string) (*Validation, error) {
	var token string
	var err error
	if licenseKey != "" {
		record := c.deviceKeys(c.digest(licenseKey))
		deviceID := ""
		if record.Pending != nil {
			deviceID = record.Pending.DeviceID
		}
		token, err = openLicenseFile(text, licenseKey, deviceID)
	} else {
		token, err = openLicenseFile(text, "", "")
	}
	if err != nil {
		return nil, err
	}
	claims, ok := jwtClaims(token)
	if !ok {
		return nil, verificationError(CodeTokenInvalid, "The activation response is damaged: its token is not readable.")
	}
	// The request this answers: named by the challenge the (signed) file echoes, checked again after verification.
	challenge, _ := claims["nonce"].(string)
	c.storeMu.Lock()
	digest, found, _ := c.store.Get("offline-request:" + challenge)
	c.storeMu.Unlock()
	var pending *pendingDeviceKey
	if found && challenge != "" {
		if p := c.deviceKeys(digest).Pending; p != nil && p.Challenge == challenge {
			pending = p
		}
	}
	if pending == nil {
		return nil, verificationError(CodeChallengeMismatch, "This is not the answer to the last activation request of this installation (or it was applied already).")
	}
	validation, err := c.storeFile(ctx, "license:"+digest, token, LicenseFileOptions{DeviceID: pending.DeviceID, RequireActivation: true}, pending.Challenge)
	if err != nil {
		return nil, err
	}
	activation, isString := validation.Entitlement.Claims["activation"].(string)
	if validation.Entitlement.Claims["deviceKey"] != pending.Pub || !isString {
		c.storeMu.Lock()
		_ = c.store.Delete("license:" + digest)
		c.storeMu.Unlock()
		return nil, verificationError(CodeWrongDevice, "The response is bound to another device key: not the answer to this installation's request.")
	}
	active := &activeDeviceKey{deviceKey: pending.deviceKey, DeviceID: pending.DeviceID, Activation: activation, License: validation.Entitlement.LicenseID}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	if err := c.setJSON("device-key:"+digest, deviceKeyRecord{V: 1, Active: active}); err != nil {
		return nil, err
	}
	_ = c.store.Delete("offline-request:" + pending.Challenge)
	return validation, nil
}

// OfflineDeactivation is the proof to carry to the server, which frees the seat.
type OfflineDeactivation struct {
	// Proof is the armored proof (-----BEGIN KEYFORGE DEACTIVATION PROOF-----), signed by this device's key.
	Proof        string
	ActivationID string
	DeviceID     string
}

// DeactivateOffline deletes the license file (and token) stored for the license and returns a proof, signed
// with this device's private key, that the vendor (or the customer portal) uploads to free the seat. Keep the
// proof until it has been uploaded: the file it replaces is gone.
//
// Errors: TokenMissing when this installation holds no offline activation of the license.
func (c *Client) DeactivateOffline(licenseKey string) (*OfflineDeactivation, error) {
	if err := requireKey(licenseKey); err != nil {
		return nil, err
	}
	digest := c.digest(licenseKey)
	c.storeMu.Lock()
	active := c.deviceKeys(digest).Active
	c.storeMu.Unlock()
	if active == nil {
		return nil, verificationError(CodeTokenMissing, "This installation holds no offline activation of this license (apply an activation response first).")
	}
	private, ok := active.JWK.privateKey()
	if !ok {
		return nil, verificationError(CodeTokenInvalid, "The stored device key is damaged.")
	}
	proof := signDeactivationProof(private, active.Activation, active.License, active.DeviceID, int64(math.Floor(float64(c.clock().UnixMilli())/1000)), randomToken(16))
	if err := c.Forget(licenseKey); err != nil {
		return nil, err
	}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	if err := storeError(c.store.Delete("device-key:" + digest)); err != nil {
		return nil, err
	}
	return &OfflineDeactivation{Proof: proof, ActivationID: active.Activation, DeviceID: active.DeviceID}, nil
}
