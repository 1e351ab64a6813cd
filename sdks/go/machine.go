package keyforge

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"
)

var (
	ioregUUID   = regexp.MustCompile(`"IOPlatformUUID"\s*=\s*"([^"]+)"`)
	machineGUID = regexp.MustCompile(`(?i)MachineGuid\s+REG_SZ\s+(\S+)`)
)

// MachineID is the operating system's identifier of this machine, as is (not hashed): /etc/machine-id (or
// /var/lib/dbus/machine-id) on Linux, IOPlatformUUID (ioreg) on macOS, the registry's MachineGuid on Windows,
// kern.hostuuid (or /etc/hostid) on FreeBSD, OpenBSD and NetBSD. Prefer MachineFingerprint, which never sends
// this value anywhere. Returns MachineIdUnavailable when the platform offers none (a minimal container).
func MachineID() (string, error) {
	var id string
	switch runtime.GOOS {
	case "linux", "android":
		id = firstLine("/etc/machine-id", "/var/lib/dbus/machine-id")
	case "darwin":
		if match := ioregUUID.FindStringSubmatch(run("ioreg", "-rd1", "-c", "IOPlatformExpertDevice")); match != nil {
			id = match[1]
		}
	case "windows":
		if match := machineGUID.FindStringSubmatch(run("reg", "query", `HKEY_LOCAL_MACHINE\SOFTWARE\Microsoft\Cryptography`, "/v", "MachineGuid", "/reg:64")); match != nil {
			id = match[1]
		}
	case "freebsd", "openbsd", "netbsd", "dragonfly":
		id = strings.TrimSpace(run("sysctl", "-n", "kern.hostuuid"))
		if id == "" {
			id = firstLine("/etc/hostid")
		}
	}
	if id == "" {
		return "", &Error{Code: CodeMachineIDUnavailable, Kind: KindLocal, Message: "No machine identifier found on " + runtime.GOOS + ": pass your own DeviceID (or rely on the installation id)."}
	}
	return id, nil
}

// MachineFingerprint is a stable device fingerprint for DeviceID: the hex SHA-256 of salt, a newline and
// MachineID (the same value the TypeScript SDK's machineFingerprint computes on the same machine). Pass your
// product's name as salt so two vendors' applications on one machine send unrelated values ("" means
// "keyforge").
//
// It identifies the operating-system installation, not the hardware: a reinstall changes it, a cloned virtual
// machine or disk image shares it, and an administrator can change it. Good for "one seat per machine"; not
// tamper-proof hardware binding.
func MachineFingerprint(salt string) (string, error) {
	id, err := MachineID()
	if err != nil {
		return "", err
	}
	if salt == "" {
		salt = "keyforge"
	}
	return sha256Hex(salt + "\n" + id), nil
}

func firstLine(files ...string) string {
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			if value := strings.TrimSpace(string(data)); value != "" {
				return value
			}
		}
	}
	return ""
}

func run(command string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, command, args...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}
