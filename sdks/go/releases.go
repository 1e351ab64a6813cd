package keyforge

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Artifact is a downloadable file of a release, as GET /api/v1/releases lists it.
type Artifact struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
	// Platform: win32, darwin, linux …
	Platform string `json:"platform"`
	// Arch: x64, arm64 …
	Arch string `json:"arch"`
	// Filetype: exe, dmg, AppImage, tar.gz …
	Filetype string `json:"filetype"`
	// Size in bytes.
	Size int64 `json:"size"`
	// Sha256 and Sha512 are lower-case hex.
	Sha256 string `json:"sha256"`
	Sha512 string `json:"sha512"`
	// Signature is the server's Ed25519 signature over the file's identity and digests (a compact JWS).
	Signature string `json:"signature"`
}

// Release is a published release this license may download.
type Release struct {
	ID string `json:"id"`
	// Product is the product's id.
	Product string `json:"product"`
	// Version is a semantic version.
	Version string `json:"version"`
	// Channel: stable, rc, beta, alpha or dev.
	Channel     string     `json:"channel"`
	Status      string     `json:"status"`
	Notes       *string    `json:"notes"`
	PublishedAt string     `json:"publishedAt"`
	Artifacts   []Artifact `json:"artifacts"`
}

// ReleaseQuery selects the releases ListReleases answers.
type ReleaseQuery struct {
	LicenseKey string
	// Channel is the most unstable channel wanted (a channel includes the more stable ones). Default: stable.
	Channel string
	// Platform and Arch filter the artifacts. Default: this process's (CurrentPlatform).
	Platform string
	Arch     string
	// DeviceID, when set, must hold an activation of the license.
	DeviceID string
	// Limit caps the number of releases (0: the server's default).
	Limit int
}

// UpdateQuery is CheckForUpdate's question.
type UpdateQuery struct {
	LicenseKey string
	// CurrentVersion is the running version (semver).
	CurrentVersion string
	Channel        string
	Platform       string
	Arch           string
	DeviceID       string
}

// UpdateCheck is CheckForUpdate's answer. Available: Release is newer than the running version and this license
// may install it. Otherwise Reason says why not: NoNewerRelease, or MaintenanceExpired / FeatureMissing with
// Release the newest newer release this license may not install.
type UpdateCheck struct {
	Available bool
	Reason    string
	Release   *Release
}

// DownloadOptions are DownloadArtifact's credentials, and where it stages the file while checking it.
type DownloadOptions struct {
	LicenseKey string
	DeviceID   string
	// TempDir holds the temporary file a download is checked in before it reaches the writer: a folder with room
	// for the whole artifact (a small /tmp will not hold a large installer). Empty: os.TempDir().
	TempDir string
}

// CurrentPlatform is this process's platform and architecture in the release API's terms: win32, darwin or linux
// (from runtime.GOOS windows, darwin, linux), x64 or arm64 (from runtime.GOARCH amd64, arm64). "" for anything
// else: the query then does not filter by it.
func CurrentPlatform() (platform, arch string) {
	switch runtime.GOOS {
	case "windows":
		platform = "win32"
	case "darwin", "linux":
		platform = runtime.GOOS
	}
	switch runtime.GOARCH {
	case "amd64":
		arch = "x64"
	case "arm64":
		arch = "arm64"
	}
	return platform, arch
}

func withDefault(value, fallback string) string {
	if value != "" {
		return value
	}
	return fallback
}

// releaseCall is a GET of the release API: the key in Authorization: License, the product and the device in the query.
func (c *Client) releaseCall(ctx context.Context, path, licenseKey, deviceID string, query url.Values) (*answer, error) {
	if err := requireKey(licenseKey); err != nil {
		return nil, err
	}
	params := url.Values{"product": {c.Products[0]}}
	for name, values := range query {
		if len(values) > 0 && values[0] != "" {
			params.Set(name, values[0])
		}
	}
	if deviceID != "" {
		params.Set("deviceId", deviceID)
	}
	target := path + "?" + params.Encode()
	got, err := c.transport.retrying(ctx, func() (*answer, error) {
		return c.transport.request(ctx, "GET", target, nil, "License "+licenseKey)
	}, nil)
	if err != nil {
		return nil, err
	}
	if got.json["isValid"] == false {
		return nil, rejection(got.json)
	}
	return got, nil
}

func invalidResponse(message string) error {
	return &Error{Code: CodeInvalidResponse, Kind: KindAPI, Message: message, Status: 200}
}

