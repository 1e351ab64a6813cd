package keyforge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RetryPolicy says how calls are retried on 429, 502, 503, 504 and network failures (never on a definite answer).
// Zero fields take the defaults.
type RetryPolicy struct {
	// Attempts in all, the first included (default 4; 1 turns retries off).
	Attempts int
	// BaseDelay: the n-th retry waits between ½ and 1 × BaseDelay·2ⁿ⁻¹, capped by MaxDelay (default 500 ms).
	BaseDelay time.Duration
	// MaxDelay bounds one backoff wait without Retry-After (default 8 s).
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the SDK waits for (default 30 s). A longer one is not waited for:
	// the *Error is returned at once, carrying RetryAfter.
	MaxRetryAfter time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 8 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 30 * time.Second
	}
	return p
}

// maxAnswerBytes bounds every answer read from the server: a hostile or broken server cannot exhaust memory.
const maxAnswerBytes = 1 << 20

type answer struct {
	status int
	header http.Header
	json   map[string]any
	raw    []byte
}

type transport struct {
	baseURL string
	client  *http.Client
	timeout time.Duration
	retry   RetryPolicy
	clock   func() time.Time

	randMu sync.Mutex
	rand   *rand.Rand
}

func (t *transport) jitter(upTo time.Duration) time.Duration {
	if upTo <= 0 {
		return 0
	}
	t.randMu.Lock()
	defer t.randMu.Unlock()
	return time.Duration(t.rand.Int63n(int64(upTo) + 1))
}

// once makes one request: the answer's JSON object when 2xx, else an *Error (KindAPI); no answer → KindNetwork.
func (t *transport) once(ctx context.Context, method, path string, body any, bearer string) (*answer, error) {
	authorization := ""
	if bearer != "" {
		authorization = "Bearer " + bearer
	}
	return t.request(ctx, method, path, body, authorization)
}

// request is once with any Authorization header value ("" for none): a session's Bearer token, or the release
// routes' "License <key>" (keys never go in URLs).
func (t *transport) request(ctx context.Context, method, path string, body any, authorization string) (*answer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	attemptCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	var reader io.Reader
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			return nil, &Error{Code: CodeInvalidRequest, Kind: KindLocal, Message: "the request body cannot be encoded", Err: err}
		}
		reader = bytes.NewReader(encoded)
	}
	request, err := http.NewRequestWithContext(attemptCtx, method, t.baseURL+path, reader)
	if err != nil {
		return nil, &Error{Code: CodeNetworkError, Kind: KindNetwork, Message: fmt.Sprintf("%s %s: %v", method, path, err), Err: err}
	}
	request.Header.Set("Accept", "application/json")
	request.Header.Set("User-Agent", "keyforge-go/"+Version)
	if body != nil {
		request.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		request.Header.Set("Authorization", authorization)
	}
	noAnswer := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attemptCtx.Err() != nil {
			return &Error{Code: CodeTimeout, Kind: KindNetwork, Message: fmt.Sprintf("%s %s: no answer within %v", method, path, t.timeout), Err: err}
		}
		return &Error{Code: CodeNetworkError, Kind: KindNetwork, Message: fmt.Sprintf("%s %s: %v", method, path, err), Err: err}
	}
	response, err := t.client.Do(request)
	if err != nil {
		return nil, noAnswer(err)
	}
	defer response.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(response.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, noAnswer(err)
	}
	requestID := response.Header.Get("X-Request-Id")
	retryAfter := parseRetryAfter(response.Header.Get("Retry-After"), t.clock())
	fail := func(code, message string, fields map[string]string) error {
		return &Error{Code: code, Kind: KindAPI, Message: message, Status: response.StatusCode, RequestID: requestID, Fields: fields, RetryAfter: retryAfter}
	}
	if len(raw) > maxAnswerBytes {
		return nil, fail(CodeInvalidResponse, fmt.Sprintf("%s %s: the answer is larger than %d bytes", method, path, maxAnswerBytes), nil)
	}
	var decoded any
	if len(raw) > 0 {
		if json.Unmarshal(raw, &decoded) != nil {
			decoded = nil
		}
	}
	object, isObject := decoded.(map[string]any)
	if response.StatusCode < 200 || response.StatusCode > 299 {
		code, message := statusCode(response.StatusCode), fmt.Sprintf("%s %s: HTTP %d", method, path, response.StatusCode)
		var fields map[string]string
		if detail, ok := object["error"].(map[string]any); ok {
			if c, ok := detail["code"].(string); ok {
				code = c
			}
			if m, ok := detail["message"].(string); ok {
				message = m
			}
			if f, ok := detail["fields"].(map[string]any); ok {
				fields = map[string]string{}
				for name, value := range f {
					if s, ok := value.(string); ok {
						fields[name] = s
					}
				}
			}
		}
		return nil, fail(code, message, fields)
	}
	if !isObject {
		return nil, fail(CodeInvalidResponse, fmt.Sprintf("%s %s: the answer is not the API's JSON (HTTP %d)", method, path, response.StatusCode), nil)
	}
	return &answer{status: response.StatusCode, header: response.Header, json: object, raw: raw}, nil
}

