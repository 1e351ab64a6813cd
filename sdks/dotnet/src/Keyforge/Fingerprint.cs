using System;
using System.IO;
using System.Linq;

namespace Keyforge
{
    /// <summary>
    /// A stable id of this machine, to use as deviceId when a license should follow the machine rather than the
    /// installation: SHA-256 (hex) of the operating system's machine id and the product, so two vendors' applications
    /// on one machine see different ids and the raw id never leaves it.
    /// Linux: /etc/machine-id (or /var/lib/dbus/machine-id). Windows: HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid.
    /// macOS: IOPlatformUUID (ioreg). It changes when the operating system is reinstalled.
    /// </summary>
    public static class MachineFingerprint
    {
        public static string Get(string product)
        {
            var raw = MachineId();
            if (string.IsNullOrEmpty(raw)) throw new PlatformNotSupportedException("No machine id on this platform: use KeyforgeClient.DeviceId() (an id per installation) instead.");
            return Codec.Sha256Hex("keyforge machine v1\n" + product + "\n" + raw.Trim().ToLowerInvariant());
        }

        static string MachineId()
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

        static string Run(string file, string arguments)
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