// ListReleases answers the published releases this license may download (its features and maintenance period
// allow), newest first, of Channel and the more stable ones, with the artifacts of Platform/Arch (default: this
// process's). The key goes in the Authorization: License header, never in the URL.
//
// Errors (*Error): ProductMismatch, LicenseNotFound, DeviceNotActivated …; API and network errors.
func (c *Client) ListReleases(ctx context.Context, q ReleaseQuery) ([]Release, error) {
	platform, arch := CurrentPlatform()
	query := url.Values{"channel": {q.Channel}, "platform": {withDefault(q.Platform, platform)}, "arch": {withDefault(q.Arch, arch)}}
	if q.Limit > 0 {
		query.Set("limit", strconv.Itoa(q.Limit))
	}
	got, err := c.releaseCall(ctx, "/api/v1/releases", q.LicenseKey, q.DeviceID, query)
	if err != nil {
		return nil, err
	}
	var decoded struct {
		Releases []Release `json:"releases"`
	}
	if _, ok := got.json["releases"].([]any); !ok || json.Unmarshal(got.raw, &decoded) != nil {
		return nil, invalidResponse("GET /api/v1/releases answered without releases")
	}
	return decoded.Releases, nil
}

// CheckForUpdate asks whether a release newer than CurrentVersion (semver) is available to this license on Channel
// (default stable) for Platform/Arch (default: this process's).
//
// Errors (*Error): InvalidRequest for a version that is not semantic; those of ListReleases.
func (c *Client) CheckForUpdate(ctx context.Context, q UpdateQuery) (*UpdateCheck, error) {
	if q.CurrentVersion == "" {
		return nil, errors.New("keyforge: CurrentVersion must be the running version (semver)")
	}
	platform, arch := CurrentPlatform()
	query := url.Values{"version": {q.CurrentVersion}, "channel": {q.Channel}, "platform": {withDefault(q.Platform, platform)}, "arch": {withDefault(q.Arch, arch)}}
	got, err := c.releaseCall(ctx, "/api/v1/releases/upgrade", q.LicenseKey, q.DeviceID, query)
	if err != nil {
		return nil, err
	}
	var decoded struct {
		Available *bool    `json:"available"`
		Reason    string   `json:"reason"`
		Release   *Release `json:"release"`
	}
	if json.Unmarshal(got.raw, &decoded) != nil || decoded.Available == nil {
		return nil, invalidResponse("GET /api/v1/releases/upgrade answered without available")
	}
	result := &UpdateCheck{Available: *decoded.Available, Release: decoded.Release}
	if !result.Available {
		result.Reason = withDefault(decoded.Reason, "NoNewerRelease")
	}
	return result, nil
}

func artifactIntegrity(message string) error {
	return verificationError(CodeArtifactIntegrity, message)
}

// signedArtifact is what an artifact's signature covers.
type signedArtifact struct {
	claims map[string]any
	size   int64
	sha256 string
	sha512 string
}

// verifyArtifactSignature verifies the signature as an offline token's (EdDSA, a trusted kid, the issuer), then that
// it is an artifact signature (typ) whose productName (or product) is one of the client's products, of this artifact (its id, and the listed size
// and digests). Any failure is ArtifactIntegrity.
func (c *Client) verifyArtifactSignature(ctx context.Context, artifact Artifact) (*signedArtifact, error) {
	if artifact.Signature == "" {
		return nil, artifactIntegrity("The artifact carries no signature.")
	}
	_, claims, err := c.verifyJWS(ctx, artifact.Signature, true)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Kind == KindVerification {
			return nil, &Error{Code: CodeArtifactIntegrity, Kind: KindVerification, Message: fmt.Sprintf("The artifact's signature does not verify (%s: %s): tampered, or not signed by this server.", e.Code, e.Message), Err: err}
		}
		return nil, err
	}
	if typ, _ := claims["typ"].(string); typ != "keyforge.artifact" {
		return nil, artifactIntegrity("The signature is not an artifact signature (typ).")
	}
	if iss, _ := claims["iss"].(string); iss != c.Issuer {
		return nil, artifactIntegrity(fmt.Sprintf("The artifact's signature was not issued by %s.", c.Issuer))
	}
	// productName is the product's name (product its id); a name is what the client knows.
	productName, _ := claims["productName"].(string)
	product, _ := claims["product"].(string)
	known := false
	for _, name := range c.Products {
		known = known || name == productName || name == product
	}
	if !known {
		return nil, artifactIntegrity("The artifact is signed for another product.")
	}
	if id, _ := claims["artifact"].(string); id != artifact.ID {
		return nil, artifactIntegrity("The signature is of another artifact.")
	}
	size, sizeOK := claims["size"].(float64)
	signed := &signedArtifact{claims: claims, size: int64(size)}
	var ok256, ok512 bool
	signed.sha256, ok256 = claims["sha256"].(string)
	signed.sha512, ok512 = claims["sha512"].(string)
	if !sizeOK || size < 0 || size != float64(int64(size)) || !ok256 || !ok512 {
		return nil, artifactIntegrity("The artifact's signature names no size and digests.")
	}
	if artifact.Size != signed.size || strings.ToLower(artifact.Sha256) != signed.sha256 || strings.ToLower(artifact.Sha512) != signed.sha512 {
		return nil, artifactIntegrity("The artifact's listed size or digests differ from the signed ones.")
	}
	return signed, nil
}

