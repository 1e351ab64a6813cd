package keyforge

// ListReleases, CheckForUpdate and DownloadArtifact against a local stub of the release API, the file served by a
// second stub (another host, as a presigned object-store link is). The scenario against the real server is
// `releases` in sdks/conformance/scenarios.json.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var releaseFile = bytes.Repeat([]byte("installer bytes\n"), 4096)

const releaseKey = "ACME-RELS-TEST-KEY1-0001"

type releaseStubs struct {
	api, files *fakeServer
	signer     *signer
	mu         sync.Mutex
	seen       []*http.Request
	fileSeen   []*http.Request
	serveFile  http.HandlerFunc
}

func newReleaseStubs(t *testing.T) *releaseStubs {
	s := &releaseStubs{api: newFakeServer(t), files: newFakeServer(t), signer: newSigner(t, "release-key")}
	s.api.route("/.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"keys": []any{s.signer.jwk()}})
	})
	s.api.route("/api/v1/artifacts/art-1/download", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r)
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"url": s.files.URL + "/blob/art-1?token=short", "expiresAt": "2030-01-01T00:00:00Z"})
	})
	s.files.route("/blob/art-1", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.fileSeen = append(s.fileSeen, r)
		serve := s.serveFile
		s.mu.Unlock()
		if serve != nil {
			serve(w, r)
			return
		}
		w.Write(releaseFile)
	})
	return s
}

func (s *releaseStubs) artifact(t *testing.T, changes map[string]any) Artifact {
	sum256, sum512 := sha256.Sum256(releaseFile), sha512.Sum512(releaseFile)
	a := Artifact{ID: "art-1", Filename: "acme-2.0.0-linux-x64.tar.gz", Platform: "linux", Arch: "x64", Filetype: "tar.gz", Size: int64(len(releaseFile)), Sha256: hex.EncodeToString(sum256[:]), Sha512: hex.EncodeToString(sum512[:])}
	claims := map[string]any{"typ": "keyforge.artifact", "iss": testIssuer, "product": "Acme Studio", "productId": "prod-1", "release": "rel-1", "version": "2.0.0", "artifact": a.ID, "filename": a.Filename, "platform": a.Platform, "arch": a.Arch, "size": a.Size, "sha256": a.Sha256, "sha512": a.Sha512, "iat": 1780315200}
	for name, value := range changes {
		claims[name] = value
	}
	a.Signature = s.signer.sign(t, claims)
	return a
}

func TestListReleasesAndCheckForUpdate(t *testing.T) {
	s := newReleaseStubs(t)
	var got *http.Request
	release := map[string]any{"id": "rel-1", "product": "prod-1", "version": "2.0.0", "channel": "stable", "status": "published", "notes": nil, "publishedAt": "2026-06-01T12:00:00.000Z", "artifacts": []any{}}
	s.api.route("/api/v1/releases", func(w http.ResponseWriter, r *http.Request) {
		got = r
		writeJSON(w, 200, map[string]any{"releases": []any{release}})
	})
	client := testClient(t, s.api, nil)
	releases, err := client.ListReleases(context.Background(), ReleaseQuery{LicenseKey: releaseKey, Channel: "beta", Platform: "darwin", Arch: "arm64", DeviceID: "dev-1"})
	if err != nil || len(releases) != 1 || releases[0].Version != "2.0.0" {
		t.Fatalf("ListReleases: %v %v", releases, err)
	}
	if got.Header.Get("Authorization") != "License "+releaseKey || strings.Contains(got.URL.String(), releaseKey) {
		t.Fatalf("the key must travel in the header only: %q %q", got.Header.Get("Authorization"), got.URL)
	}
	want := url.Values{"product": {"Acme Studio"}, "channel": {"beta"}, "platform": {"darwin"}, "arch": {"arm64"}, "deviceId": {"dev-1"}}
	if !reflect.DeepEqual(got.URL.Query(), want) {
		t.Fatalf("query %v, want %v", got.URL.Query(), want)
	}
	// Defaults: this process's platform and architecture, in the API's terms.
	if _, err := client.ListReleases(context.Background(), ReleaseQuery{LicenseKey: releaseKey}); err != nil {
		t.Fatal(err)
	}
	platform, arch := CurrentPlatform()
	if got.URL.Query().Get("platform") != platform || got.URL.Query().Get("arch") != arch || got.URL.Query().Has("channel") {
		t.Fatalf("default query %v (this process: %s %s)", got.URL.Query(), platform, arch)
	}
	s.api.route("/api/v1/releases/upgrade", func(w http.ResponseWriter, r *http.Request) {
		got = r
		writeJSON(w, 200, map[string]any{"available": false, "reason": "MaintenanceExpired", "release": release})
	})
	check, err := client.CheckForUpdate(context.Background(), UpdateQuery{LicenseKey: releaseKey, CurrentVersion: "1.0.0"})
	if err != nil || check.Available || check.Reason != "MaintenanceExpired" || check.Release == nil || check.Release.Version != "2.0.0" || got.URL.Query().Get("version") != "1.0.0" {
		t.Fatalf("CheckForUpdate: %+v %v", check, err)
	}
	s.api.route("/api/v1/releases/upgrade", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"isValid": false, "errorCode": "ProductMismatch", "message": "another product"})
	})
	_, err = client.CheckForUpdate(context.Background(), UpdateQuery{LicenseKey: releaseKey, CurrentVersion: "1.0.0"})
	wantCode(t, err, "ProductMismatch")
}

