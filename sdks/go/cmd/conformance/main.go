// Command conformance is the Go SDK's scenario runner (sdks/conformance/README.md "Scenario runner protocol"): it
// reads the run's input on stdin, drives the SDK through the scenario named on the command line against a real
// server, and prints one line, {"steps":[…]}. test/sdk-conformance.test.ts builds and runs it.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	keyforge "github.com/keyforge/keyforge/sdks/go"
)

// step is one line item of the output: {"name","ok":true,"value"} or {"name","ok":false,"error"}.
type step map[string]any

type runner struct {
	input      map[string]any
	steps      []step
	sdk        *keyforge.Client
	licenseKey string
	// clockOffset (nanoseconds) is added to the wall clock once the control server has moved the run's clock.
	clockOffset atomic.Int64
	ctx         context.Context
}

func main() {
	if len(os.Args) != 2 {
		fail(errors.New("usage: conformance <scenario> < input.json"))
	}
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	r := &runner{ctx: context.Background()}
	if err := json.Unmarshal(raw, &r.input); err != nil {
		fail(fmt.Errorf("stdin: %w", err))
	}
	r.licenseKey = r.text("licenseKey")
	r.sdk = r.client(r.text("server"), "store")
	scenarios := map[string]func(){
		"activate": r.activate, "validate": r.validate, "revoke-offline": r.revokeOffline, "wrong-product": r.wrongProduct,
		"floating": r.floating, "air-gapped": r.airGapped, "metering": r.metering, "releases": r.releases,
		"watch": r.watch,
	}
	run, ok := scenarios[os.Args[1]]
	if !ok {
		fail(fmt.Errorf("unknown scenario %q", os.Args[1]))
	}
	run()
	if r.steps == nil {
		r.steps = []step{}
	}
	out, err := json.Marshal(map[string]any{"steps": r.steps})
	if err != nil {
		fail(err)
	}
	fmt.Println(string(out))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "conformance:", err)
	os.Exit(1)
}

func (r *runner) text(name string) string {
	value, ok := r.input[name].(string)
	if !ok {
		fail(fmt.Errorf("input %q is missing", name))
	}
	return value
}

func (r *runner) clock() time.Time { return time.Now().Add(time.Duration(r.clockOffset.Load())) }

func (r *runner) client(server, store string) *keyforge.Client {
	files, err := keyforge.NewFileStore(filepath.Join(r.text("storeDir"), store))
	if err != nil {
		fail(err)
	}
	client, err := keyforge.New(keyforge.Config{ServerURL: server, Product: r.text("product"), Issuer: r.text("issuer"), Store: files, Clock: r.clock})
	if err != nil {
		fail(err)
	}
	return client
}

// step runs one step: its value, or the SDK error's code. Anything else is a crash (non-zero exit).
func (r *runner) step(name string, run func() (map[string]any, error)) {
	value, err := run()
	if err != nil {
		var sdkError *keyforge.Error
		if !errors.As(err, &sdkError) {
			fail(fmt.Errorf("step %s: %w", name, err))
		}
		r.steps = append(r.steps, step{"name": name, "ok": false, "error": sdkError.Code})
		return
	}
	if value == nil {
		value = map[string]any{}
	}
	r.steps = append(r.steps, step{"name": name, "ok": true, "value": value})
}

func (r *runner) control(action string, body map[string]any) map[string]any {
	if body == nil {
		body = map[string]any{}
	}
	encoded, _ := json.Marshal(body)
	response, err := http.Post(r.text("control")+"/"+action, "application/json", bytes.NewReader(encoded))
	if err != nil {
		fail(fmt.Errorf("control %s: %w", action, err))
	}
	defer response.Body.Close()
	var answer map[string]any
	if err := json.NewDecoder(response.Body).Decode(&answer); err != nil || response.StatusCode != 200 {
		fail(fmt.Errorf("control %s: HTTP %d %v", action, response.StatusCode, answer))
	}
	return answer
}

