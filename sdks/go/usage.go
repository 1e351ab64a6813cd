package keyforge

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// MaxQueuedUsage is the most records a license's offline queue holds: a Meter call beyond it fails with
// UsageQueueFull.
const MaxQueuedUsage = 1000

// MeterOptions are the inputs of Meter (docs/integrate/rest-api.md "POST /api/v1/meter").
type MeterOptions struct {
	LicenseKey string
	// Event name, e.g. api.calls (lower-case words separated by dots).
	Event string
	// Quantity defaults to 1.
	Quantity int
	// Timestamp is when the usage happened (default: now, on the server; with QueueOffline: now on the server's
	// clock as the client estimates it).
	Timestamp time.Time
	// IdempotencyKey makes the record count once however often it is sent. Default: a random key per Meter call,
	// kept across its retries; pass your own (e.g. your usage record's id) to deduplicate across restarts.
	IdempotencyKey string
	// QueueOffline keeps usage that cannot reach the server (no answer, 429, 502-504 after the retries) in the
	// store, with its idempotency key and time, and returns a result with Queued true. While records wait, later
	// calls queue behind them, so usage is sent in the order it happened.
	QueueOffline bool
}

// MeterResult is recorded (Queued false) or queued (Queued true) usage.
type MeterResult struct {
	Event    string `json:"event"`
	Quantity int    `json:"quantity"`
	// The following are set when recorded.
	OccurredAt  string  `json:"occurredAt"`
	Period      string  `json:"period"`
	PeriodStart *string `json:"periodStart"`
	PeriodEnd   *string `json:"periodEnd"`
	Total       int     `json:"total"`
	Limit       *int    `json:"limit"`
	Remaining   *int    `json:"remaining"`
	// IdempotencyKey is the key the record was sent (or queued) with.
	IdempotencyKey string `json:"-"`
	// Replayed is true when the server had already recorded this key: nothing was added.
	Replayed bool `json:"-"`
	// Queued is true when the record waits in the store to be sent.
	Queued bool `json:"-"`
	// Timestamp is the queued record's time (ISO 8601); empty when recorded.
	Timestamp string `json:"-"`
	// Reason says why a queued record was not sent now.
	Reason error `json:"-"`
}

// QueuedUsage is a usage record waiting in the store (never with the license key).
type QueuedUsage struct {
	Event          string `json:"event"`
	Quantity       int    `json:"quantity"`
	Timestamp      string `json:"timestamp"`
	IdempotencyKey string `json:"idempotencyKey"`
}

// DroppedUsage is a queued record the server refused for good, with why.
type DroppedUsage struct {
	Record QueuedUsage
	Err    error
}

