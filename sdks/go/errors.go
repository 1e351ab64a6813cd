package keyforge

import (
	"errors"
	"fmt"
	"time"
)

// Kind says which family an *Error belongs to, as the TypeScript SDK's error classes do.
type Kind string

const (
	// KindRejected: the server answered and refused (HTTP 200 with isValid: false); never retried.
	KindRejected Kind = "rejected"
	// KindAPI: an HTTP error answer (InvalidRequest, RateLimited, ServiceUnavailable …) or an answer that is not the API's JSON.
	KindAPI Kind = "api"
	// KindNetwork: no answer (the connection failed, or the per-attempt timeout passed).
	KindNetwork Kind = "network"
	// KindVerification: a signed offline token or license file did not check out.
	KindVerification Kind = "verification"
	// KindSession: a floating session's own failure (LeaseLapsed, SessionExpired after checkin).
	KindSession Kind = "session"
	// KindLocal: a local failure (MachineIdUnavailable, UsageQueueFull, a store that cannot be written).
	KindLocal Kind = "local"
)

// Error codes: exactly those of the TypeScript SDK (sdk/src/errors.ts) and of the REST API, grouped under the Kind
// that carries them (docs/scripts/error-reference.ts reads these groups for the error reference).
const (
	// KindRejected: rejection codes the server sends inside an HTTP 200 answer.
	CodeLicenseNotFound        = "LicenseNotFound"
	CodeLicenseRevoked         = "LicenseRevoked"
	CodeSuspended              = "Suspended"
	CodeLicenseExpired         = "LicenseExpired"
	CodeSeatsExhausted         = "SeatsExhausted"
	CodeVersionNotSupported    = "VersionNotSupported"
	CodeDeviceIDRequired       = "DeviceIdRequired"
	CodeProductMismatch        = "ProductMismatch"
	CodeActivationNotFound     = "ActivationNotFound"
	CodeDeviceNotActivated     = "DeviceNotActivated"
	CodeFloatingNotEnabled     = "FloatingNotEnabled"
	CodeFloatingSeatsExhausted = "FloatingSeatsExhausted"
	CodeSessionInvalid         = "SessionInvalid"
	CodeSessionExpired         = "SessionExpired"
	CodeQuotaExceeded          = "QuotaExceeded"

	// KindAPI: HTTP error answers ({"error":{"code"}}), plus InvalidResponse for an answer that is not the API's JSON.
	CodeInvalidRequest     = "InvalidRequest"
	CodeNonceRequired      = "NonceRequired"
	CodeNonceInvalid       = "NonceInvalid"
	CodeRateLimited        = "RateLimited"
	CodeServiceUnavailable = "ServiceUnavailable"
	CodeInternalError      = "InternalError"
	CodeInvalidResponse    = "InvalidResponse"

	// KindNetwork: no answer.
	CodeNetworkError = "NetworkError"
	CodeTimeout      = "Timeout"

	// KindVerification: why a signed offline token (or license file) was refused.
	CodeTokenMissing      = "TokenMissing"
	CodeTokenInvalid      = "TokenInvalid"
	CodeTokenExpired      = "TokenExpired"
	CodeKeyUnknown        = "KeyUnknown"
	CodeWrongIssuer       = "WrongIssuer"
	CodeWrongProduct      = "WrongProduct"
	CodeWrongDevice       = "WrongDevice"
	CodeChallengeMismatch = "ChallengeMismatch"
	CodeClockRollback     = "ClockRollback"
	CodeOfflineNotAllowed = "OfflineNotAllowed"
	// A downloaded release artifact did not check out: signature, size, SHA-256 or SHA-512.
	CodeArtifactIntegrity = "ArtifactIntegrity"

	// KindSession: a floating session's own failure.
	CodeLeaseLapsed = "LeaseLapsed"

	// KindLocal: local failures.
	CodeMachineIDUnavailable = "MachineIdUnavailable"
	CodeUsageQueueFull       = "UsageQueueFull"
	// A release download that cannot be written (its temporary file or the caller's writer): not retried.
	CodeFileWriteFailed = "FileWriteFailed"
)

