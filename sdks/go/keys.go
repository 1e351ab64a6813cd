package keyforge

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// JWK is one JSON Web Key as the server publishes it (only Ed25519 public keys are used).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// JWKS is a JSON Web Key Set, as served at /.well-known/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// ParseJWKS reads a JWKS (for example the server's keys saved with your application, to pin them).
func ParseJWKS(data []byte) (*JWKS, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &Error{Code: CodeKeyUnknown, Kind: KindVerification, Message: "the JWKS is not JSON of the form {\"keys\": [...]}", Err: err}
	}
	return &JWKS{Keys: usableKeys(raw.Keys)}, nil
}

// usableKeys keeps the Ed25519 public keys (kty OKP, crv Ed25519, alg absent, EdDSA or Ed25519); entries of
// other types or shapes are skipped, never trusted.
func usableKeys(entries []json.RawMessage) []JWK {
	keys := []JWK{}
	for _, entry := range entries {
		var fields map[string]any
		if json.Unmarshal(entry, &fields) != nil {
			continue
		}
		kty, _ := fields["kty"].(string)
		crv, _ := fields["crv"].(string)
		x, xok := fields["x"].(string)
		alg, algSet := fields["alg"]
		algName, _ := alg.(string)
		if kty != "OKP" || crv != "Ed25519" || !xok || (algSet && algName != "EdDSA" && algName != "Ed25519") {
			continue
		}
		kid, _ := fields["kid"].(string)
		use, _ := fields["use"].(string)
		keys = append(keys, JWK{Kty: kty, Crv: crv, X: x, Kid: kid, Alg: algName, Use: use})
	}
	return keys
}

func filterUsable(keys []JWK) []JWK {
	out := []JWK{}
	for _, key := range keys {
		if key.Kty == "OKP" && key.Crv == "Ed25519" && key.X != "" && (key.Alg == "" || key.Alg == "EdDSA" || key.Alg == "Ed25519") {
			out = append(out, key)
		}
	}
	return out
}

// publicKey decodes the key's x (32 bytes, base64url).
func (k JWK) publicKey() (ed25519.PublicKey, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, false
	}
	return ed25519.PublicKey(raw), true
}

const (
	// The server's JWKS may be cached this long (it sends Cache-Control: max-age=300).
	jwksMaxAge = 5 * time.Minute
	// A kid the JWKS did not list refetches it at most this often (the first sight of a new key refetches at once).
	jwksRefetchCooldown = 10 * time.Second
)

// keyRing holds the public keys that verify offline tokens: pinned keys when given (the only ones trusted then),
// else the server's JWKS, fetched once and cached in memory and in the store (for verification after an offline
// restart), fetched again when a token names an unknown kid (a key rotation).
type keyRing struct {
	pinned    []JWK
	transport *transport
	store     Store
	storeKey  string
	clock     func() time.Time

	mu        sync.Mutex
	keys      []JWK
	fetchedAt time.Time
	// lastFetch is when the last fetch completed (the real, monotonic clock).
	lastFetch time.Time
	misses    map[string]time.Time
	fetchMu   sync.Mutex
}

func newKeyRing(pinned *JWKS, t *transport, store Store, storeKey string, clock func() time.Time) (*keyRing, error) {
	ring := &keyRing{transport: t, store: store, storeKey: storeKey, clock: clock, misses: map[string]time.Time{}}
	if pinned != nil {
		ring.pinned = filterUsable(pinned.Keys)
		if len(ring.pinned) == 0 {
			return nil, fmt.Errorf("keyforge: JWKS: pinned keys must hold at least one Ed25519 key")
		}
		ring.keys = ring.pinned
	}
	return ring, nil
}