// retrying runs attempt until it succeeds, a definite answer comes, the attempts are used up or ctx ends.
// Transient failures wait Retry-After when sent (giving up at once when it is longer than allowed), else an
// exponential backoff with jitter. onTransient (optional) sees each failure that will be retried.
func (t *transport) retrying(ctx context.Context, attempt func() (*answer, error), onTransient func(error)) (*answer, error) {
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		result, err := attempt()
		if err == nil {
			return result, nil
		}
		if ctx.Err() != nil || !IsTransient(err) || n >= t.retry.Attempts {
			return nil, err
		}
		delay, ok := t.delayBefore(n, err)
		if !ok {
			return nil, err
		}
		if onTransient != nil {
			onTransient(err)
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// delayBefore is the wait before retry n (after n failed attempts); false: give up now.
func (t *transport) delayBefore(n int, err error) (time.Duration, bool) {
	if wait := retryAfter(err); wait != nil {
		if *wait > t.retry.MaxRetryAfter {
			return 0, false
		}
		// At least what the server asked for, spread a little so a crowd of clients does not return in step.
		spread := t.retry.BaseDelay
		if spread > time.Second {
			spread = time.Second
		}
		return *wait + t.jitter(spread), true
	}
	return t.backoff(n, t.retry.BaseDelay, t.retry.MaxDelay), true
}

// backoff is "equal jitter" exponential backoff: between half and all of base·2ⁿ⁻¹, capped by max.
func (t *transport) backoff(n int, base, max time.Duration) time.Duration {
	ceiling := base
	for i := 1; i < n && ceiling < max; i++ {
		ceiling *= 2
	}
	if ceiling > max {
		ceiling = max
	}
	return ceiling/2 + t.jitter(ceiling/2)
}

// retryAfter is the Retry-After an *Error carries, nil when none.
func retryAfter(err error) *time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return nil
}

// parseRetryAfter reads a Retry-After header: delta-seconds or an HTTP date.
func parseRetryAfter(value string, now time.Time) *time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil
	}
	if seconds, err := strconv.ParseUint(value, 10, 32); err == nil {
		d := time.Duration(seconds) * time.Second
		return &d
	}
	if at, err := http.ParseTime(value); err == nil {
		d := at.Sub(now)
		if d < 0 {
			d = 0
		}
		d = (d + time.Second - 1) / time.Second * time.Second
		return &d
	}
	return nil
}

func statusCode(status int) string {
	switch {
	case status == 429:
		return CodeRateLimited
	case status == 502 || status == 503 || status == 504:
		return CodeServiceUnavailable
	case status >= 500:
		return CodeInternalError
	default:
		return CodeInvalidRequest
	}
}
