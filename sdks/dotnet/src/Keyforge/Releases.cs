using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Net.Http;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge
{
    /// <summary>A downloadable file of a release, as <c>GET /api/v1/releases</c> lists it.</summary>
    public sealed class Artifact
    {
        public string Id { get; set; }
        public string Filename { get; set; }
        /// <summary>win32, darwin, linux …</summary>
        public string Platform { get; set; }
        /// <summary>x64, arm64 …</summary>
        public string Arch { get; set; }
        /// <summary>exe, dmg, AppImage, tar.gz …</summary>
        public string Filetype { get; set; }
        /// <summary>Bytes.</summary>
        public long Size { get; set; }
        /// <summary>Lower-case hex.</summary>
        public string Sha256 { get; set; }
        /// <summary>Lower-case hex.</summary>
        public string Sha512 { get; set; }
        /// <summary>The server's Ed25519 signature over the file's identity and digests (a compact JWS).</summary>
        public string Signature { get; set; }

        /// <summary>An artifact from its JSON object (as the API answers it).</summary>
        public static Artifact FromJson(IDictionary<string, object> json)
        {
            if (json == null) throw new ArgumentNullException("json");
            var size = json.Num("size");
            return new Artifact
            {
                Id = json.Str("id"), Filename = json.Str("filename"), Platform = json.Str("platform"), Arch = json.Str("arch"),
                Filetype = json.Str("filetype"), Size = size == null ? -1 : (long)size.Value, Sha256 = json.Str("sha256"),
                Sha512 = json.Str("sha512"), Signature = json.Str("signature"),
            };
        }
    }

    /// <summary>A published release this license may download.</summary>
    public sealed class Release
    {
        public string Id { get; set; }
        /// <summary>The product's id.</summary>
        public string Product { get; set; }
        /// <summary>Semantic version.</summary>
        public string Version { get; set; }
        /// <summary>stable, rc, beta, alpha or dev.</summary>
        public string Channel { get; set; }
        public string Status { get; set; }
        public string Notes { get; set; }
        public string PublishedAt { get; set; }
        public IList<Artifact> Artifacts { get; set; }

        public static Release FromJson(IDictionary<string, object> json)
        {
            if (json == null) return null;
            object raw;
            var artifacts = json.TryGetValue("artifacts", out raw) && raw is List<object> ? ((List<object>)raw).OfType<IDictionary<string, object>>().Select(Artifact.FromJson).ToList() : new List<Artifact>();
            return new Release
            {
                Id = json.Str("id"), Product = json.Str("product"), Version = json.Str("version"), Channel = json.Str("channel"),
                Status = json.Str("status"), Notes = json.Str("notes"), PublishedAt = json.Str("publishedAt"), Artifacts = artifacts,
            };
        }
    }

    /// <summary>
    /// The answer of <see cref="KeyforgeClient.CheckForUpdateAsync"/>. Available: <see cref="Release"/> is newer than the
    /// running version and this license may install it. Otherwise <see cref="Reason"/> says why not: NoNewerRelease, or
    /// MaintenanceExpired / FeatureMissing with <see cref="Release"/> the newest newer release it may not install.
    /// </summary>
    public sealed class UpdateCheck
    {
        public bool Available { get; internal set; }
        public string Reason { get; internal set; }
        public Release Release { get; internal set; }
    }

    /// <summary>This process's platform and architecture in the release API's terms.</summary>
    public static class CurrentPlatform
    {
        /// <summary>
        /// win32, darwin or linux, from RuntimeInformation.IsOSPlatform where the runtime has it (.NET Core, .NET 5+,
        /// .NET Framework 4.7.1+), else Environment.OSVersion (macOS told from Linux by its /System/Library); null otherwise.
        /// </summary>
        public static string Platform { get { return platform.Value; } }
        /// <summary>x64 or arm64, from RuntimeInformation.ProcessArchitecture where the runtime has it, else uname -m (Unix) or PROCESSOR_ARCHITECTURE (Windows); null otherwise.</summary>
        public static string Arch { get { return arch.Value; } }

        static readonly Lazy<string> platform = new Lazy<string>(DetectPlatform);
        static readonly Lazy<string> arch = new Lazy<string>(DetectArch);
        static readonly Type RuntimeInformation = Type.GetType("System.Runtime.InteropServices.RuntimeInformation") ?? Type.GetType("System.Runtime.InteropServices.RuntimeInformation, System.Runtime.InteropServices.RuntimeInformation");

        static string DetectPlatform()
        {
            var osPlatform = Type.GetType("System.Runtime.InteropServices.OSPlatform") ?? (RuntimeInformation == null ? null : RuntimeInformation.Assembly.GetType("System.Runtime.InteropServices.OSPlatform"));
            var isOsPlatform = RuntimeInformation == null ? null : RuntimeInformation.GetMethod("IsOSPlatform");
            if (osPlatform != null && isOsPlatform != null)
            {
                foreach (var pair in new[] { new[] { "Windows", "win32" }, new[] { "OSX", "darwin" }, new[] { "Linux", "linux" } })
                {
                    var value = osPlatform.GetProperty(pair[0]);
                    if (value != null && (bool)isOsPlatform.Invoke(null, new[] { value.GetValue(null) })) return pair[1];
                }
                return null;
            }
            if (Environment.OSVersion.Platform == PlatformID.Win32NT) return "win32";
            if (Environment.OSVersion.Platform == PlatformID.MacOSX) return "darwin";
            if (Environment.OSVersion.Platform == PlatformID.Unix) return Directory.Exists("/System/Library/CoreServices") ? "darwin" : "linux";
            return null;
        }

        static string DetectArch()
        {
            var property = RuntimeInformation == null ? null : RuntimeInformation.GetProperty("ProcessArchitecture");
            var name = property != null ? property.GetValue(null).ToString()
                : Environment.OSVersion.Platform == PlatformID.Win32NT ? Environment.GetEnvironmentVariable("PROCESSOR_ARCHITECTURE")
                : (MachineFingerprint.Run("uname", "-m") ?? "").Trim();
            switch ((name ?? "").ToLowerInvariant())
            {
                case "x64": case "amd64": case "x86_64": return "x64";
                case "arm64": case "aarch64": return "arm64";
                default: return null;
            }
        }
    }

    /// <summary>What an artifact's signature covers, and the checks of the bytes against it.</summary>
    internal sealed class SignedArtifact
    {
        public IDictionary<string, object> Claims;
        public long Size;
        public string Sha256;
        public string Sha512;

        static VerificationException Integrity(string message, Exception inner = null)
        {
            return new VerificationException(ErrorCodes.ArtifactIntegrity, message, inner);
        }

        /// <summary>
        /// Verifies the signature as an offline token's (EdDSA, a trusted kid, the issuer), then that it is an artifact
        /// signature (typ) of one of the products, of this artifact (its id, the listed size and digests). Any failure is
        /// ArtifactIntegrity.
        /// </summary>
        public static async Task<SignedArtifact> Verify(Artifact artifact, KeyRing keys, string issuer, IList<string> products, CancellationToken cancel)
        {
            if (artifact == null || artifact.Signature == null) throw Integrity("The artifact carries no signature.");
            IDictionary<string, object> claims;
            try
            {
                var key = await keys.KeyFor(OfflineTokens.KeyIdOf(artifact.Signature), true, cancel).ConfigureAwait(false);
                string kid;
                claims = OfflineTokens.VerifySignature(artifact.Signature, k => k == key.Kid ? key : null, out kid);
            }
            catch (VerificationException error)
            {
                throw Integrity("The artifact's signature does not verify (" + error.Code + ": " + error.Message + "): tampered, or not signed by this server.", error);
            }
            if (claims.Str("typ") != "keyforge.artifact") throw Integrity("The signature is not an artifact signature (typ).");
            if (claims.Str("iss") != issuer) throw Integrity("The artifact's signature was not issued by " + issuer + ".");
            // productName is the product's name (product its id); a name is what the client knows.
            var productName = claims.Str("productName");
            var product = claims.Str("product");
            if (!(productName != null && products.Contains(productName)) && !(product != null && products.Contains(product))) throw Integrity("The artifact is signed for another product.");
            if (claims.Str("artifact") != artifact.Id) throw Integrity("The signature is of another artifact.");
            var size = claims.Num("size");
            var signed = new SignedArtifact { Claims = claims, Sha256 = claims.Str("sha256"), Sha512 = claims.Str("sha512") };
            if (size == null || size.Value < 0 || size.Value != Math.Floor(size.Value) || size.Value > long.MaxValue / 2 || signed.Sha256 == null || signed.Sha512 == null)
                throw Integrity("The artifact's signature names no size and digests.");
            signed.Size = (long)size.Value;
            if (artifact.Size != signed.Size || (artifact.Sha256 ?? "").ToLowerInvariant() != signed.Sha256 || (artifact.Sha512 ?? "").ToLowerInvariant() != signed.Sha512)
                throw Integrity("The artifact's listed size or digests differ from the signed ones.");
            return signed;
        }

        /// <summary>Size, SHA-256 and SHA-512 of bytes fed as they arrive.</summary>
        internal sealed class Digests : IDisposable
        {
            readonly HashAlgorithm sha256 = SHA256.Create();
            readonly HashAlgorithm sha512 = SHA512.Create();
            public long Size;

            public void Add(byte[] buffer, int offset, int count)
            {
                Size += count;
                sha256.TransformBlock(buffer, offset, count, null, 0);
                sha512.TransformBlock(buffer, offset, count, null, 0);
            }

            public void Check(SignedArtifact signed)
            {
                if (Size != signed.Size) throw Integrity("The file is " + Size + " bytes; " + signed.Size + " were signed.");
                sha256.TransformFinalBlock(new byte[0], 0, 0);
                sha512.TransformFinalBlock(new byte[0], 0, 0);
                if (Hex(sha256.Hash) != signed.Sha256) throw Integrity("The file's SHA-256 is not the signed one.");
                if (Hex(sha512.Hash) != signed.Sha512) throw Integrity("The file's SHA-512 is not the signed one.");
            }

            public void Dispose() { sha256.Dispose(); sha512.Dispose(); }

            static string Hex(byte[] bytes) { return string.Concat(bytes.Select(b => b.ToString("x2"))); }
        }

        internal static VerificationException TooLong(long max)
        {
            return Integrity("GET (download link): the file is longer than the " + max + " bytes signed.");
        }
    }

    public sealed partial class KeyforgeClient
    {
        /// <summary>
        /// The published releases this license may download (its features and maintenance period allow), newest first,
        /// of <paramref name="channel"/> (default stable) and the more stable ones, with the artifacts of
        /// <paramref name="platform"/>/<paramref name="arch"/> (default: this process's, <see cref="CurrentPlatform"/>).
        /// The key goes in the <c>Authorization: License</c> header, never in the URL; with <paramref name="deviceId"/>
        /// the device must hold an activation.
        /// </summary>
        /// <exception cref="LicenseRejectedException">ProductMismatch, LicenseNotFound, DeviceNotActivated …</exception>
        public async Task<IList<Release>> ListReleasesAsync(string licenseKey, string channel = null, string platform = null, string arch = null, string deviceId = null, int? limit = null, CancellationToken cancel = default(CancellationToken))
        {
            var answer = await ReleaseCall("/api/v1/releases", licenseKey, deviceId, new Dictionary<string, string>
            {
                { "channel", channel }, { "platform", platform ?? CurrentPlatform.Platform }, { "arch", arch ?? CurrentPlatform.Arch },
                { "limit", limit == null ? null : limit.Value.ToString(System.Globalization.CultureInfo.InvariantCulture) },
            }, cancel).ConfigureAwait(false);
            object raw;
            if (!answer.TryGetValue("releases", out raw) || !(raw is List<object>))
                throw new ApiException(ErrorCodes.InvalidResponse, "GET /api/v1/releases answered without releases.", 200);
            return ((List<object>)raw).OfType<IDictionary<string, object>>().Select(Release.FromJson).ToList();
        }

        /// <summary>
        /// Whether a release newer than <paramref name="currentVersion"/> (semver) is available to this license on
        /// <paramref name="channel"/> (default stable) for <paramref name="platform"/>/<paramref name="arch"/> (default:
        /// this process's).
        /// </summary>
        /// <exception cref="ApiException">InvalidRequest for a version that is not semantic; and the errors of ListReleasesAsync.</exception>
        public async Task<UpdateCheck> CheckForUpdateAsync(string licenseKey, string currentVersion, string channel = null, string platform = null, string arch = null, string deviceId = null, CancellationToken cancel = default(CancellationToken))
        {
            if (string.IsNullOrEmpty(currentVersion)) throw new ArgumentException("currentVersion must be the running version (semver).");
            var answer = await ReleaseCall("/api/v1/releases/upgrade", licenseKey, deviceId, new Dictionary<string, string>
            {
                { "version", currentVersion }, { "channel", channel }, { "platform", platform ?? CurrentPlatform.Platform }, { "arch", arch ?? CurrentPlatform.Arch },
            }, cancel).ConfigureAwait(false);
            object available;
            if (!answer.TryGetValue("available", out available) || !(available is bool))
                throw new ApiException(ErrorCodes.InvalidResponse, "GET /api/v1/releases/upgrade answered without available.", 200);
            return new UpdateCheck
            {
                Available = (bool)available,
                Reason = (bool)available ? null : answer.Str("reason") ?? "NoNewerRelease",
                Release = Release.FromJson(answer.Obj("release")),
            };
        }

        /// <summary>
        /// Downloads an artifact and returns its bytes only once they check out: the signature first (as an offline token:
        /// EdDSA, a trusted kid, the issuer; then this artifact of this product), then the file, read with a cap of the
        /// signed size and hashed as it arrives, whose size, SHA-256 and SHA-512 must be the signed ones. The link comes
        /// from <c>GET /api/v1/artifacts/{id}/download</c> (the key in the header); the file is fetched from that link
        /// alone — possibly another host (a presigned object-store URL) — with no credentials and no redirect followed;
        /// a link on the server's public address (the Issuer) is fetched through BaseUrl.
        /// The timeout bounds each wait for data, not the whole download; transient failures are retried.
        /// </summary>
        /// <exception cref="VerificationException">ArtifactIntegrity when anything does not match (nothing is returned).</exception>
        public async Task<byte[]> DownloadArtifactAsync(string licenseKey, Artifact artifact, string deviceId = null, CancellationToken cancel = default(CancellationToken))
        {
            using (var buffer = new MemoryStream())
            {
                await DownloadTo(licenseKey, artifact, deviceId, buffer, cancel).ConfigureAwait(false);
                return buffer.ToArray();
            }
        }

        /// <summary>
        /// <see cref="DownloadArtifactAsync"/> into a file: streamed to a temporary file beside <paramref name="path"/>,
        /// moved to <paramref name="path"/> (replacing it) only once verified; on any failure the temporary file is
        /// deleted and <paramref name="path"/> is untouched.
        /// </summary>
        /// <exception cref="VerificationException">ArtifactIntegrity when anything does not match.</exception>
        /// <exception cref="KeyforgeException">FileWriteFailed when the file cannot be written (a folder that does not
        /// exist or is not writable, a full disk): not retried.</exception>
        public async Task DownloadArtifactToFileAsync(string licenseKey, Artifact artifact, string path, string deviceId = null, CancellationToken cancel = default(CancellationToken))
        {
            if (string.IsNullOrEmpty(path)) throw new ArgumentException("path must name the file to write.");
            var full = Path.GetFullPath(path);
            var temporary = Path.Combine(Path.GetDirectoryName(full), ".keyforge-download-" + Codec.RandomToken(12));
            try
            {
                using (var file = new FileStream(temporary, FileMode.CreateNew, FileAccess.ReadWrite, FileShare.None))
                    await DownloadTo(licenseKey, artifact, deviceId, file, cancel).ConfigureAwait(false);
                // Replaced in one step: whoever opens path sees the old file or the new one, never none.
                if (File.Exists(full)) File.Replace(temporary, full, null);
                else File.Move(temporary, full);
            }
            catch (Exception error) when (IsDiskFailure(error))
            {
                // The network's failures are KeyforgeExceptions by now: what is left is the disk's.
                throw WriteFailed(error);
            }
            finally
            {
                if (File.Exists(temporary)) File.Delete(temporary);
            }
        }

        /// <summary>
        /// Checks bytes obtained another way (an updater's own download) against an artifact's signature: the checks of
        /// <see cref="DownloadArtifactAsync"/>. Returns the signed claims.
        /// </summary>
        /// <exception cref="VerificationException">ArtifactIntegrity.</exception>
        public async Task<IDictionary<string, object>> VerifyArtifactAsync(Artifact artifact, byte[] data, CancellationToken cancel = default(CancellationToken))
        {
            var signed = await SignedArtifact.Verify(artifact, keys, Issuer, Products, cancel).ConfigureAwait(false);
            using (var digests = new SignedArtifact.Digests())
            {
                digests.Add(data, 0, data.Length);
                digests.Check(signed);
            }
            return signed.Claims;
        }

        async Task DownloadTo(string licenseKey, Artifact artifact, string deviceId, Stream sink, CancellationToken cancel)
        {
            var signed = await SignedArtifact.Verify(artifact, keys, Issuer, Products, cancel).ConfigureAwait(false);
            var answer = await ReleaseCall("/api/v1/artifacts/" + Uri.EscapeDataString(artifact.Id ?? "") + "/download", licenseKey, deviceId, new Dictionary<string, string>(), cancel).ConfigureAwait(false);
            var url = answer.Str("url") ?? "";
            // A link on the server's own public address (the issuer, its PUBLIC_URL) is fetched through BaseUrl, the
            // address this client reaches the same server at; any other link (an object store's) as it is.
            var issuer = Issuer.TrimEnd('/');
            if (issuer != BaseUrl && url.StartsWith(issuer + "/", StringComparison.Ordinal)) url = BaseUrl + url.Substring(issuer.Length);
            Uri link;
            if (!Uri.TryCreate(url, UriKind.Absolute, out link) || (link.Scheme != "http" && link.Scheme != "https"))
                throw new ApiException(ErrorCodes.InvalidResponse, "The download answer carries no http(s) link.", 200);
            SignedArtifact.Digests digests = null;
            try
            {
                await transport.Retrying(async n =>
                {
                    sink.SetLength(0);
                    sink.Position = 0;
                    if (digests != null) digests.Dispose();
                    digests = new SignedArtifact.Digests();
                    var current = digests;
                    await transport.Download(link.AbsoluteUri, signed.Size, (chunk, count) =>
                    {
                        current.Add(chunk, 0, count);
                        // Inside the transport's read loop the disk's failure would pass for the network's (and be
                        // retried): it is thrown as FileWriteFailed here.
                        try { sink.Write(chunk, 0, count); }
                        catch (Exception error) when (IsDiskFailure(error)) { throw WriteFailed(error); }
                    }, cancel).ConfigureAwait(false);
                    return true;
                }, cancel).ConfigureAwait(false);
                digests.Check(signed);
            }
            finally
            {
                if (digests != null) digests.Dispose();
            }
        }

        static bool IsDiskFailure(Exception error)
        {
            return error is IOException || error is UnauthorizedAccessException;
        }

        /// <summary>A local failure writing a download: its own code, never retried (the disk's, not the network's).</summary>
        static KeyforgeException WriteFailed(Exception error)
        {
            return new KeyforgeException(ErrorCodes.FileWriteFailed, "The download cannot be written: " + error.Message, error);
        }

        /// <summary>A GET of the release API: the key in <c>Authorization: License</c>, the product and the device in the query.</summary>
        async Task<IDictionary<string, object>> ReleaseCall(string path, string licenseKey, string deviceId, IDictionary<string, string> query, CancellationToken cancel)
        {
            RequireKey(licenseKey);
            var parameters = new List<string> { "product=" + Uri.EscapeDataString(Products[0]) };
            foreach (var pair in query) if (pair.Value != null) parameters.Add(pair.Key + "=" + Uri.EscapeDataString(pair.Value));
            if (deviceId != null) parameters.Add("deviceId=" + Uri.EscapeDataString(deviceId));
            var target = path + "?" + string.Join("&", parameters);
            var answer = await transport.Retrying(n => transport.Once("GET", target, cancel: cancel, license: licenseKey), cancel).ConfigureAwait(false);
            object isValid;
            if (answer.Json.TryGetValue("isValid", out isValid) && isValid is bool && !(bool)isValid) throw Rejection(answer.Json);
            return answer.Json;
        }
    }
}