// keyFor is the key that verifies a token with this kid; online allows fetching the JWKS.
func (r *keyRing) keyFor(ctx context.Context, kid string, online bool) (ed25519.PublicKey, error) {
	keys, err := r.current(ctx, online)
	if err != nil {
		return nil, err
	}
	jwk, found := findKey(keys, kid)
	if !found && r.pinned == nil && online {
		r.mu.Lock()
		last, seen := r.misses[kid]
		now := r.clock()
		refetch := !seen || now.Sub(last) >= jwksRefetchCooldown
		if refetch {
			if len(r.misses) > 100 {
				r.misses = map[string]time.Time{}
			}
			r.misses[kid] = now
		}
		r.mu.Unlock()
		if refetch {
			// As the TypeScript SDK: a refetch that gets no answer says so (NetworkError, RateLimited …).
			fetched, err := r.fetch(ctx)
			if err != nil {
				return nil, err
			}
			jwk, found = findKey(fetched, kid)
		}
	}
	if !found {
		if r.pinned != nil {
			return nil, verificationError(CodeKeyUnknown, fmt.Sprintf("The token is signed by key %q, which is not among the pinned keys (after a key rotation, ship the new JWKS).", kid))
		}
		return nil, verificationError(CodeKeyUnknown, fmt.Sprintf("The token is signed by key %q, which the server's JWKS does not list.", kid))
	}
	key, ok := jwk.publicKey()
	if !ok {
		return nil, verificationError(CodeTokenInvalid, fmt.Sprintf("The key %q of the JWKS is not a valid Ed25519 public key.", kid))
	}
	return key, nil
}

func findKey(keys []JWK, kid string) (JWK, bool) {
	for _, key := range keys {
		if key.Kid == kid {
			return key, true
		}
	}
	return JWK{}, false
}

// current is the keys to try first: pinned, else fresh ones in memory, else (online) fetched, else the stored copy.
func (r *keyRing) current(ctx context.Context, online bool) ([]JWK, error) {
	if r.pinned != nil {
		return r.pinned, nil
	}
	r.mu.Lock()
	keys, fetchedAt := r.keys, r.fetchedAt
	r.mu.Unlock()
	if keys != nil && (!online || r.clock().Sub(fetchedAt) < jwksMaxAge) {
		return keys, nil
	}
	if online {
		fetched, err := r.fetch(ctx)
		if err == nil {
			return fetched, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The JWKS endpoint is away: a copy we have still verifies tokens of the keys it lists.
		if keys != nil {
			return keys, nil
		}
		if stored := r.stored(); len(stored) > 0 {
			return stored, nil
		}
		return nil, &Error{Code: CodeKeyUnknown, Kind: KindVerification, Message: "The server's keys (JWKS) could not be fetched: " + err.Error(), Err: err}
	}
	if keys != nil {
		return keys, nil
	}
	return r.stored(), nil
}

// fetch gets the JWKS (one request at a time) and keeps it in memory and in the store.
func (r *keyRing) fetch(ctx context.Context) ([]JWK, error) {
	if r.pinned != nil {
		return r.pinned, nil
	}
	asked := time.Now()
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	// A fetch that completed while this one waited answers it too: concurrent callers make one request.
	r.mu.Lock()
	if r.keys != nil && r.lastFetch.After(asked) {
		keys := r.keys
		r.mu.Unlock()
		return keys, nil
	}
	r.mu.Unlock()
	got, err := r.transport.retrying(ctx, func() (*answer, error) {
		return r.transport.once(ctx, "GET", "/.well-known/jwks.json", nil, "")
	}, nil)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	_ = json.Unmarshal(got.raw, &raw)
	keys := usableKeys(raw.Keys)
	r.mu.Lock()
	r.keys, r.fetchedAt, r.lastFetch = keys, r.clock(), time.Now()
	r.mu.Unlock()
	// Best effort: a store that cannot be written only costs the offline copy.
	if encoded, err := json.Marshal(JWKS{Keys: keys}); err == nil {
		_ = r.store.Set(r.storeKey, string(encoded))
	}
	return keys, nil
}

func (r *keyRing) stored() []JWK {
	raw, ok, err := r.store.Get(r.storeKey)
	if err != nil || !ok {
		return nil
	}
	var parsed struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if json.Unmarshal([]byte(raw), &parsed) != nil {
		return nil
	}
	keys := usableKeys(parsed.Keys)
	if len(keys) > 0 {
		r.mu.Lock()
		if r.keys == nil {
			r.keys = keys
		}
		r.mu.Unlock()
	}
	return keys
}
