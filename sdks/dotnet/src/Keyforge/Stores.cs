using System;
using System.Collections.Concurrent;
using System.IO;
using System.Runtime.InteropServices;

namespace Keyforge
{
    /// <summary>
    /// Where the client keeps verified tokens, the fetched JWKS, air-gapped device keys, queued usage and the
    /// installation's device id. Values never contain a license key (records are named by a digest of it).
    /// Implementations must be safe to call from several threads.
    /// </summary>
    public interface ITokenStore
    {
        string Get(string key);
        void Set(string key, string value);
        void Delete(string key);
    }

    /// <summary>In memory, for the life of the process.</summary>
    public sealed class MemoryStore : ITokenStore
    {
        readonly ConcurrentDictionary<string, string> values = new ConcurrentDictionary<string, string>(StringComparer.Ordinal);

        public string Get(string key) { string value; return values.TryGetValue(key, out value) ? value : null; }
        public void Set(string key, string value) { values[key] = value; }
        public void Delete(string key) { string removed; values.TryRemove(key, out removed); }
    }

    /// <summary>
    /// One file per record in a directory that only the user can read: on Linux and macOS the directory is made 0700
    /// and each file 0600 (whatever the umask); on Windows the files inherit the user profile's ACL (use a folder under
    /// <c>%LOCALAPPDATA%</c>). Each write goes to a temporary file that is renamed over the old one, so a crash never
    /// leaves half a record.
    /// </summary>
    public sealed class FileStore : ITokenStore
    {
        readonly string directory;
        readonly object writeLock = new object();

        public string Directory { get { return directory; } }

        public FileStore(string directory)
        {
            if (string.IsNullOrEmpty(directory)) throw new ArgumentException("FileStore needs a directory.");
            this.directory = Path.GetFullPath(directory);
            System.IO.Directory.CreateDirectory(this.directory);
            Posix.Chmod(this.directory, Convert.ToInt32("700", 8));
        }

        string PathOf(string key)
        {
            // Record names hold ':' and URLs; a digest makes every one a portable file name.
            return Path.Combine(directory, Codec.Sha256Hex(key).Substring(0, 40) + ".json");
        }

        public string Get(string key)
        {
            try { return File.ReadAllText(PathOf(key), Codec.Utf8); }
            catch (FileNotFoundException) { return null; }
            catch (DirectoryNotFoundException) { return null; }
        }

        public void Set(string key, string value)
        {
            var target = PathOf(key);
            var temporary = target + "." + Codec.RandomToken(6) + ".tmp";
            lock (writeLock)
            {
                using (var stream = new FileStream(temporary, FileMode.CreateNew, FileAccess.Write, FileShare.None))
                {
                    Posix.Chmod(temporary, Convert.ToInt32("600", 8));
                    var bytes = Codec.Utf8.GetBytes(value);
                    stream.Write(bytes, 0, bytes.Length);
                    stream.Flush(true);
                }
                try
                {
                    if (File.Exists(target)) File.Replace(temporary, target, null);
                    else File.Move(temporary, target);
                }
                catch
                {
                    try { File.Delete(temporary); } catch (IOException) { }
                    throw;
                }
            }
        }

        public void Delete(string key)
        {
            lock (writeLock)
            {
                try { File.Delete(PathOf(key)); }
                catch (DirectoryNotFoundException) { }
            }
        }
    }

    internal static class Posix
    {
        [DllImport("libc", EntryPoint = "chmod", SetLastError = true)]
        static extern int chmod(string path, int mode);

        /// <summary>Sets a file's mode on Linux and macOS; a no-op on Windows (ACLs apply there).</summary>
        public static void Chmod(string path, int mode)
        {
            if (Environment.OSVersion.Platform != PlatformID.Unix && Environment.OSVersion.Platform != PlatformID.MacOSX) return;
            if (chmod(path, mode) != 0) throw new IOException("Cannot make " + path + " private (chmod failed, errno " + Marshal.GetLastWin32Error() + ").");
        }
    }
}