// UsageFlush is what sending a license's queue did.
type UsageFlush struct {
	// Sent are the answers for the records sent, in queue order.
	Sent []*MeterResult
	// Dropped are records refused for good (QuotaExceeded, LicenseRevoked, InvalidRequest …), removed from the queue.
	Dropped []DroppedUsage
	// Remaining is the number of records still queued.
	Remaining int
	// StoppedBy says why the flush stopped before the end of the queue; nil when it got through.
	StoppedBy error
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Meter records usage. Every attempt carries the same idempotency key, so a retry after a lost answer is
// counted once (Replayed on the answer that found it recorded).
//
// Errors: rejection QuotaExceeded (Response holds total, limit, remaining) …; UsageQueueFull.
func (c *Client) Meter(ctx context.Context, options MeterOptions) (*MeterResult, error) {
	if err := requireKey(options.LicenseKey); err != nil {
		return nil, err
	}
	record := QueuedUsage{Event: options.Event, Quantity: options.Quantity, IdempotencyKey: options.IdempotencyKey}
	if record.Quantity == 0 {
		record.Quantity = 1
	}
	if record.IdempotencyKey == "" {
		record.IdempotencyKey = randomToken(16)
	}
	if !options.Timestamp.IsZero() {
		record.Timestamp = isoTime(options.Timestamp)
	}
	if !options.QueueOffline {
		return c.sendUsage(ctx, options.LicenseKey, record)
	}
	if record.Timestamp == "" {
		record.Timestamp = isoTime(c.serverNow(options.LicenseKey))
	}
	name := c.usageName(options.LicenseKey)
	queued := func(reason error) *MeterResult {
		return &MeterResult{Event: record.Event, Quantity: record.Quantity, IdempotencyKey: record.IdempotencyKey, Queued: true, Timestamp: record.Timestamp, Reason: reason}
	}
	waiting, err := c.listUsage(name)
	if err != nil {
		return nil, err
	}
	if len(waiting) > 0 {
		// Behind what is waiting, so the server gets usage in the order it happened.
		if err := c.appendUsage(name, record); err != nil {
			return nil, err
		}
		flushed, err := c.FlushUsage(ctx, options.LicenseKey)
		if err != nil {
			return nil, err
		}
		for _, sent := range flushed.Sent {
			if sent.IdempotencyKey == record.IdempotencyKey {
				return sent, nil
			}
		}
		for _, dropped := range flushed.Dropped {
			if dropped.Record.IdempotencyKey == record.IdempotencyKey {
				return nil, dropped.Err
			}
		}
		return queued(flushed.StoppedBy), nil
	}
	result, err := c.sendUsage(ctx, options.LicenseKey, record)
	if err == nil {
		return result, nil
	}
	if !IsTransient(err) || ctx.Err() != nil {
		return nil, err
	}
	if err := c.appendUsage(name, record); err != nil {
		return nil, err
	}
	return queued(err), nil
}

// FlushUsage sends the usage queued for a license while the server could not be reached, one record at a time in
// the order recorded, each with its idempotency key and original timestamp. A record the server refuses for good
// is removed and listed in Dropped; the first that gets no answer stops the flush, and it and the rest stay queued.
func (c *Client) FlushUsage(ctx context.Context, licenseKey string) (*UsageFlush, error) {
	if err := requireKey(licenseKey); err != nil {
		return nil, err
	}
	name := c.usageName(licenseKey)
	lock := c.flushLock(name)
	lock.Lock()
	defer lock.Unlock()
	records, err := c.listUsage(name)
	if err != nil {
		return nil, err
	}
	report := &UsageFlush{Sent: []*MeterResult{}, Dropped: []DroppedUsage{}}
	for _, record := range records {
		result, err := c.sendUsage(ctx, licenseKey, record)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			if IsTransient(err) || !definite(err) {
				report.StoppedBy = err
				break
			}
			report.Dropped = append(report.Dropped, DroppedUsage{Record: record, Err: err})
		} else {
			report.Sent = append(report.Sent, result)
		}
		if err := c.removeUsage(name, record.IdempotencyKey); err != nil {
			return nil, err
		}
	}
	remaining, err := c.listUsage(name)
	if err != nil {
		return nil, err
	}
	report.Remaining = len(remaining)
	return report, nil
}

// definite: a rejection, or a 4xx answer that is not transient (the record will never be accepted).
func definite(err error) bool {
	e, ok := err.(*Error)
	if !ok {
		return false
	}
	return e.Kind == KindRejected || (e.Kind == KindAPI && e.Status >= 400 && e.Status < 500)
}

// PendingUsage lists the usage records of a license waiting to be sent, oldest first.
func (c *Client) PendingUsage(licenseKey string) ([]QueuedUsage, error) {
	if err := requireKey(licenseKey); err != nil {
		return nil, err
	}
	return c.listUsage(c.usageName(licenseKey))
}

