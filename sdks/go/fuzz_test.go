package keyforge

// Random tokens and license files: whatever the input, the SDK answers with a typed *Error (or a result that
// verified), never a panic or a hang.

import (
	"context"
	"sync"
	"testing"
	"time"
)

var (
	fuzzJWKSOnce sync.Once
	fuzzJWKS     *JWKS
	fuzzIssuer   string
)

// fuzzClient is a client trusting the vectors' rotated JWKS (parsed once: each fuzz input only verifies).
func fuzzClient(t *testing.T) *Client {
	fuzzJWKSOnce.Do(func() {
		v := loadVectors(t)
		fuzzJWKS, _ = ParseJWKS(v.JWKS["rotated"])
		fuzzIssuer = v.Issuer
	})
	client, err := New(Config{ServerURL: "http://127.0.0.1:9", Product: "Acme Studio", Issuer: fuzzIssuer, JWKS: fuzzJWKS, Clock: func() time.Time { return time.Unix(1780315260, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func FuzzOfflineToken(f *testing.F) {
	v := loadVectors(f)
	for _, vector := range v.OfflineTokens {
		f.Add(vector.Token)
	}
	f.Add("")
	f.Add("..")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("eyJhbGciOiJFZERTQSIsImtpZCI6MX0.e30.AAAA")
	f.Fuzz(func(t *testing.T, token string) {
		client := fuzzClient(t)
		entitlement, err := client.verifyToken(context.Background(), token, verifyOptions{now: time.Unix(1780315260, 0), deviceID: "conformance-device-1"})
		if err == nil {
			if entitlement == nil || entitlement.Device != "conformance-device-1" {
				t.Fatalf("accepted without a bound entitlement: %+v", entitlement)
			}
			return
		}
		if _, typed := err.(*Error); !typed {
			t.Fatalf("untyped error %T: %v", err, err)
		}
		// The same through the store: a record holding the token, checked offline.
		if err := client.saveRecord("FUZZ-KEY", tokenRecord{V: 1, Token: token}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.ValidateOffline(ValidateOfflineOptions{LicenseKey: "FUZZ-KEY"}); err != nil {
			if _, typed := err.(*Error); !typed {
				t.Fatalf("untyped error %T: %v", err, err)
			}
		}
	})
}

func FuzzLicenseFile(f *testing.F) {
	v := loadVectors(f)
	for _, vector := range v.LicenseFiles {
		f.Add(vector.File, vector.LicenseKey, vector.DeviceID)
	}
	for _, vector := range v.ActivationResponses {
		f.Add(vector.Response, vector.LicenseKey, vector.Pending.DeviceID)
	}
	f.Add(`{"v":1,"enc":"A256GCM","device":true,"salt":"AAAA","iv":"AAAAAAAAAAAAAAAA","ct":"AAAAAAAAAAAAAAAAAAAAAAAA"}`, "ACME-1", "d")
	f.Add(`{"v":1,"enc":null,"token":"a.b.c"}`, "", "")
	f.Add("-----BEGIN KEYFORGE LICENSE FILE-----\n-----END KEYFORGE LICENSE FILE-----", "", "")
	f.Add("-----BEGIN KEYFORGE LICENSE FILE-----\neyJ2IjoxLCJlbmMiOiJBMjU2R0NNIiwiZGV2aWNlIjp0cnVlLCJzYWx0IjoiIiwiaXYiOiIiLCJjdCI6IiJ9\n-----END KEYFORGE LICENSE FILE-----", "ACME-1", "d")
	f.Fuzz(func(t *testing.T, file, licenseKey, deviceID string) {
		client := fuzzClient(t)
		checks := []func() error{
			func() error {
				_, err := client.VerifyLicenseFile(context.Background(), file, LicenseFileOptions{LicenseKey: licenseKey, DeviceID: deviceID})
				return err
			},
			func() error {
				_, err := client.InstallLicenseFile(context.Background(), file, LicenseFileOptions{LicenseKey: licenseKey + "x", DeviceID: deviceID})
				return err
			},
			func() error {
				_, err := client.ApplyActivationResponse(context.Background(), file, licenseKey)
				return err
			},
			func() error {
				_, err := unarmor("ACTIVATION REQUEST", file)
				return err
			},
			func() error {
				// The input as the envelope inside a well-formed armor: reaches the JSON, decryption and token checks.
				_, err := client.VerifyLicenseFile(context.Background(), armor("LICENSE FILE", file), LicenseFileOptions{LicenseKey: licenseKey, DeviceID: deviceID})
				return err
			},
		}
		for _, check := range checks {
			if err := check(); err != nil {
				if _, typed := err.(*Error); !typed {
					t.Fatalf("untyped error %T: %v", err, err)
				}
			}
		}
	})
}