// controlStep records a control answer as a step: an answer with an "error" is a refusal.
func (r *runner) controlStep(name, action string, body map[string]any) {
	answer := r.control(action, body)
	if code, ok := answer["error"].(string); ok {
		r.steps = append(r.steps, step{"name": name, "ok": false, "error": code})
		return
	}
	r.steps = append(r.steps, step{"name": name, "ok": true, "value": answer})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (r *runner) activateDevice(deviceID string) func() (map[string]any, error) {
	return func() (map[string]any, error) {
		activation, err := r.sdk.Activate(r.ctx, keyforge.ActivateOptions{LicenseKey: r.licenseKey, DeviceID: deviceID})
		if err != nil {
			return nil, err
		}
		return map[string]any{"remainingActivations": activation.RemainingActivations}, nil
	}
}

func (r *runner) activate() {
	r.step("activate", r.activateDevice(r.text("deviceId")))
	r.step("activateAgain", r.activateDevice(r.text("deviceId")))
	r.step("activateOther", r.activateDevice(r.text("otherDeviceId")))
	r.step("activateThird", r.activateDevice(r.text("thirdDeviceId")))
	deactivate := func() (map[string]any, error) {
		result, err := r.sdk.Deactivate(r.ctx, keyforge.DeactivateOptions{LicenseKey: r.licenseKey, DeviceID: r.text("otherDeviceId")})
		if err != nil {
			return nil, err
		}
		var remaining any
		if result.RemainingActivations != nil {
			remaining = *result.RemainingActivations
		}
		return map[string]any{"remainingActivations": remaining}, nil
	}
	r.step("deactivateOther", deactivate)
	r.step("deactivateOtherAgain", deactivate)
	r.controlStep("seats", "seats", nil)
}

func (r *runner) validate() {
	deviceID := r.text("deviceId")
	r.step("activate", r.activateDevice(deviceID))
	r.step("validate", func() (map[string]any, error) {
		v, err := r.sdk.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.licenseKey})
		if err != nil {
			return nil, err
		}
		e := v.Entitlement
		return map[string]any{"product": e.Product, "features": e.Features, "device": nullable(e.Device), "deviceActivated": e.DeviceActivated, "offlineGraceDays": e.OfflineGraceDays}, nil
	})
	r.step("validateDevice", func() (map[string]any, error) {
		v, err := r.sdk.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.licenseKey, DeviceID: deviceID, RequireActivation: true})
		if err != nil {
			return nil, err
		}
		return map[string]any{"device": nullable(v.Entitlement.Device), "deviceActivated": v.Entitlement.DeviceActivated}, nil
	})
	r.step("validateOtherDevice", func() (map[string]any, error) {
		_, err := r.sdk.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.licenseKey, DeviceID: r.text("otherDeviceId"), RequireActivation: true})
		return nil, err
	})
	r.step("validateUnknownKey", func() (map[string]any, error) {
		_, err := r.sdk.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.text("unknownKey")})
		return nil, err
	})
	// Through the control server's replaying proxy: the second validate gets the first one's answer again.
	replayed := r.client(r.text("control")+"/replay", "replay")
	viaReplay := func() (map[string]any, error) {
		v, err := replayed.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.licenseKey})
		if err != nil {
			return nil, err
		}
		return map[string]any{"product": v.Entitlement.Product}, nil
	}
	r.step("validateReplayFirst", viaReplay)
	r.step("validateReplayed", viaReplay)
}

func (r *runner) watch() {
	deviceID := r.text("deviceId")
	r.step("activate", r.activateDevice(deviceID))
	var changes atomic.Int64
	first := make(chan struct{})
	// An hour between checks: every check here is one the scenario asks for.
	watcher, err := r.sdk.Watch(r.ctx, keyforge.WatchOptions{LicenseKey: r.licenseKey, DeviceID: deviceID, Interval: time.Hour,
		OnChange: func(_, _ *keyforge.LicenseState) {
			if changes.Add(1) == 1 {
				close(first)
			}
		}})
	if err != nil {
		fail(err)
	}
	// The first check starts at once; a Check made while its callbacks run answers before they end, so the first
	// step waits for its report.
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		fail(errors.New("the watcher reported no first finding within 30 s"))
	}
	orNull := func(text string) any {
		if text == "" {
			return nil
		}
		return text
	}
	found := func() (map[string]any, error) {
		state, err := watcher.Check(r.ctx)
		if err != nil {
			return nil, err
		}
		features := append([]string{}, state.Features...)
		sort.Strings(features)
		return map[string]any{"status": string(state.Status), "source": orNull(state.Source), "features": features, "code": orNull(state.Code), "changes": changes.Load()}, nil
	}
	r.step("watchFirst", found)
	r.control("setFeatures", map[string]any{"features": r.input["features"]})
	r.step("watchFeaturesChanged", found)
	r.step("watchUnchanged", found)
	r.control("revoke", nil)
	r.step("watchRevoked", found)
	watcher.Stop()
	r.step("watchStopped", func() (map[string]any, error) { return map[string]any{"active": watcher.Active()}, nil })
}