func (c *Client) sendUsage(ctx context.Context, licenseKey string, record QueuedUsage) (*MeterResult, error) {
	body := map[string]any{"licenseKey": licenseKey, "event": record.Event, "quantity": record.Quantity, "idempotencyKey": record.IdempotencyKey}
	if record.Timestamp != "" {
		body["timestamp"] = record.Timestamp
	}
	got, err := c.transport.retrying(ctx, func() (*answer, error) {
		return c.transport.once(ctx, "POST", "/api/v1/meter", body, "")
	}, nil)
	if err != nil {
		return nil, err
	}
	if got.json["isValid"] != true {
		return nil, rejection(got.json)
	}
	result := &MeterResult{}
	_ = json.Unmarshal(got.raw, result)
	result.IdempotencyKey = record.IdempotencyKey
	result.Replayed = got.header.Get("Idempotent-Replayed") == "true"
	return result, nil
}

// serverNow is now on the server's clock as this client estimates it (the local clock when no stored token
// tells the difference).
func (c *Client) serverNow(licenseKey string) time.Time {
	now := c.clock()
	if record, err := c.loadRecord(licenseKey); err == nil {
		now = now.Add(time.Duration(record.SkewMs) * time.Millisecond)
	}
	return now
}

func (c *Client) flushLock(name string) *sync.Mutex {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	lock, ok := c.flushLocks[name]
	if !ok {
		lock = &sync.Mutex{}
		c.flushLocks[name] = lock
	}
	return lock
}

type usageQueue struct {
	V       int           `json:"v"`
	Records []QueuedUsage `json:"records"`
}

func (c *Client) listUsage(name string) ([]QueuedUsage, error) {
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	return c.readUsage(name)
}

// readUsage reads a queue (c.storeMu held); a queue that is not JSON (edited or corrupted) holds nothing usable.
func (c *Client) readUsage(name string) ([]QueuedUsage, error) {
	raw, ok, err := c.store.Get(name)
	if err != nil {
		return nil, storeError(err)
	}
	if !ok {
		return []QueuedUsage{}, nil
	}
	var parsed struct {
		Records []json.RawMessage `json:"records"`
	}
	if json.Unmarshal([]byte(raw), &parsed) != nil {
		return []QueuedUsage{}, nil
	}
	records := []QueuedUsage{}
	for _, entry := range parsed.Records {
		var fields map[string]any
		if json.Unmarshal(entry, &fields) != nil {
			continue
		}
		event, ok1 := fields["event"].(string)
		quantity, ok2 := fields["quantity"].(float64)
		timestamp, ok3 := fields["timestamp"].(string)
		key, ok4 := fields["idempotencyKey"].(string)
		if ok1 && ok2 && ok3 && ok4 {
			records = append(records, QueuedUsage{Event: event, Quantity: int(quantity), Timestamp: timestamp, IdempotencyKey: key})
		}
	}
	return records, nil
}

func (c *Client) writeUsage(name string, records []QueuedUsage) error {
	if len(records) == 0 {
		return storeError(c.store.Delete(name))
	}
	return c.setJSON(name, usageQueue{V: 1, Records: records})
}

// appendUsage appends a record in order; an idempotency key already queued is not added twice.
func (c *Client) appendUsage(name string, record QueuedUsage) error {
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	records, err := c.readUsage(name)
	if err != nil {
		return err
	}
	for _, queued := range records {
		if queued.IdempotencyKey == record.IdempotencyKey {
			return nil
		}
	}
	if len(records) >= MaxQueuedUsage {
		return &Error{Code: CodeUsageQueueFull, Kind: KindLocal, Message: fmt.Sprintf("%d usage records are already waiting for this license: send them (FlushUsage) before recording more offline.", MaxQueuedUsage)}
	}
	return c.writeUsage(name, append(records, record))
}

func (c *Client) removeUsage(name, idempotencyKey string) error {
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	records, err := c.readUsage(name)
	if err != nil {
		return err
	}
	kept := records[:0]
	for _, record := range records {
		if record.IdempotencyKey != idempotencyKey {
			kept = append(kept, record)
		}
	}
	return c.writeUsage(name, kept)
}
