// Package keyforge is the Go client SDK of the Keyforge licensing API: activate, validate (online, with a
// signed offline token checked against the server's Ed25519 keys, and offline from the stored token), license
// files (plain and encrypted), air-gapped activation, floating seats, metering and a background license watcher
// (Watch). It uses the standard library only and behaves as the TypeScript SDK (@keyforge/client) does: the same
// requests, the same checks in the same order, the same error codes. Both are held to one conformance suite
// (sdks/conformance in the repository).
//
//	client, err := keyforge.New(keyforge.Config{ServerURL: "https://licenses.example.com", Product: "Acme Studio"})
//	_, err = client.Activate(ctx, keyforge.ActivateOptions{LicenseKey: key})        // once per installation
//	v, err := client.Validate(ctx, keyforge.ValidateOptions{LicenseKey: key, OfflineFallback: true}) // every launch
//	if v != nil { unlock(v.Entitlement.Features) }
//
// # Errors
//
// Every failure is an *Error whose Code is one of the TypeScript SDK's / REST API's codes (CodeSeatsExhausted,
// CodeTokenExpired …). Use errors.As to read it, or errors.Is with the Err… sentinels (compared by code). A call
// returns a result only when it was granted: an HTTP 200 rejection is an *Error of KindRejected. Two failures are
// not the SDK's and are passed on as they are: the caller's own context (a cancelled or expired ctx returns
// ctx.Err()) and the Store's own errors (wrapped; errors.Is and errors.As reach them).
//
// # Goroutines
//
// A Client is safe for concurrent use by multiple goroutines; create one per server and application and share
// it. A FloatingSession heartbeats on its own goroutine (timers) and is safe for concurrent use; its OnLost and
// OnHeartbeatError callbacks run on other goroutines than the caller's. A Watcher checks on its own goroutine and
// calls its callbacks there, one at a time, until Stop or its context ends (Check then returns ErrWatcherStopped).
// MemoryStore and FileStore are safe for concurrent use; a FileStore directory belongs to one process at a time,
// as a Client's store.
package keyforge