// digests hashes bytes as they arrive.
type digests struct {
	size   int64
	sha256 hash.Hash
	sha512 hash.Hash
}

func newDigests() *digests { return &digests{sha256: sha256.New(), sha512: sha512.New()} }

func (d *digests) Write(p []byte) (int, error) {
	d.size += int64(len(p))
	d.sha256.Write(p)
	d.sha512.Write(p)
	return len(p), nil
}

func (d *digests) check(signed *signedArtifact) error {
	if d.size != signed.size {
		return artifactIntegrity(fmt.Sprintf("The file is %d bytes; %d were signed.", d.size, signed.size))
	}
	if hex.EncodeToString(d.sha256.Sum(nil)) != signed.sha256 {
		return artifactIntegrity("The file's SHA-256 is not the signed one.")
	}
	if hex.EncodeToString(d.sha512.Sum(nil)) != signed.sha512 {
		return artifactIntegrity("The file's SHA-512 is not the signed one.")
	}
	return nil
}

// VerifyArtifact checks bytes obtained another way (an updater's own download) against an artifact's signature:
// the checks of DownloadArtifact. It returns the signed claims. Errors: ArtifactIntegrity.
func (c *Client) VerifyArtifact(ctx context.Context, artifact Artifact, data []byte) (map[string]any, error) {
	signed, err := c.verifyArtifactSignature(ctx, artifact)
	if err != nil {
		return nil, err
	}
	d := newDigests()
	d.Write(data)
	if err := d.check(signed); err != nil {
		return nil, err
	}
	return signed.claims, nil
}

// DownloadArtifact downloads an artifact and writes it to w only once it checks out: the signature first (as an
// offline token: EdDSA, a trusted kid, the issuer; then this artifact of this product), then the file — streamed to
// a temporary file (mode 0600, in options.TempDir) with a cap of the signed size, hashed as it arrives — whose size,
// SHA-256 and SHA-512 must be the signed ones. Only then is it copied to w; the temporary file is removed in every case.
//
// The link comes from GET /api/v1/artifacts/{id}/download (the key in the header); the file is fetched from that
// link alone — possibly another host (a presigned object-store URL) — with no credentials and no redirect followed
// (a 3xx is InvalidResponse); a link on the server's public address (the Issuer) is fetched through ServerURL.
// Config.Timeout bounds each wait for data, not the whole download. Transient failures are retried.
//
// Errors (*Error): ArtifactIntegrity when anything does not match; FileWriteFailed when the temporary file or w
// cannot be written (the disk's failure, not the network's: not retried); those of ListReleases.
func (c *Client) DownloadArtifact(ctx context.Context, artifact Artifact, w io.Writer, options DownloadOptions) error {
	signed, err := c.verifyArtifactSignature(ctx, artifact)
	if err != nil {
		return err
	}
	got, err := c.releaseCall(ctx, "/api/v1/artifacts/"+url.PathEscape(artifact.ID)+"/download", options.LicenseKey, options.DeviceID, nil)
	if err != nil {
		return err
	}
	link, _ := got.json["url"].(string)
	// A link on the server's own public address (the issuer, its PUBLIC_URL) is fetched through ServerURL, the
	// address this client reaches the same server at; any other link (an object store's) as it is.
	if issuer := strings.TrimRight(c.Issuer, "/"); issuer != c.ServerURL && strings.HasPrefix(link, issuer+"/") {
		link = c.ServerURL + link[len(issuer):]
	}
	parsed, parseErr := url.Parse(link)
	if parseErr != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Host == "" {
		return invalidResponse("The download answer carries no http(s) link.")
	}
	temporary, err := os.CreateTemp(options.TempDir, "keyforge-download-*")
	if err != nil {
		return fileWriteFailed("creating a temporary file", err)
	}
	defer func() {
		temporary.Close()
		os.Remove(temporary.Name())
	}()
	var d *digests
	_, err = c.transport.retrying(ctx, func() (*answer, error) {
		if _, err := temporary.Seek(0, io.SeekStart); err != nil {
			return nil, fileWriteFailed("rewinding the temporary file", err)
		}
		if err := temporary.Truncate(0); err != nil {
			return nil, fileWriteFailed("emptying the temporary file", err)
		}
		d = newDigests()
		return nil, c.transport.download(ctx, link, signed.size, io.MultiWriter(temporary, d))
	}, nil)
	if err != nil {
		return err
	}
	if err := d.check(signed); err != nil {
		return err
	}
	if _, err := temporary.Seek(0, io.SeekStart); err != nil {
		return fileWriteFailed("rewinding the temporary file", err)
	}
	if _, err := io.Copy(w, temporary); err != nil {
		return fileWriteFailed("copying the verified file", err)
	}
	return nil
}

