using System;
using System.IO;
using System.Linq;

namespace Keyforge
{
    /// <summary>
    /// A stable id of this machine, to use as deviceId when a license should follow the machine rather than the
    /// installation: the hex SHA-256 of a salt (pass your product's name), a newline and the operating system's machine
    /// id, as every Keyforge SDK computes it, so two vendors' applications on one machine send unrelated values and the
    /// raw id never leaves it.
    /// Linux: /etc/machine-id (or /var/lib/dbus/machine-id). Windows: HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid.
    /// macOS: IOPlatformUUID (ioreg). It changes when the operating system is reinstalled.
    /// </summary>
    public static class MachineFingerprint
    {
        /// <exception cref="KeyforgeException">MachineIdUnavailable when the platform offers none (a minimal container).</exception>
        public static string Get(string salt = "keyforge")
        {
            // An empty salt is the default, as in every Keyforge SDK (Go has no other way to say "none").
            return Codec.Sha256Hex((string.IsNullOrEmpty(salt) ? "keyforge" : salt) + "\n" + MachineId());
        }

        /// <summary>The operating system's identifier of this machine, as is (not hashed): prefer <see cref="Get"/>, which never sends it anywhere.</summary>
        /// <exception cref="KeyforgeException">MachineIdUnavailable when the platform offers none.</exception>
        public static string MachineId()
        {
            var id = ReadMachineId();
            if (string.IsNullOrEmpty(id)) throw new KeyforgeException("MachineIdUnavailable", "No machine identifier found on this platform: pass your own deviceId (or rely on KeyforgeClient.DeviceId(), an id per installation).");
            return id.Trim();
        }

        static string ReadMachineId()
        {
            foreach (var path in new[] { "/etc/machine-id", "/var/lib/dbus/machine-id" })
            {
                try { var text = File.ReadAllText(path).Trim(); if (text.Length > 0) return text; }
                catch (IOException) { }
                catch (UnauthorizedAccessException) { }
            }
            if (Environment.OSVersion.Platform == PlatformID.Win32NT) return WindowsMachineGuid();
            return MacPlatformUuid();
        }

        static string WindowsMachineGuid()
        {
            // Through reg.exe: the registry API is not part of netstandard2.0.
            var output = Run("reg", "query HKLM\\SOFTWARE\\Microsoft\\Cryptography /v MachineGuid");
            var line = output == null ? null : output.Split('\n').FirstOrDefault(l => l.Contains("MachineGuid"));
            return line == null ? null : line.Trim().Split(' ').Last(part => part.Length > 0);
        }

        static string MacPlatformUuid()
        {
            var output = Run("ioreg", "-rd1 -c IOPlatformExpertDevice");
            var line = output == null ? null : output.Split('\n').FirstOrDefault(l => l.Contains("IOPlatformUUID"));
            return line == null ? null : line.Split('"').Reverse().Skip(1).FirstOrDefault();
        }

        internal static string Run(string file, string arguments)
        {
            try
            {
                var start = new System.Diagnostics.ProcessStartInfo(file, arguments) { RedirectStandardOutput = true, UseShellExecute = false, CreateNoWindow = true };
                using (var process = System.Diagnostics.Process.Start(start))
                {
                    var output = process.StandardOutput.ReadToEnd();
                    process.WaitForExit(5000);
                    return output;
                }
            }
            catch (Exception) { return null; }
        }
    }
}