func (r *runner) revokeOffline() {
	deviceID := r.text("deviceId")
	offline := func() (map[string]any, error) {
		v, err := r.sdk.ValidateOffline(keyforge.ValidateOfflineOptions{LicenseKey: r.licenseKey, DeviceID: deviceID, RequireActivation: true})
		if err != nil {
			return nil, err
		}
		return map[string]any{"source": v.Source}, nil
	}
	r.step("activate", r.activateDevice(deviceID))
	r.step("validate", func() (map[string]any, error) {
		v, err := r.sdk.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.licenseKey, DeviceID: deviceID, RequireActivation: true})
		if err != nil {
			return nil, err
		}
		return map[string]any{"offlineGraceDays": v.Entitlement.OfflineGraceDays}, nil
	})
	r.control("revoke", nil)
	r.step("validateOfflineRevoked", offline)
	answer := r.control("advanceClock", map[string]any{"seconds": r.input["advanceSeconds"]})
	now, ok := answer["now"].(float64)
	if !ok {
		fail(fmt.Errorf("advanceClock answered %v", answer))
	}
	r.clockOffset.Store(int64(time.Unix(int64(now), 0).Sub(time.Now())))
	r.step("validateOfflineExpired", offline)
	r.step("validateOnline", func() (map[string]any, error) {
		_, err := r.sdk.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.licenseKey, DeviceID: deviceID, RequireActivation: true})
		return nil, err
	})
	r.step("validateOfflineAfterRejection", offline)
}

func (r *runner) wrongProduct() {
	deviceID := r.text("deviceId")
	r.step("activate", func() (map[string]any, error) {
		_, err := r.sdk.Activate(r.ctx, keyforge.ActivateOptions{LicenseKey: r.licenseKey, DeviceID: deviceID})
		return nil, err
	})
	r.step("checkout", func() (map[string]any, error) {
		session, err := r.sdk.Checkout(r.ctx, keyforge.CheckoutOptions{LicenseKey: r.licenseKey, DeviceID: deviceID})
		if err != nil {
			return nil, err
		}
		_, err = session.Checkin(r.ctx)
		return nil, err
	})
	r.step("validate", func() (map[string]any, error) {
		_, err := r.sdk.Validate(r.ctx, keyforge.ValidateOptions{LicenseKey: r.licenseKey})
		return nil, err
	})
	r.controlStep("seats", "seats", nil)
}

func (r *runner) floating() {
	sessions := map[string]*keyforge.FloatingSession{}
	checkout := func(name, deviceID string) func() (map[string]any, error) {
		return func() (map[string]any, error) {
			session, err := r.sdk.Checkout(r.ctx, keyforge.CheckoutOptions{LicenseKey: r.licenseKey, DeviceID: deviceID})
			if err != nil {
				return nil, err
			}
			sessions[name] = session
			return map[string]any{"floatingSeats": session.FloatingSeats, "remainingFloatingSeats": session.RemainingFloatingSeats}, nil
		}
	}
	checkin := func(name string) func() (map[string]any, error) {
		return func() (map[string]any, error) {
			session, ok := sessions[name]
			if !ok {
				return nil, fmt.Errorf("no session %s", name)
			}
			if _, err := session.Checkin(r.ctx); err != nil {
				return nil, err
			}
			return map[string]any{"checkedIn": true}, nil
		}
	}
	r.step("checkoutA", checkout("A", r.text("deviceA")))
	r.step("checkoutB", checkout("B", r.text("deviceB")))
	r.step("checkoutC", checkout("C", r.text("deviceC")))
	r.step("checkinA", checkin("A"))
	r.step("checkoutCAgain", checkout("C", r.text("deviceC")))
	r.step("heartbeatC", func() (map[string]any, error) {
		session, ok := sessions["C"]
		if !ok {
			return nil, errors.New("no session C")
		}
		return nil, session.Heartbeat()
	})
	r.controlStep("seats", "seats", nil)
	r.step("checkinB", checkin("B"))
	r.step("checkinC", checkin("C"))
	r.controlStep("seatsAfterCheckin", "seats", nil)
}