// fileWriteFailed is a local failure writing a download: its own code, never retried.
func fileWriteFailed(doing string, err error) *Error {
	return &Error{Code: CodeFileWriteFailed, Kind: KindLocal, Message: fmt.Sprintf("The download cannot be written (%s): %v", doing, err), Err: err}
}

// download GETs an absolute link with no credentials and writes its body to w, refusing a redirect (InvalidResponse)
// and a body longer than maxBytes (ArtifactIntegrity). The timeout bounds each wait for data, not the whole body.
func (t *transport) download(ctx context.Context, link string, maxBytes int64, w io.Writer) error {
	const what = "GET (download link)"
	attemptCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idle atomic.Bool
	timer := time.AfterFunc(t.timeout, func() { idle.Store(true); cancel() })
	defer timer.Stop()
	request, err := http.NewRequestWithContext(attemptCtx, "GET", link, nil)
	if err != nil {
		return invalidResponse("The download answer carries no usable link.")
	}
	request.Header.Set("Accept", "*/*")
	request.Header.Set("User-Agent", "keyforge-go/"+Version)
	noData := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if idle.Load() {
			return &Error{Code: CodeTimeout, Kind: KindNetwork, Message: fmt.Sprintf("%s: no data within %v", what, t.timeout), Err: err}
		}
		return &Error{Code: CodeNetworkError, Kind: KindNetwork, Message: fmt.Sprintf("%s: %v", what, err), Err: err}
	}
	response, err := t.client.Do(request)
	if err != nil {
		return noData(err)
	}
	defer response.Body.Close()
	fail := func(code, message string) error {
		return &Error{Code: code, Kind: KindAPI, Message: message, Status: response.StatusCode, RequestID: response.Header.Get("X-Request-Id"), RetryAfter: parseRetryAfter(response.Header.Get("Retry-After"), t.clock())}
	}
	if response.StatusCode >= 300 && response.StatusCode < 400 {
		return fail(CodeInvalidResponse, fmt.Sprintf("%s: answered a redirect (HTTP %d), which is not followed", what, response.StatusCode))
	}
	if response.StatusCode < 200 || response.StatusCode > 299 {
		code, message := statusCode(response.StatusCode), fmt.Sprintf("%s: HTTP %d", what, response.StatusCode)
		raw, _ := io.ReadAll(io.LimitReader(response.Body, 65536))
		if object, ok := jsonObjectOf(raw); ok {
			if detail, ok := object["error"].(map[string]any); ok {
				if c, ok := detail["code"].(string); ok {
					code = c
				}
				if m, ok := detail["message"].(string); ok {
					message = m
				}
			}
		}
		return fail(code, message)
	}
	if response.ContentLength > maxBytes {
		return artifactIntegrity(fmt.Sprintf("%s: the file is %d bytes, more than the %d signed.", what, response.ContentLength, maxBytes))
	}
	buffer := make([]byte, 64*1024)
	var read int64
	for {
		n, err := response.Body.Read(buffer)
		if n > 0 {
			timer.Reset(t.timeout)
			read += int64(n)
			if read > maxBytes {
				return artifactIntegrity(fmt.Sprintf("%s: the file is longer than the %d bytes signed.", what, maxBytes))
			}
			if _, werr := w.Write(buffer[:n]); werr != nil {
				return fileWriteFailed("writing the temporary file", werr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return noData(err)
		}
	}
}