func TestDownloadArtifactReturnsVerifiedBytesFetchedWithoutTheKey(t *testing.T) {
	s := newReleaseStubs(t)
	var out bytes.Buffer
	if err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), s.artifact(t, nil), &out, DownloadOptions{LicenseKey: releaseKey}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), releaseFile) {
		t.Fatal("the bytes differ")
	}
	if len(s.seen) != 1 || s.seen[0].Header.Get("Authorization") != "License "+releaseKey {
		t.Fatal("the link is asked for with the key in the header")
	}
	if len(s.fileSeen) != 1 || s.fileSeen[0].Header.Get("Authorization") != "" || s.fileSeen[0].URL.RawQuery != "token=short" {
		t.Fatalf("the file is fetched from the link alone, without the key: %v", s.fileSeen)
	}
}

func TestDownloadArtifactRefusesBytesThatDoNotMatch(t *testing.T) {
	altered := append([]byte{}, releaseFile...)
	altered[100] ^= 1
	for name, body := range map[string][]byte{"altered": altered, "longer": append(append([]byte{}, releaseFile...), '!'), "shorter": releaseFile[:len(releaseFile)-1]} {
		s := newReleaseStubs(t)
		s.serveFile = func(w http.ResponseWriter, r *http.Request) { w.Write(body) }
		var out bytes.Buffer
		err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), s.artifact(t, nil), &out, DownloadOptions{LicenseKey: releaseKey})
		wantCode(t, err, CodeArtifactIntegrity)
		if out.Len() != 0 {
			t.Fatalf("%s: unverified bytes were written", name)
		}
	}
}

func TestDownloadArtifactChecksTheSignatureBeforeFetching(t *testing.T) {
	s := newReleaseStubs(t)
	good := s.artifact(t, nil)
	edited := good
	edited.Size++
	forged := good
	// Another first character: it carries six bits of the signature (the last one may carry padding bits only).
	first := "A"
	if good.Signature[0] == 'A' {
		first = "B"
	}
	forged.Signature = first + good.Signature[1:]
	for _, candidate := range []Artifact{s.artifact(t, map[string]any{"product": "Other App"}), edited, forged} {
		err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), candidate, &bytes.Buffer{}, DownloadOptions{LicenseKey: releaseKey})
		wantCode(t, err, CodeArtifactIntegrity)
	}
	if len(s.seen) != 0 || len(s.fileSeen) != 0 {
		t.Fatal("nothing may be fetched before the signature checks out")
	}
}

func TestDownloadArtifactFollowsNoRedirectAndRetriesTransientFailures(t *testing.T) {
	s := newReleaseStubs(t)
	s.serveFile = func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.files.URL+"/elsewhere", http.StatusFound)
	}
	err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), s.artifact(t, nil), &bytes.Buffer{}, DownloadOptions{LicenseKey: releaseKey})
	wantCode(t, err, CodeInvalidResponse)
	if s.files.count("/elsewhere") != 0 {
		t.Fatal("the redirect was followed")
	}
	failures := 1
	s.serveFile = func(w http.ResponseWriter, r *http.Request) {
		if failures > 0 {
			failures--
			w.WriteHeader(503)
			w.Write([]byte("<Error>SlowDown</Error>"))
			return
		}
		w.Write(releaseFile)
	}
	var out bytes.Buffer
	if err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), s.artifact(t, nil), &out, DownloadOptions{LicenseKey: releaseKey}); err != nil || !bytes.Equal(out.Bytes(), releaseFile) {
		t.Fatalf("a 503 of the file host is retried: %v", err)
	}
}

// failingWriter accepts nothing: the caller's writer (a full disk, a closed pipe).
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

func TestDownloadArtifactReportsAWriterThatFailsAsFileWriteFailed(t *testing.T) {
	s := newReleaseStubs(t)
	err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), s.artifact(t, nil), failingWriter{}, DownloadOptions{LicenseKey: releaseKey})
	wantCode(t, err, CodeFileWriteFailed)
	if !errors.Is(err, ErrFileWriteFailed) || IsTransient(err) {
		t.Fatalf("FileWriteFailed is an *Error, local, not transient: %v", err)
	}
	if len(s.fileSeen) != 1 {
		t.Fatalf("the file is fetched once, not retried: %d", len(s.fileSeen))
	}
}

func TestDownloadArtifactStagesTheFileInTempDir(t *testing.T) {
	s := newReleaseStubs(t)
	staging := t.TempDir()
	seenStaged := 0
	s.serveFile = func(w http.ResponseWriter, r *http.Request) {
		entries, _ := os.ReadDir(staging)
		seenStaged = len(entries)
		w.Write(releaseFile)
	}
	var out bytes.Buffer
	if err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), s.artifact(t, nil), &out, DownloadOptions{LicenseKey: releaseKey, TempDir: staging}); err != nil || !bytes.Equal(out.Bytes(), releaseFile) {
		t.Fatalf("a download staged in TempDir: %v", err)
	}
	if entries, _ := os.ReadDir(staging); seenStaged != 1 || len(entries) != 0 {
		t.Fatalf("the temporary file is in TempDir while the file arrives (%d), and removed after (%d left)", seenStaged, len(entries))
	}
	err := testClient(t, s.api, nil).DownloadArtifact(context.Background(), s.artifact(t, nil), &bytes.Buffer{}, DownloadOptions{LicenseKey: releaseKey, TempDir: filepath.Join(staging, "missing")})
	wantCode(t, err, CodeFileWriteFailed)
}