func (r *runner) airGapped() {
	deviceID := r.text("deviceId")
	// An air-gapped application ships the server's keys: fetched once here, as a vendor saves them at build time.
	if _, err := r.sdk.FetchKeys(r.ctx); err != nil {
		fail(err)
	}
	request := ""
	r.step("createRequest", func() (map[string]any, error) {
		written, err := r.sdk.CreateActivationRequest(keyforge.ActivationRequestOptions{LicenseKey: r.licenseKey, DeviceID: deviceID, DeviceName: r.text("deviceName"), Version: r.text("version")})
		if err != nil {
			return nil, err
		}
		request = written.Request
		var body strings.Builder
		for _, line := range strings.Split(request, "\n") {
			if line != "" && !strings.HasPrefix(line, "-----") {
				body.WriteString(line)
			}
		}
		decoded, err := base64.StdEncoding.DecodeString(body.String())
		if err != nil {
			return nil, err
		}
		var fields map[string]any
		if err := json.Unmarshal(decoded, &fields); err != nil {
			return nil, err
		}
		return map[string]any{"device": fields["device"], "product": fields["product"]}, nil
	})
	response, _ := r.control("airGappedRespond", map[string]any{"request": request})["response"].(string)
	apply := func() (map[string]any, error) {
		v, err := r.sdk.ApplyActivationResponse(r.ctx, response, "")
		if err != nil {
			return nil, err
		}
		return map[string]any{"device": nullable(v.Entitlement.Device), "deviceActivated": v.Entitlement.DeviceActivated, "kind": v.Entitlement.Claims["kind"]}, nil
	}
	offline := func() (map[string]any, error) {
		v, err := r.sdk.ValidateOffline(keyforge.ValidateOfflineOptions{LicenseKey: r.licenseKey, DeviceID: deviceID, RequireActivation: true})
		if err != nil {
			return nil, err
		}
		return map[string]any{"source": v.Source}, nil
	}
	r.step("applyResponse", apply)
	r.step("applyResponseAgain", apply)
	r.step("validateOffline", offline)
	r.controlStep("seatsAfterActivation", "seats", nil)
	proof := ""
	r.step("deactivateOffline", func() (map[string]any, error) {
		deactivation, err := r.sdk.DeactivateOffline(r.licenseKey)
		if err != nil {
			return nil, err
		}
		proof = deactivation.Proof
		return map[string]any{"deviceId": deactivation.DeviceID}, nil
	})
	r.step("validateOfflineAfterDeactivation", offline)
	r.controlStep("uploadProof", "airGappedDeactivate", map[string]any{"proof": proof})
	r.controlStep("uploadProofAgain", "airGappedDeactivate", map[string]any{"proof": proof})
	r.controlStep("seatsAfterDeactivation", "seats", nil)
}

func (r *runner) metering() {
	event := r.text("event")
	meter := func(quantity int, idempotencyKey string) func() (map[string]any, error) {
		return func() (map[string]any, error) {
			result, err := r.sdk.Meter(r.ctx, keyforge.MeterOptions{LicenseKey: r.licenseKey, Event: event, Quantity: quantity, IdempotencyKey: idempotencyKey})
			if err != nil {
				return nil, err
			}
			return map[string]any{"total": result.Total, "limit": result.Limit, "remaining": result.Remaining, "replayed": result.Replayed}, nil
		}
	}
	r.step("meter", meter(3, r.text("idempotencyKey")))
	r.step("meterReplayed", meter(3, r.text("idempotencyKey")))
	r.step("meterSecond", meter(2, r.text("secondIdempotencyKey")))
	r.step("meterOverQuota", meter(6, ""))
}