// Error is the one error type of the SDK: every failure a call reports is an *Error whose Code says why
// (use errors.As, or errors.Is with the Err… sentinels, which compare codes). A call returns a result only
// when it was granted, so an HTTP 200 rejection can never be mistaken for a success.
//
// The caller's own context cancellation is the one exception: it is returned as ctx.Err().
type Error struct {
	// Code is the machine-readable reason (the constants above; a newer server may send others).
	Code string
	// Kind is the family of the failure.
	Kind Kind
	// Message is a human-readable explanation (never contains a license key or a token).
	Message string
	// Status is the HTTP status of an API error (0 otherwise; 200 for a rejection).
	Status int
	// RequestID is the server's X-Request-Id (quote it in a support request).
	RequestID string
	// Fields holds the per-field problems of an InvalidRequest.
	Fields map[string]string
	// RetryAfter is the Retry-After the server sent (nil when none).
	RetryAfter *time.Duration
	// Response is the server's whole answer of a rejection (for QuotaExceeded: total, limit, remaining …).
	Response map[string]any
	// Err is the underlying cause, when there is one.
	Err error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "keyforge: " + e.Code
	}
	return fmt.Sprintf("keyforge: %s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code, so errors.Is(err, keyforge.ErrSeatsExhausted) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is (compared by Code only).
var (
	ErrLicenseNotFound        = &Error{Code: CodeLicenseNotFound}
	ErrLicenseRevoked         = &Error{Code: CodeLicenseRevoked}
	ErrSuspended              = &Error{Code: CodeSuspended}
	ErrLicenseExpired         = &Error{Code: CodeLicenseExpired}
	ErrSeatsExhausted         = &Error{Code: CodeSeatsExhausted}
	ErrVersionNotSupported    = &Error{Code: CodeVersionNotSupported}
	ErrDeviceIDRequired       = &Error{Code: CodeDeviceIDRequired}
	ErrProductMismatch        = &Error{Code: CodeProductMismatch}
	ErrActivationNotFound     = &Error{Code: CodeActivationNotFound}
	ErrDeviceNotActivated     = &Error{Code: CodeDeviceNotActivated}
	ErrFloatingNotEnabled     = &Error{Code: CodeFloatingNotEnabled}
	ErrFloatingSeatsExhausted = &Error{Code: CodeFloatingSeatsExhausted}
	ErrSessionInvalid         = &Error{Code: CodeSessionInvalid}
	ErrSessionExpired         = &Error{Code: CodeSessionExpired}
	ErrQuotaExceeded          = &Error{Code: CodeQuotaExceeded}
	ErrInvalidRequest         = &Error{Code: CodeInvalidRequest}
	ErrNonceInvalid           = &Error{Code: CodeNonceInvalid}
	ErrRateLimited            = &Error{Code: CodeRateLimited}
	ErrServiceUnavailable     = &Error{Code: CodeServiceUnavailable}
	ErrInvalidResponse        = &Error{Code: CodeInvalidResponse}
	ErrNetwork                = &Error{Code: CodeNetworkError}
	ErrTimeout                = &Error{Code: CodeTimeout}
	ErrTokenMissing           = &Error{Code: CodeTokenMissing}
	ErrTokenInvalid           = &Error{Code: CodeTokenInvalid}
	ErrTokenExpired           = &Error{Code: CodeTokenExpired}
	ErrKeyUnknown             = &Error{Code: CodeKeyUnknown}
	ErrWrongIssuer            = &Error{Code: CodeWrongIssuer}
	ErrWrongProduct           = &Error{Code: CodeWrongProduct}
	ErrWrongDevice            = &Error{Code: CodeWrongDevice}
	ErrChallengeMismatch      = &Error{Code: CodeChallengeMismatch}
	ErrClockRollback          = &Error{Code: CodeClockRollback}
	ErrOfflineNotAllowed      = &Error{Code: CodeOfflineNotAllowed}
	ErrArtifactIntegrity      = &Error{Code: CodeArtifactIntegrity}
	ErrLeaseLapsed            = &Error{Code: CodeLeaseLapsed}
	ErrMachineIDUnavailable   = &Error{Code: CodeMachineIDUnavailable}
	ErrUsageQueueFull         = &Error{Code: CodeUsageQueueFull}
	ErrFileWriteFailed        = &Error{Code: CodeFileWriteFailed}
)

// ErrorCode returns the Code of err when it is (or wraps) an *Error, else "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsTransient reports whether err is worth retrying later: no answer, or HTTP 429, 502, 503, 504. Definite
// answers (a rejection, a refused token, a malformed request) are not.
func IsTransient(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if e.Kind == KindNetwork {
		return true
	}
	return e.Kind == KindAPI && (e.Status == 429 || e.Status == 502 || e.Status == 503 || e.Status == 504)
}

func verificationError(code, message string) *Error {
	return &Error{Code: code, Kind: KindVerification, Message: message}
}

func rejection(answer map[string]any) *Error {
	code, _ := answer["errorCode"].(string)
	if code == "" {
		code = "Rejected"
	}
	message, _ := answer["message"].(string)
	if message == "" {
		message = "The server refused the request."
	}
	return &Error{Code: code, Kind: KindRejected, Message: message, Status: 200, Response: answer}
}