func (r *runner) releases() {
	platform, arch := r.text("platform"), r.text("arch")
	publish := func(version string, extra map[string]any) {
		body := map[string]any{"version": version, "platform": platform, "arch": arch, "filename": "acme-studio-" + version + "-" + platform + "-" + arch + ".tar.gz", "content": r.text("artifactContent")}
		for name, value := range extra {
			body[name] = value
		}
		r.control("publishRelease", body)
	}
	var artifact *keyforge.Artifact
	check := func(current, deviceID string) func() (map[string]any, error) {
		return func() (map[string]any, error) {
			answer, err := r.sdk.CheckForUpdate(r.ctx, keyforge.UpdateQuery{LicenseKey: r.licenseKey, CurrentVersion: current, Platform: platform, Arch: arch, DeviceID: deviceID})
			if err != nil {
				return nil, err
			}
			var version any
			if answer.Release != nil {
				version = answer.Release.Version
				if artifact == nil && len(answer.Release.Artifacts) > 0 {
					artifact = &answer.Release.Artifacts[0]
				}
			}
			return map[string]any{"available": answer.Available, "reason": nullable(answer.Reason), "version": version}, nil
		}
	}
	versions := func() (map[string]any, error) {
		releases, err := r.sdk.ListReleases(r.ctx, keyforge.ReleaseQuery{LicenseKey: r.licenseKey, Platform: platform, Arch: arch})
		if err != nil {
			return nil, err
		}
		list := []string{}
		for _, release := range releases {
			list = append(list, release.Version)
		}
		return map[string]any{"versions": list}, nil
	}
	publish("1.1.0", map[string]any{"requiresMaintenance": true})
	r.step("checkForUpdate", check(r.text("currentVersion"), ""))
	r.step("listReleases", versions)
	r.step("activate", r.activateDevice(r.text("deviceId")))
	r.step("download", func() (map[string]any, error) {
		if artifact == nil {
			return nil, errors.New("no artifact was offered")
		}
		var out bytes.Buffer
		if err := r.sdk.DownloadArtifact(r.ctx, *artifact, &out, keyforge.DownloadOptions{LicenseKey: r.licenseKey, DeviceID: r.text("deviceId")}); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(out.Bytes())
		return map[string]any{"filename": artifact.Filename, "size": out.Len(), "sha256": hex.EncodeToString(sum[:])}, nil
	})
	r.step("downloadEditedListing", func() (map[string]any, error) {
		if artifact == nil {
			return nil, errors.New("no artifact was offered")
		}
		edited := *artifact
		edited.Sha256 = strings.Repeat("0", 64)
		return nil, r.sdk.DownloadArtifact(r.ctx, edited, io.Discard, keyforge.DownloadOptions{LicenseKey: r.licenseKey})
	})
	// Into a file of a folder of its own: what is there afterwards (the file, and nothing else left behind). The
	// SDK writes to an io.Writer only what checked out, staged in TempDir; the file is replaced as a Go
	// application would: a temporary file beside it, renamed over it.
	downloads := filepath.Join(r.text("storeDir"), "downloads")
	if err := os.MkdirAll(downloads, 0o700); err != nil {
		fail(err)
	}
	onDisk := func() (map[string]any, error) {
		data, err := os.ReadFile(filepath.Join(downloads, artifact.Filename))
		if err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(downloads)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		return map[string]any{"size": len(data), "sha256": hex.EncodeToString(sum[:]), "leftovers": len(entries) - 1}, nil
	}
	toFile := func(sdk *keyforge.Client, listing keyforge.Artifact) error {
		part, err := os.CreateTemp(downloads, ".part-*")
		if err != nil {
			return err
		}
		err = sdk.DownloadArtifact(r.ctx, listing, part, keyforge.DownloadOptions{LicenseKey: r.licenseKey, DeviceID: r.text("deviceId"), TempDir: downloads})
		written, _ := part.Seek(0, io.SeekCurrent)
		part.Close()
		if err != nil {
			os.Remove(part.Name())
			if written > 0 {
				fail(fmt.Errorf("%d bytes reached the writer of a download that failed", written))
			}
			return err
		}
		return os.Rename(part.Name(), filepath.Join(downloads, listing.Filename))
	}
	r.step("downloadToFile", func() (map[string]any, error) {
		if err := toFile(r.sdk, *artifact); err != nil {
			return nil, err
		}
		return onDisk()
	})
	r.step("downloadToFileEdited", func() (map[string]any, error) {
		edited := *artifact
		edited.Sha256 = strings.Repeat("0", 64)
		return nil, toFile(r.sdk, edited)
	})
	// Through the control server's tampering proxy: the file's last byte changed on the way.
	tampered := r.client(r.text("control")+"/tamper", "tamper")
	r.step("downloadToFileTampered", func() (map[string]any, error) { return nil, toFile(tampered, *artifact) })
	r.step("fileKept", onDisk)
	r.step("checkOtherDevice", check(r.text("currentVersion"), r.text("otherDeviceId")))
	publish("1.2.0", map[string]any{"requiredFeatures": []string{"enterprise"}})
	r.step("checkFeatureMissing", check("1.1.0", ""))
	r.control("yankRelease", map[string]any{"version": "1.2.0"})
	r.step("checkAfterYank", check("1.1.0", ""))
	r.control("lapseMaintenance", nil)
	r.step("checkMaintenanceExpired", check(r.text("currentVersion"), ""))
	r.step("listAfterLapse", versions)
}
