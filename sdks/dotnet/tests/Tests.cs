using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Net;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge.Tests
{
    /// <summary>
    /// The .NET SDK's tests: every conformance vector (sdks/conformance/vectors.json), hostile servers and inputs, and a
    /// fuzz run over tokens and license files. Ends with "N passed, N failed"; exit code 1 on any failure.
    /// </summary>
    static class Program
    {
        static readonly List<KeyValuePair<string, Action>> tests = new List<KeyValuePair<string, Action>>();
        static IDictionary<string, object> vectors;

        static void Test(string name, Action body) { tests.Add(new KeyValuePair<string, Action>(name, body)); }

        static void Check(bool condition, string message)
        {
            if (!condition) throw new Exception(message);
        }

        static string Code(Action action)
        {
            try { action(); return null; }
            catch (AggregateException error) when (error.InnerException is KeyforgeException) { return ((KeyforgeException)error.InnerException).Code; }
            catch (KeyforgeException error) { return error.Code; }
        }

        static T Run<T>(Task<T> task) { return task.GetAwaiter().GetResult(); }
        static void Run(Task task) { task.GetAwaiter().GetResult(); }

        static string RepositoryRoot()
        {
            var dir = new DirectoryInfo(AppDomain.CurrentDomain.BaseDirectory);
            while (dir != null && !File.Exists(Path.Combine(dir.FullName, "sdks", "conformance", "vectors.json"))) dir = dir.Parent;
            if (dir == null) throw new Exception("sdks/conformance/vectors.json not found above " + AppDomain.CurrentDomain.BaseDirectory);
            return dir.FullName;
        }

        static List<IDictionary<string, object>> List(string name)
        {
            return ((List<object>)vectors[name]).Cast<IDictionary<string, object>>().ToList();
        }

        static Jwks JwksNamed(string name)
        {
            return Jwks.Parse(Json.Stringify(((IDictionary<string, object>)vectors["jwks"])[name]));
        }

        static IList<string> ProductsOf(IDictionary<string, object> vector)
        {
            return vector.Strings("products") ?? new List<string> { (string)vectors["product"] };
        }

        static DateTimeOffset NowOf(IDictionary<string, object> vector)
        {
            return DateTimeOffset.FromUnixTimeSeconds((long)vector.Num("now").Value);
        }

        static int Tolerance { get { return (int)((double)vectors["clockToleranceSeconds"]); } }

        /// <summary>The verdict: "valid" or the error code; the claims when valid.</summary>
        static void Expect(IDictionary<string, object> vector, Func<Entitlement> check)
        {
            var expect = vector.Obj("expect");
            var name = vector.Str("name");
            Entitlement entitlement = null;
            string code = null;
            try { entitlement = check(); }
            catch (KeyforgeException error) { code = error.Code; }
            if (expect.IsTrue("valid"))
            {
                Check(code == null, name + ": expected valid, got " + code);
                var claims = expect.Obj("claims");
                if (claims != null && entitlement != null) Check(Json.Stringify(Sorted(claims)) == Json.Stringify(Sorted(entitlement.Claims)), name + ": claims differ");
            }
            else Check(code == expect.Str("error"), name + ": expected " + expect.Str("error") + ", got " + (code ?? "valid"));
        }

        static object Sorted(object value)
        {
            var map = value as IDictionary<string, object>;
            if (map != null) { var sorted = new SortedDictionary<string, object>(StringComparer.Ordinal); foreach (var entry in map) sorted[entry.Key] = Sorted(entry.Value); return sorted; }
            var list = value as List<object>;
            return list != null ? list.Select(Sorted).ToList() : value;
        }

        /// <summary>A compact JWS of <paramref name="payload"/>, signed with the Ed25519 key of <paramref name="seed"/>.</summary>
        static string Jws(IDictionary<string, object> header, IDictionary<string, object> payload, string seed)
        {
            var input = Codec.Base64Url(Codec.Utf8.GetBytes(Json.Stringify(header))) + "." + Codec.Base64Url(Codec.Utf8.GetBytes(Json.Stringify(payload)));
            return input + "." + Codec.Base64Url(Sodium.Sign(Codec.Utf8.GetBytes(input), Codec.FromBase64UrlStrict(seed)));
        }

        static KeyforgeClient VectorClient(IDictionary<string, object> vector, ITokenStore store = null)
        {
            var now = NowOf(vector);
            return new KeyforgeClient(new KeyforgeClientOptions
            {
                BaseUrl = "http://127.0.0.1:9", Issuer = (string)vectors["issuer"], Products = ProductsOf(vector),
                PinnedKeys = JwksNamed(vector.Str("jwks")), Clock = () => now, ClockToleranceSeconds = Tolerance, Store = store ?? new MemoryStore(),
            });
        }

        static void VectorTests()
        {
            Test("vectors: offline tokens", () =>
            {
                foreach (var vector in List("offlineTokens"))
                {
                    Expect(vector, () =>
                    {
                        var jwks = JwksNamed(vector.Str("jwks"));
                        var now = NowOf(vector);
                        var entitlement = OfflineTokens.Verify(vector.Str("token"), jwks.Find, new TokenCheck
                        {
                            Issuer = (string)vectors["issuer"], Products = ProductsOf(vector), Now = now, ClockToleranceSeconds = Tolerance,
                            DeviceId = vector.Str("deviceId"), RequireActivation = vector.IsTrue("requireActivation"), Challenge = vector.Str("challenge"),
                        });
                        if (vector.IsTrue("offline")) OfflineTokens.CheckOfflineUse(entitlement, now, Tolerance);
                        return entitlement;
                    });
                }
            });

            Test("vectors: license files", () =>
            {
                foreach (var vector in List("licenseFiles"))
                {
                    using (var client = VectorClient(vector))
                        Expect(vector, () => Run(client.VerifyLicenseFileAsync(vector.Str("file"), vector.Str("licenseKey"), vector.Str("deviceId"), vector.IsTrue("requireActivation"))));
                }
            });

            Test("vectors: activation requests (MAC, hint, and the request written byte for byte)", () =>
            {
                var keys = (IDictionary<string, object>)vectors["keys"];
                foreach (var vector in List("activationRequests"))
                {
                    var name = vector.Str("name");
                    var f = vector.Obj("fields");
                    var fields = new ActivationRequestFields
                    {
                        Hint = f.Str("hint"), Device = f.Str("device"), Name = f.Str("name"), Pub = f.Str("pub"), Challenge = f.Str("challenge"),
                        Iat = (long)f.Num("iat").Value, Product = f.Strings("product"), Version = f.Str("version"),
                    };
                    var valid = vector.Obj("expect").IsTrue("valid");
                    var mac = LicenseFiles.RequestMac(vector.Str("licenseKey"), fields);
                    Check((mac == vector.Str("mac")) == valid, name + ": MAC verdict differs (" + mac + ")");
                    if (!valid) continue;
                    Check(fields.Hint == LicenseFiles.KeyHint(vector.Str("licenseKey")), name + ": hint differs");
                    var seed = ((IDictionary<string, object>)keys[vector.Str("deviceKey")]).Str("seed");
                    Check(new DeviceKey(seed).Pub == fields.Pub, name + ": the device key's public half differs");
                    string request, compact;
                    LicenseFiles.EncodeRequest(fields, mac, out request, out compact);
                    Check(request == vector.Str("request"), name + ": armored request differs");
                    Check(compact == vector.Str("compact"), name + ": compact request differs");
                    Check(Json.Stringify(Json.Parse(LicenseFiles.Unarmor("ACTIVATION REQUEST", compact))) == Json.Stringify(Json.Parse(LicenseFiles.Unarmor("ACTIVATION REQUEST", request))), name + ": the two forms differ");
                }
            });

            Test("vectors: activation responses", () =>
            {
                foreach (var vector in List("activationResponses"))
                {
                    var store = new MemoryStore();
                    using (var client = VectorClient(vector, store))
                    {
                        var pending = vector.Obj("pending");
                        var licenseKey = vector.Str("licenseKey");
                        var digest = licenseKey != null ? client.Digest(licenseKey) : "vector";
                        store.Set("device-key:" + digest, Json.Stringify(new Dictionary<string, object>
                        {
                            { "v", 1L }, { "pending", new Dictionary<string, object> { { "seed", "" }, { "pub", pending.Str("pub") }, { "deviceId", pending.Str("deviceId") }, { "challenge", pending.Str("challenge") } } },
                        }));
                        store.Set("offline-request:" + pending.Str("challenge"), digest);
                        Expect(vector, () => Run(client.ApplyActivationResponseAsync(vector.Str("response"), licenseKey)).Entitlement);
                    }
                }
            });

            Test("a token with a critical header extension, a future nbf or an nbf that is not a time is refused (as jose, Go and Python)", () =>
            {
                var keys = (IDictionary<string, object>)vectors["keys"];
                var signer = (IDictionary<string, object>)keys["new"];
                var valid = List("offlineTokens").First(v => v.Str("name") == "valid-new-key");
                var claims = new Dictionary<string, object>(valid.Obj("expect").Obj("claims"));
                var now = NowOf(valid);
                Func<Dictionary<string, object>, Dictionary<string, object>, string> sign = (header, payload) => Jws(header, payload, signer.Str("seed"));
                var plainHeader = new Dictionary<string, object> { { "alg", "EdDSA" }, { "kid", signer.Str("kid") } };
                var jwks = JwksNamed("rotated");
                var check = new TokenCheck { Issuer = (string)vectors["issuer"], Products = ProductsOf(valid), Now = now, ClockToleranceSeconds = Tolerance };
                Check(OfflineTokens.Verify(sign(plainHeader, claims), jwks.Find, check).LicenseId == claims.Str("sub"), "the re-signed token does not verify");
                var critHeader = new Dictionary<string, object>(plainHeader) { { "crit", new List<object> { "exp" } } };
                Check(Code(() => OfflineTokens.Verify(sign(critHeader, claims), jwks.Find, check)) == "TokenInvalid", "crit accepted");
                var future = new Dictionary<string, object>(claims) { { "nbf", (double)now.ToUnixTimeSeconds() + Tolerance + 3600 } };
                Check(Code(() => OfflineTokens.Verify(sign(plainHeader, future), jwks.Find, check)) == "TokenInvalid", "future nbf accepted");
                var notATime = new Dictionary<string, object>(claims) { { "nbf", "soon" } };
                Check(Code(() => OfflineTokens.Verify(sign(plainHeader, notATime), jwks.Find, check)) == "TokenInvalid", "nbf of another type accepted");
                var within = new Dictionary<string, object>(claims) { { "nbf", (double)now.ToUnixTimeSeconds() + Tolerance - 1 } };
                Check(Code(() => OfflineTokens.Verify(sign(plainHeader, within), jwks.Find, check)) == null, "nbf within the tolerance refused");
            });

            Test("vectors: deactivation proofs signed byte for byte", () =>
            {
                var keys = (IDictionary<string, object>)vectors["keys"];
                var genuine = 0;
                foreach (var vector in List("deactivationProofs"))
                {
                    if (!vector.Obj("expect").IsTrue("valid")) continue;
                    var c = vector.Obj("claims");
                    var key = new DeviceKey(((IDictionary<string, object>)keys[vector.Str("deviceKey")]).Str("seed"));
                    var proof = LicenseFiles.SignDeactivationProof(key, c.Str("activation"), c.Str("license"), c.Str("device"), (long)c.Num("iat").Value, c.Str("jti"));
                    Check(proof == vector.Str("proof"), vector.Str("name") + ": proof differs");
                    genuine++;
                }
                Check(genuine >= 2, "expected genuine proof vectors");
            });
        }

        /// <summary>
        /// ListReleasesAsync, CheckForUpdateAsync and DownloadArtifactAsync against a local stub of the release API, the
        /// file served by a second stub (another host, as a presigned object-store link is); and the artifact vectors.
        /// </summary>
        static void ReleaseTests()
        {
            Test("vectors: artifact signatures", () =>
            {
                foreach (var vector in List("artifactSignatures"))
                {
                    var withClock = new Dictionary<string, object>(vector) { { "now", 0d } };
                    using (var client = VectorClient(withClock))
                    {
                        var expect = vector.Obj("expect");
                        IDictionary<string, object> claims = null;
                        var code = Code(() => claims = Run(client.VerifyArtifactAsync(Artifact.FromJson(vector.Obj("artifact")), Codec.FromBase64UrlStrict(vector.Str("file")))));
                        if (expect.IsTrue("valid"))
                            Check(code == null && Json.Stringify(Sorted(claims)) == Json.Stringify(Sorted(expect.Obj("claims"))), vector.Str("name") + ": expected valid, got " + code);
                        else Check(code == expect.Str("error"), vector.Str("name") + ": expected " + expect.Str("error") + ", got " + (code ?? "valid"));
                    }
                }
            });

            const string key = "ACME-RELS-TEST-KEY1-0001";
            var file = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Repeat("installer bytes\n", 4096)));
            var signer = (IDictionary<string, object>)((IDictionary<string, object>)vectors["keys"])["new"];
            Func<Dictionary<string, object>, Artifact> artifactWith = changes =>
            {
                string sha256, sha512;
                using (var h = System.Security.Cryptography.SHA256.Create()) sha256 = string.Concat(h.ComputeHash(file).Select(b => b.ToString("x2")));
                using (var h = System.Security.Cryptography.SHA512.Create()) sha512 = string.Concat(h.ComputeHash(file).Select(b => b.ToString("x2")));
                var claims = new Dictionary<string, object>
                {
                    { "typ", "keyforge.artifact" }, { "iss", (string)vectors["issuer"] }, { "product", "Acme Studio" }, { "release", "rel-1" }, { "version", "2.0.0" },
                    { "artifact", "art-1" }, { "filename", "acme.tar.gz" }, { "platform", "linux" }, { "arch", "x64" }, { "size", (double)file.Length },
                    { "sha256", sha256 }, { "sha512", sha512 }, { "iat", 1780315200d },
                };
                foreach (var change in changes ?? new Dictionary<string, object>()) claims[change.Key] = change.Value;
                var header = new Dictionary<string, object> { { "alg", "EdDSA" }, { "kid", signer.Str("kid") }, { "typ", "JWT" } };
                return new Artifact { Id = "art-1", Filename = "acme.tar.gz", Platform = "linux", Arch = "x64", Filetype = "tar.gz", Size = file.Length, Sha256 = sha256, Sha512 = sha512, Signature = Jws(header, claims, signer.Str("seed")) };
            };
            var jwks = Json.Stringify(((IDictionary<string, object>)vectors["jwks"])["rotated"]);
            // The file host: what it serves is up to each test; it records each request's Authorization header.
            Func<HttpListenerContext, int, Task> serveFile = null;
            var fileRequests = new List<string>();
            Func<string, string, KeyforgeClient> releaseClient = (url, product) => new KeyforgeClient(new KeyforgeClientOptions
            {
                BaseUrl = url, Products = new[] { product }, Issuer = (string)vectors["issuer"],
                Retry = new RetryOptions { Attempts = 3, BaseDelay = TimeSpan.FromMilliseconds(5), MaxDelay = TimeSpan.FromMilliseconds(20) },
            });
            Action<Action<TestServer, TestServer, List<HttpListenerRequest>>> withStubs = body =>
            {
                var apiRequests = new List<HttpListenerRequest>();
                using (var files = new TestServer((context, n) => { lock (fileRequests) fileRequests.Add(context.Request.Url.PathAndQuery + " " + (context.Request.Headers["Authorization"] ?? "-")); return serveFile(context, n); }))
                using (var api = new TestServer((context, n) =>
                {
                    lock (apiRequests) apiRequests.Add(context.Request);
                    var path = context.Request.Url.AbsolutePath;
                    if (path == "/.well-known/jwks.json") return TestServer.Send(context, 200, jwks);
                    if (context.Request.Headers["Authorization"] != "License " + key) return TestServer.Send(context, 200, "{\"isValid\":false,\"errorCode\":\"LicenseNotFound\",\"message\":\"no\"}");
                    if (context.Request.QueryString["product"] != "Acme Studio") return TestServer.Send(context, 200, "{\"isValid\":false,\"errorCode\":\"ProductMismatch\",\"message\":\"no\"}");
                    if (path == "/api/v1/releases") return TestServer.Send(context, 200, "{\"releases\":[{\"id\":\"rel-1\",\"version\":\"2.0.0\",\"channel\":\"stable\",\"artifacts\":[{\"id\":\"art-1\",\"size\":5}]}]}");
                    if (path == "/api/v1/releases/upgrade") return TestServer.Send(context, 200, "{\"available\":false,\"reason\":\"FeatureMissing\",\"release\":{\"id\":\"rel-1\",\"version\":\"2.0.0\",\"artifacts\":[]}}");
                    if (path == "/api/v1/artifacts/art-1/download") return TestServer.Send(context, 200, "{\"url\":\"" + filesUrl + "/blob/art-1?token=short\",\"expiresAt\":\"2030-01-01T00:00:00Z\"}");
                    return TestServer.Send(context, 404, "{\"error\":{\"code\":\"NotFound\",\"message\":\"no route\"}}");
                }))
                {
                    filesUrl = files.Url;
                    lock (fileRequests) fileRequests.Clear();
                    body(api, files, apiRequests);
                }
            };

            Test("releases: the key in Authorization: License, never in the URL; the filters and the product in the query; reasons", () => withStubs((api, files, seen) =>
            {
                using (var client = releaseClient(api.Url, "Acme Studio"))
                {
                    var releases = Run(client.ListReleasesAsync(key, channel: "beta", platform: "darwin", arch: "arm64", deviceId: "dev-1"));
                    Check(releases.Count == 1 && releases[0].Version == "2.0.0" && releases[0].Artifacts[0].Size == 5, "the releases are read");
                    var request = seen.Last();
                    Check(request.Headers["Authorization"] == "License " + key && !request.Url.ToString().Contains(key), "the key travels in the header only");
                    Check(request.Url.Query == "?product=Acme%20Studio&channel=beta&platform=darwin&arch=arm64&deviceId=dev-1", "query " + request.Url.Query);
                    Run(client.ListReleasesAsync(key));
                    Check(seen.Last().QueryString["platform"] == CurrentPlatform.Platform && seen.Last().QueryString["arch"] == CurrentPlatform.Arch && seen.Last().QueryString["channel"] == null, "defaults: this process's platform");
                    Check(CurrentPlatform.Platform == "linux" || Environment.OSVersion.Platform != PlatformID.Unix || Directory.Exists("/System/Library/CoreServices"), "linux is linux");
                    var check = Run(client.CheckForUpdateAsync(key, "1.0.0"));
                    Check(!check.Available && check.Reason == "FeatureMissing" && check.Release.Version == "2.0.0" && seen.Last().QueryString["version"] == "1.0.0", "the update check's reason");
                    Check(Code(() => Run(client.ListReleasesAsync("ACME-OTHER"))) == "LicenseNotFound", "a refusal is its code");
                }
                using (var other = releaseClient(api.Url, "Other App")) Check(Code(() => Run(other.CheckForUpdateAsync(key, "1.0.0"))) == "ProductMismatch", "another product");
            }));

            Test("releases: a download returns the verified bytes, fetched from the link without the key; to a file too", () => withStubs((api, files, seen) =>
            {
                serveFile = (context, n) => SendBytes(context, 200, file);
                using (var client = releaseClient(api.Url, "Acme Studio"))
                {
                    Check(Run(client.DownloadArtifactAsync(key, artifactWith(null))).SequenceEqual(file), "the bytes");
                    Check(fileRequests.SequenceEqual(new[] { "/blob/art-1?token=short -" }), "the link alone, no key: " + string.Join(",", fileRequests));
                    var dir = Path.Combine(Path.GetTempPath(), "kf-dotnet-dl-" + Guid.NewGuid().ToString("N"));
                    Directory.CreateDirectory(dir);
                    try
                    {
                        Run(client.DownloadArtifactToFileAsync(key, artifactWith(null), Path.Combine(dir, "acme.tar.gz")));
                        Check(File.ReadAllBytes(Path.Combine(dir, "acme.tar.gz")).SequenceEqual(file) && Directory.GetFiles(dir).Length == 1, "the file");
                        var altered = (byte[])file.Clone();
                        altered[100] ^= 1;
                        serveFile = (context, n) => SendBytes(context, 200, altered);
                        Check(Code(() => Run(client.DownloadArtifactToFileAsync(key, artifactWith(null), Path.Combine(dir, "other.tar.gz")))) == "ArtifactIntegrity", "altered bytes to a file");
                        Check(Directory.GetFiles(dir).Length == 1, "nothing left behind");
                        // Over a file already there: kept as it was when the download fails, replaced once it checks out.
                        Check(Code(() => Run(client.DownloadArtifactToFileAsync(key, artifactWith(null), Path.Combine(dir, "acme.tar.gz")))) == "ArtifactIntegrity", "altered bytes over a file");
                        Check(File.ReadAllBytes(Path.Combine(dir, "acme.tar.gz")).SequenceEqual(file) && Directory.GetFiles(dir).Length == 1, "the file there is untouched");
                        File.WriteAllText(Path.Combine(dir, "acme.tar.gz"), "an older version");
                        serveFile = (context, n) => SendBytes(context, 200, file);
                        Run(client.DownloadArtifactToFileAsync(key, artifactWith(null), Path.Combine(dir, "acme.tar.gz")));
                        Check(File.ReadAllBytes(Path.Combine(dir, "acme.tar.gz")).SequenceEqual(file) && Directory.GetFiles(dir).Length == 1, "the older file replaced, nothing left behind");
                        // A folder that is a file: refused to every user, root included (a read-only folder is not).
                        var notAFolder = Path.Combine(dir, "plain-file");
                        File.WriteAllText(notAFolder, "");
                        lock (fileRequests) fileRequests.Clear();
                        Exception thrown = null;
                        try { Run(client.DownloadArtifactToFileAsync(key, artifactWith(null), Path.Combine(notAFolder, "acme.tar.gz"))); }
                        catch (Exception error) { thrown = error; }
                        Check(thrown != null && thrown.GetType() == typeof(KeyforgeException) && ((KeyforgeException)thrown).Code == "FileWriteFailed", "a file that cannot be written is FileWriteFailed (not a NetworkException): " + thrown);
                        Check(fileRequests.Count == 0 && Directory.GetFiles(dir).Length == 2, "not retried, nothing fetched or left behind");
                    }
                    finally { Directory.Delete(dir, true); }
                }
            }));

            Test("releases: bytes that do not match, a signature that does not, a redirect: refused; a 503 retried", () => withStubs((api, files, seen) =>
            {
                using (var client = releaseClient(api.Url, "Acme Studio"))
                {
                    var altered = (byte[])file.Clone();
                    altered[100] ^= 1;
                    foreach (var body in new[] { altered, file.Concat(new byte[] { 33 }).ToArray(), file.Take(file.Length - 1).ToArray() })
                    {
                        serveFile = (context, n) => SendBytes(context, 200, body);
                        Check(Code(() => Run(client.DownloadArtifactAsync(key, artifactWith(null)))) == "ArtifactIntegrity", "bytes that do not match");
                    }
                    lock (fileRequests) fileRequests.Clear();
                    var good = artifactWith(null);
                    var edited = artifactWith(null);
                    edited.Size++;
                    var forged = artifactWith(null);
                    forged.Signature = (forged.Signature[0] == 'A' ? "B" : "A") + forged.Signature.Substring(1); // the first character is all signature bits
                    foreach (var candidate in new[] { artifactWith(new Dictionary<string, object> { { "product", "Other App" } }), edited, forged })
                        Check(Code(() => Run(client.DownloadArtifactAsync(key, candidate))) == "ArtifactIntegrity", "a signature that does not check out");
                    Check(fileRequests.Count == 0, "nothing fetched before the signature checks out");
                    serveFile = (context, n) => { context.Response.Redirect(filesUrl + "/elsewhere"); return Task.FromResult(0); };
                    Check(Code(() => Run(client.DownloadArtifactAsync(key, good))) == "InvalidResponse", "a redirect is not followed");
                    Check(fileRequests.Count == 1, "only the link was fetched: " + string.Join(",", fileRequests));
                    var failures = 1;
                    lock (fileRequests) fileRequests.Clear();
                    serveFile = (context, n) => Interlocked.Decrement(ref failures) >= 0 ? TestServer.Send(context, 503, "<Error/>", "application/xml") : SendBytes(context, 200, file);
                    Check(Run(client.DownloadArtifactAsync(key, good)).SequenceEqual(file) && fileRequests.Count == 2, "a 503 of the file host is retried");
                }
            }));
        }

        static string filesUrl;

        static async Task SendBytes(HttpListenerContext context, int status, byte[] bytes)
        {
            context.Response.StatusCode = status;
            context.Response.ContentType = "application/octet-stream";
            context.Response.ContentLength64 = bytes.Length;
            await context.Response.OutputStream.WriteAsync(bytes, 0, bytes.Length).ConfigureAwait(false);
        }

        static KeyforgeClient ClientFor(string url, int attempts = 3, double timeoutMs = 2000)
        {
            return new KeyforgeClient(new KeyforgeClientOptions
            {
                BaseUrl = url, Products = new[] { "Acme Studio" },
                Retry = new RetryOptions { Attempts = attempts, BaseDelay = TimeSpan.FromMilliseconds(20), MaxDelay = TimeSpan.FromMilliseconds(100), MaxRetryAfterSeconds = 1 },
                Timeout = TimeSpan.FromMilliseconds(timeoutMs),
            });
        }

        static void HostileServerTests()
        {
            Test("a server answering 429 forever: bounded retries, then RateLimited with Retry-After", () =>
            {
                using (var server = new TestServer((context, n) => { context.Response.Headers["Retry-After"] = "0"; return TestServer.Send(context, 429, "{\"error\":{\"code\":\"RateLimited\",\"message\":\"slow down\"}}"); }))
                using (var client = ClientFor(server.Url, attempts: 4))
                {
                    var code = Code(() => Run(client.ValidateAsync(new ValidateOptions { LicenseKey = "ACME-AAAA-BBBB" })));
                    Check(code == "RateLimited", "got " + code);
                    Check(server.Requests == 4, "attempts: " + server.Requests);
                }
            });

            Test("a Retry-After longer than allowed is not waited for (also one of more digits than a number holds)", () =>
            {
                using (var server = new TestServer((context, n) => { context.Response.Headers["Retry-After"] = "99999999999999999999999"; return TestServer.Send(context, 503, "{}"); }))
                using (var client = ClientFor(server.Url, attempts: 4))
                {
                    Catch(() => Run(client.ValidateAsync(new ValidateOptions { LicenseKey = "ACME-AAAA-BBBB" })));
                    Check(server.Requests == 1, "a huge Retry-After was retried: " + server.Requests);
                }
                using (var server = new TestServer((context, n) => { context.Response.Headers["Retry-After"] = "3600"; return TestServer.Send(context, 503, "{}"); }))
                using (var client = ClientFor(server.Url, attempts: 4))
                {
                    var error = (ApiException)Catch(() => Run(client.ValidateAsync(new ValidateOptions { LicenseKey = "ACME-AAAA-BBBB" })));
                    Check(error.Code == "ServiceUnavailable" && error.RetryAfterSeconds == 3600, "got " + error.Code);
                    Check(server.Requests == 1, "attempts: " + server.Requests);
                }
            });

            Test("a definite answer (400) is not retried", () =>
            {
                using (var server = new TestServer((context, n) => TestServer.Send(context, 400, "{\"error\":{\"code\":\"InvalidRequest\",\"message\":\"bad\",\"fields\":{\"licenseKey\":\"required\"}}}")))
                using (var client = ClientFor(server.Url, attempts: 4))
                {
                    var error = (ApiException)Catch(() => Run(client.ValidateAsync(new ValidateOptions { LicenseKey = "ACME-AAAA-BBBB" })));
                    Check(error.Code == "InvalidRequest" && error.Status == 400 && error.Fields.Str("licenseKey") == "required", "got " + error.Code);
                    Check(server.Requests == 1, "attempts: " + server.Requests);
                }
            });

            Test("a redirect is not followed: the license key is never re-sent to another address", () =>
            {
                using (var elsewhere = new TestServer((context, n) => TestServer.Send(context, 200, "{\"isValid\":true}")))
                using (var server = new TestServer((context, n) => { context.Response.Headers["Location"] = elsewhere.Url + "/api/v1/validate"; return TestServer.Send(context, 307, ""); }))
                using (var client = ClientFor(server.Url))
                {
                    var error = (ApiException)Catch(() => Run(client.ValidateAsync(new ValidateOptions { LicenseKey = "ACME-AAAA-BBBB" })));
                    Check(error.Status == 307 && error.Code == "InvalidRequest", "got " + error.Code + " " + error.Status);
                    Check(elsewhere.Requests == 0, "the request was re-sent to the redirect's address");
                }
            });

            Test("an answer that is not JSON is InvalidResponse", () =>
            {
                using (var server = new TestServer((context, n) => TestServer.Send(context, 200, "<html>proxy login</html>", "text/html")))
                using (var client = ClientFor(server.Url))
                    Check(Code(() => Run(client.ValidateAsync(new ValidateOptions { LicenseKey = "ACME-AAAA-BBBB" }))) == "InvalidResponse", "not InvalidResponse");
            });

            Test("a server that never answers: Timeout after the bounded attempts", () =>
            {
                using (var server = new TestServer(async (context, n) => await Task.Delay(5000)))
                using (var client = ClientFor(server.Url, attempts: 2, timeoutMs: 200))
                {
                    Check(Code(() => Run(client.ValidateAsync(new ValidateOptions { LicenseKey = "ACME-AAAA-BBBB" }))) == "Timeout", "not Timeout");
                    Check(server.Requests <= 2, "attempts: " + server.Requests);
                }
            });

            Test("a huge JWKS is refused without reading it whole; a JWKS of wrong key types trusts nothing", () =>
            {
                var huge = "{\"keys\":[" + string.Join(",", Enumerable.Repeat("{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"" + new string('A', 43) + "\",\"kid\":\"k\"}", 40000)) + "]}";
                using (var server = new TestServer((context, n) => TestServer.Send(context, 200, huge)))
                using (var client = ClientFor(server.Url, attempts: 1))
                    Check(Code(() => Run(client.FetchKeysAsync())) == "InvalidResponse", "huge JWKS accepted");
                var wrong = Jwks.Parse("{\"keys\":[{\"kty\":\"RSA\",\"n\":\"x\",\"e\":\"AQAB\",\"kid\":\"a\"},{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"" + new string('A', 43) + "\",\"kid\":\"b\"},{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"c\"},{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"short\",\"kid\":\"d\"}]}");
                Check(wrong.Keys.Count == 0, "wrong key types kept: " + wrong.Keys.Count);
            });

            Test("a rejection (HTTP 200, isValid false) is thrown with its code and deletes nothing it should keep", () =>
            {
                using (var server = new TestServer((context, n) => TestServer.Send(context, 200, n % 2 == 1 ? "{\"nonce\":\"abc\"}" : "{\"isValid\":false,\"errorCode\":\"SeatsExhausted\",\"message\":\"No seats.\"}")))
                using (var client = ClientFor(server.Url))
                {
                    var error = (LicenseRejectedException)Catch(() => Run(client.ActivateAsync("ACME-AAAA-BBBB", "dev")));
                    Check(error.Code == "SeatsExhausted" && error.Response.Str("message") == "No seats.", "got " + error.Code);
                }
            });
        }

        static string Body(HttpListenerContext context)
        {
            using (var reader = new StreamReader(context.Request.InputStream, Encoding.UTF8)) return reader.ReadToEnd();
        }

        static void SessionAndQueueTests()
        {
            Test("metering offline: queued while the server is away, then sent in order, each with its idempotency key", () =>
            {
                var up = false;
                var received = new List<string>();
                using (var server = new TestServer((context, n) =>
                {
                    var body = Json.TryParseObject(Body(context));
                    if (!up) return TestServer.Send(context, 503, "{\"error\":{\"code\":\"ServiceUnavailable\",\"message\":\"down\"}}");
                    lock (received) received.Add(body.Str("idempotencyKey") + "@" + body.Str("timestamp"));
                    return TestServer.Send(context, 200, "{\"isValid\":true,\"total\":" + received.Count + ",\"limit\":null,\"remaining\":null}");
                }))
                using (var client = ClientFor(server.Url, attempts: 1))
                {
                    var first = Run(client.MeterAsync("ACME-AAAA-BBBB", "exports", 1, "k1", queueOffline: true));
                    var second = Run(client.MeterAsync("ACME-AAAA-BBBB", "exports", 2, "k2", queueOffline: true));
                    Check(first.Queued && second.Queued && first.QueuedBecause.Code == "ServiceUnavailable", "not queued");
                    Check(client.PendingUsage("ACME-AAAA-BBBB").Select(r => r.IdempotencyKey).SequenceEqual(new[] { "k1", "k2" }), "queue order");
                    up = true;
                    var third = Run(client.MeterAsync("ACME-AAAA-BBBB", "exports", 3, "k3", queueOffline: true));
                    Check(!third.Queued && third.IdempotencyKey == "k3", "the third was not sent behind the queue");
                    Check(received.Select(r => r.Split('@')[0]).SequenceEqual(new[] { "k1", "k2", "k3" }), "sent out of order: " + string.Join(",", received));
                    Check(received.All(r => r.Split('@')[1].EndsWith("Z")), "a queued record lost its timestamp");
                    Check(client.PendingUsage("ACME-AAAA-BBBB").Count == 0, "queue not emptied");
                }
            });

            Test("floating: heartbeats in the background at the server's interval, checks in on Dispose, reports a lost seat", () =>
            {
                var beats = 0;
                var checkins = 0;
                var revoke = false;
                using (var server = new TestServer((context, n) =>
                {
                    var path = context.Request.Url.AbsolutePath;
                    if (path.EndsWith("/checkout")) return TestServer.Send(context, 200, "{\"isValid\":true,\"sessionToken\":\"tok\",\"sessionId\":\"s1\",\"leaseSeconds\":300,\"heartbeatIntervalSeconds\":0.2,\"floatingSeats\":2,\"remainingFloatingSeats\":1,\"leaseExpiresAt\":\"2030-01-01T00:00:00Z\"}");
                    Check(context.Request.Headers["Authorization"] == "Bearer tok", "session token not sent");
                    if (path.EndsWith("/heartbeat"))
                    {
                        Interlocked.Increment(ref beats);
                        return TestServer.Send(context, 200, revoke ? "{\"isValid\":false,\"errorCode\":\"SessionExpired\",\"message\":\"gone\"}" : "{\"isValid\":true,\"leaseExpiresAt\":\"2030-01-01T00:05:00Z\",\"heartbeatIntervalSeconds\":0.2}");
                    }
                    Interlocked.Increment(ref checkins);
                    return TestServer.Send(context, 200, "{\"checkedIn\":true,\"sessionId\":\"s1\",\"endReason\":\"checkin\"}");
                }))
                using (var client = ClientFor(server.Url))
                {
                    using (var session = Run(client.CheckoutAsync("ACME-AAAA-BBBB", "dev")))
                    {
                        Check(session.HeartbeatInterval == TimeSpan.FromSeconds(0.2), "interval " + session.HeartbeatInterval);
                        WaitFor(() => beats >= 3, "background heartbeats");
                    }
                    Check(checkins == 1, "checkins: " + checkins);
                    var afterClose = beats;
                    System.Threading.Thread.Sleep(600);
                    Check(beats <= afterClose + 1, "heartbeats after checkin");

                    var session2 = Run(client.CheckoutAsync("ACME-AAAA-BBBB", "dev"));
                    KeyforgeException lost = null;
                    session2.Lost += reason => lost = reason;
                    revoke = true;
                    WaitFor(() => lost != null, "the Lost event");
                    Check(lost.Code == "SessionExpired" && session2.State == "lost", "lost as " + lost.Code);
                }
            });
        }

        const string WatchKey = "ACME-WTCH-TEST-KEY1-0001";

        /// <summary>
        /// A licensing server for the watcher. POST /api/v1/validate answers as <see cref="Mode"/> says — "valid" (a token
        /// signed with the vectors' "new" key, with <see cref="Features"/>), "503", "429" (Retry-After 1), "400", else a
        /// rejection of that code — once <see cref="Gate"/> is open; it keeps each request's body and arrival time.
        /// POST /api/v1/meter records usage while <see cref="MeterUp"/>, else answers 503.
        /// </summary>
        sealed class WatchStub : IDisposable
        {
            public volatile string Mode = "valid";
            public volatile string[] Features = { "export" };
            /// <summary>A feature of its own in each answer, so every check finds a change.</summary>
            public volatile bool FeaturePerRequest;
            public volatile string LicenseExpiresAt = "2030-01-01T00:00:00.000Z";
            public volatile bool MeterUp = true;
            public readonly ManualResetEventSlim Gate = new ManualResetEventSlim(true);
            public readonly List<string> Metered = new List<string>();
            readonly List<KeyValuePair<TimeSpan, IDictionary<string, object>>> validates = new List<KeyValuePair<TimeSpan, IDictionary<string, object>>>();
            readonly Stopwatch clock = Stopwatch.StartNew();
            readonly TestServer server;

            public WatchStub(IDictionary<string, object> signer)
            {
                server = new TestServer((context, n) =>
                {
                    var body = Json.TryParseObject(Body(context));
                    if (context.Request.Url.AbsolutePath == "/api/v1/meter")
                    {
                        if (!MeterUp) return TestServer.Send(context, 503, "{\"error\":{\"code\":\"ServiceUnavailable\",\"message\":\"down\"}}");
                        lock (Metered) Metered.Add(body.Str("idempotencyKey"));
                        return TestServer.Send(context, 200, "{\"isValid\":true,\"total\":1,\"limit\":null,\"remaining\":null}");
                    }
                    int count;
                    lock (validates) { validates.Add(new KeyValuePair<TimeSpan, IDictionary<string, object>>(clock.Elapsed, body)); count = validates.Count; }
                    Gate.Wait(TimeSpan.FromSeconds(30));
                    var mode = Mode;
                    if (mode == "503") return TestServer.Send(context, 503, "{\"error\":{\"code\":\"ServiceUnavailable\",\"message\":\"down\"}}");
                    if (mode == "429") { context.Response.Headers["Retry-After"] = "1"; return TestServer.Send(context, 429, "{\"error\":{\"code\":\"RateLimited\",\"message\":\"slow down\"}}"); }
                    if (mode == "400") return TestServer.Send(context, 400, "{\"error\":{\"code\":\"InvalidRequest\",\"message\":\"bad\"}}");
                    if (mode != "valid") return TestServer.Send(context, 200, "{\"isValid\":false,\"errorCode\":\"" + mode + "\",\"message\":\"no\"}");
                    var now = DateTimeOffset.UtcNow.ToUnixTimeSeconds();
                    var claims = new Dictionary<string, object>
                    {
                        { "iss", Url }, { "sub", "lic-1" }, { "product", "Acme Studio" }, { "iat", (double)now }, { "exp", (double)now + 3600 },
                        { "offlineGraceDays", 7d }, { "nonce", body.Str("challenge") }, { "licenseExpiresAt", LicenseExpiresAt },
                        { "features", (FeaturePerRequest ? new[] { "f" + count } : Features).Cast<object>().ToList() },
                    };
                    if (body.Str("deviceId") != null) claims["device"] = body.Str("deviceId");
                    if (body.IsTrue("requireActivation")) claims["deviceActivated"] = true;
                    var token = Jws(new Dictionary<string, object> { { "alg", "EdDSA" }, { "kid", signer.Str("kid") } }, claims, signer.Str("seed"));
                    return TestServer.Send(context, 200, Json.Stringify(new Dictionary<string, object> { { "isValid", true }, { "offlineCacheToken", token } }));
                });
            }

            public string Url { get { return server.Url; } }
            public int Validates { get { lock (validates) return validates.Count; } }
            public IDictionary<string, object> Request(int i) { lock (validates) return validates[i].Value; }
            /// <summary>The time between the arrival of validate request <paramref name="i"/> and the one before it.</summary>
            public TimeSpan Gap(int i) { lock (validates) return validates[i].Key - validates[i - 1].Key; }

            public KeyforgeClient Client(Jwks jwks, ITokenStore store = null)
            {
                return new KeyforgeClient(new KeyforgeClientOptions
                {
                    BaseUrl = Url, Products = new[] { "Acme Studio" }, PinnedKeys = jwks, Store = store,
                    Retry = new RetryOptions { Attempts = 1 }, Timeout = TimeSpan.FromSeconds(10),
                });
            }

            public void Dispose() { Gate.Set(); server.Dispose(); }
        }

        /// <summary>A store that throws while <see cref="Broken"/>, as a full disk would.</summary>
        sealed class FlakyStore : ITokenStore
        {
            readonly MemoryStore inner = new MemoryStore();
            public volatile bool Broken;
            public string Get(string key) { return inner.Get(key); }
            public void Set(string key, string value) { if (Broken) throw new IOException("disk full"); inner.Set(key, value); }
            public void Delete(string key) { inner.Delete(key); }
        }

        static int Count<T>(List<T> list) { lock (list) return list.Count; }
        static T At<T>(List<T> list, int i) { lock (list) return list[i]; }

        /// <summary>
        /// Starts a watcher of WatchKey (recording changes and errors unless the options have callbacks) and returns once
        /// its first check has ended: that check waits at the stub's gate, so the CheckAsync here surely joins it.
        /// </summary>
        static LicenseWatcher Watching(WatchStub stub, KeyforgeClient client, WatchOptions options, List<KeyValuePair<LicenseState, LicenseState>> changes, List<Exception> errors)
        {
            options.LicenseKey = options.LicenseKey ?? WatchKey;
            options.OnChange = options.OnChange ?? ((state, previous) => { lock (changes) changes.Add(new KeyValuePair<LicenseState, LicenseState>(state, previous)); });
            options.OnError = options.OnError ?? (error => { lock (errors) errors.Add(error); });
            LicenseWatcher watcher;
            Task<LicenseState> first;
            stub.Gate.Reset();
            try
            {
                watcher = client.Watch(options);
                first = watcher.CheckAsync();
            }
            finally { stub.Gate.Set(); }
            Run(first);
            return watcher;
        }

        /// <summary>LicenseWatcher against a local server; each test lowers the interval (or checks by hand) to stay fast.</summary>
        static void WatchTests()
        {
            var signer = (IDictionary<string, object>)((IDictionary<string, object>)vectors["keys"])["new"];
            var jwks = JwksNamed("rotated");
            var hour = TimeSpan.FromHours(1);

            Test("watch: the first finding, then each change reported once (features, renewal, rejections); an unchanged finding is not", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                {
                    var changes = new List<KeyValuePair<LicenseState, LicenseState>>();
                    var errors = new List<Exception>();
                    using (var watcher = Watching(stub, client, new WatchOptions { Interval = hour }, changes, errors))
                    {
                        var first = At(changes, 0);
                        Check(first.Key.Status == WatchStatus.Valid && first.Key.Source == "online" && first.Key.Code == null && first.Value == null, "first finding: " + first.Key.Status);
                        Check(first.Key.Features.SequenceEqual(new[] { "export" }) && first.Key.Entitlement.LicenseId == "lic-1" && watcher.State == first.Key, "first finding's entitlement");
                        var unchanged = Run(watcher.CheckAsync());
                        Check(Count(changes) == 1 && stub.Validates == 2, "an unchanged finding was reported, or a check was not one request");
                        stub.Features = new[] { "render", "export" };
                        var state = Run(watcher.CheckAsync());
                        // previous: the last finding, reported or not.
                        Check(Count(changes) == 2 && At(changes, 1).Key == state && At(changes, 1).Value == unchanged && state.Features.Count == 2, "new features not reported");
                        stub.Features = new[] { "export", "render" };
                        Run(watcher.CheckAsync());
                        Check(Count(changes) == 2, "the same features in another order reported as a change");
                        stub.LicenseExpiresAt = "2031-01-01T00:00:00.000Z";
                        Run(watcher.CheckAsync());
                        Check(Count(changes) == 3, "a renewal not reported");
                        var expect = new[] { new[] { "VersionNotSupported", WatchStatus.Rejected, "VersionNotSupported" }, new[] { "400", WatchStatus.Unverified, "InvalidRequest" }, new[] { "LicenseRevoked", WatchStatus.Revoked, "LicenseRevoked" } };
                        foreach (var row in expect)
                        {
                            stub.Mode = row[0];
                            state = Run(watcher.CheckAsync());
                            Check(state.Status == row[1] && state.Code == row[2] && state.Entitlement == null && state.Features.Count == 0 && state.Source == null, row[0] + " found as " + state.Status + " " + state.Code);
                        }
                        Check(Count(changes) == 6 && At(changes, 5).Value.Status == WatchStatus.Unverified, "each rejection reported once");
                        Run(watcher.CheckAsync());
                        Check(Count(changes) == 6, "the same rejection reported again");
                        stub.Mode = "503";
                        state = Run(watcher.CheckAsync());
                        Check(state.Status == WatchStatus.Unreachable && state.Code == "ServiceUnavailable", "the rejection deleted the stored token, so the server away is unreachable: " + state.Status);
                        Check(Count(changes) == 7 && Count(errors) == 1 && ((KeyforgeException)At(errors, 0)).Code == "ServiceUnavailable", "the failed check reported once");
                    }
                }
            });

            Test("watch: with the server away the stored token answers (offline); the checks back off, never sooner than Retry-After, and stop backing off once online", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                {
                    var changes = new List<KeyValuePair<LicenseState, LicenseState>>();
                    var errors = new List<Exception>();
                    using (var watcher = Watching(stub, client, new WatchOptions { Interval = hour, FirstRetry = TimeSpan.FromMilliseconds(50) }, changes, errors))
                    {
                        var away = stub.Validates;
                        stub.Mode = "429";
                        var state = Run(watcher.CheckAsync());
                        stub.Mode = "503";
                        Check(state.Status == WatchStatus.Valid && state.Source == "offline" && state.Code == "RateLimited" && state.Features.SequenceEqual(new[] { "export" }), "offline: " + state.Status + " " + state.Source);
                        Check(Count(changes) == 2 && At(changes, 1).Value.Source == "online" && Count(errors) == 1 && ((KeyforgeException)At(errors, 0)).Code == "RateLimited", "the change of source and the failure reported");
                        WaitFor(() => stub.Validates >= away + 2, "a retry by itself");
                        Check(stub.Gap(away + 1) >= TimeSpan.FromMilliseconds(950), "Retry-After 1 not waited for: " + stub.Gap(away + 1).TotalMilliseconds + " ms");
                        // From here about 50, 100, 200, 400 ms … (each between half and all): a handful in 700 ms, not dozens.
                        var retrying = stub.Validates;
                        System.Threading.Thread.Sleep(700);
                        Check(stub.Validates - retrying <= 6, "hammering: " + (stub.Validates - retrying) + " checks in 700 ms");
                        WaitFor(() => stub.Validates >= retrying + 2, "the retries keep coming");
                        Check(Count(changes) == 2 && watcher.State.Source == "offline", "unchanged offline findings reported again");
                        stub.Mode = "valid";
                        WaitFor(() => Run(watcher.CheckAsync()).Source == "online", "back online");
                        var online = stub.Validates;
                        System.Threading.Thread.Sleep(300);
                        Check(stub.Validates <= online + 1 && Count(changes) == 3, "still retrying once online: " + (stub.Validates - online));
                    }
                }
            });

            Test("watch: a device-scoped watch sends the device and requireActivation, and reports a freed device", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                {
                    var changes = new List<KeyValuePair<LicenseState, LicenseState>>();
                    var errors = new List<Exception>();
                    using (var watcher = Watching(stub, client, new WatchOptions { DeviceId = "device-1", Interval = hour }, changes, errors))
                    {
                        Check(stub.Request(0).Str("deviceId") == "device-1" && stub.Request(0).IsTrue("requireActivation"), "not device-scoped");
                        Check(At(changes, 0).Key.Entitlement.DeviceActivated && At(changes, 0).Key.Entitlement.Device == "device-1", "the activation not attested");
                        stub.Mode = "DeviceNotActivated";
                        var state = Run(watcher.CheckAsync());
                        Check(state.Status == WatchStatus.DeviceFreed && state.Code == "DeviceNotActivated" && Count(changes) == 2, "found as " + state.Status);
                    }
                    stub.Mode = "valid";
                    changes.Clear();
                    using (Watching(stub, client, new WatchOptions { DeviceId = "device-1", RequireActivation = false, Interval = hour }, changes, errors))
                        Check(stub.Request(2).Str("deviceId") == "device-1" && !stub.Request(2).ContainsKey("requireActivation") && At(changes, 0).Key.Status == WatchStatus.Valid, "RequireActivation false still sent");
                    changes.Clear();
                    using (Watching(stub, client, new WatchOptions { RequireActivation = true, Interval = hour }, changes, errors))
                        Check(stub.Request(3).Str("deviceId") == client.DeviceId() && stub.Request(3).IsTrue("requireActivation"), "RequireActivation without a device does not watch the installation id");
                }
            });

            Test("watch: queued usage is sent once, after the first online check; a flush that fails is reported", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                {
                    stub.MeterUp = false;
                    Check(Run(client.MeterAsync(WatchKey, "exports", 2, "u-1", queueOffline: true)).Queued, "not queued");
                    stub.MeterUp = true;
                    var flushes = new List<UsageFlush>();
                    var changes = new List<KeyValuePair<LicenseState, LicenseState>>();
                    var errors = new List<Exception>();
                    using (var watcher = Watching(stub, client, new WatchOptions { Interval = hour, OnUsageFlushed = report => { lock (flushes) flushes.Add(report); } }, changes, errors))
                    {
                        Check(Count(flushes) == 1 && At(flushes, 0).Sent.Select(r => r.IdempotencyKey).SequenceEqual(new[] { "u-1" }), "the queued usage not sent with the first check");
                        Check(client.PendingUsage(WatchKey).Count == 0 && Count(stub.Metered) == 1, "the queue not emptied");
                        Run(watcher.CheckAsync());
                        Check(Count(flushes) == 1 && Count(stub.Metered) == 1, "sent again, or an empty flush reported");
                        stub.MeterUp = false;
                        Check(Run(client.MeterAsync(WatchKey, "exports", 1, "u-2", queueOffline: true)).Queued, "not queued");
                        Run(watcher.CheckAsync());
                        Check(Count(errors) == 1 && ((KeyforgeException)At(errors, 0)).Code == "ServiceUnavailable" && client.PendingUsage(WatchKey).Count == 1 && Count(flushes) == 1, "a failed flush not reported, or the record lost");
                    }
                }
            });

            Test("watch: Stop ends the checks and the callbacks (idempotent; waits for a callback under way; from a callback, skips the rest)", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                {
                    stub.FeaturePerRequest = true;
                    var calls = 0;
                    var watcher = client.Watch(new WatchOptions
                    {
                        LicenseKey = WatchKey, Interval = TimeSpan.FromMilliseconds(100), MinimumInterval = TimeSpan.FromMilliseconds(50),
                        OnChange = (state, previous) => Interlocked.Increment(ref calls), OnError = error => Interlocked.Increment(ref calls),
                    });
                    Check(watcher.Interval == TimeSpan.FromMilliseconds(100), "interval " + watcher.Interval);
                    WaitFor(() => Volatile.Read(ref calls) >= 3, "checks by themselves, each a change");
                    watcher.Stop();
                    var callsAtStop = Volatile.Read(ref calls);
                    var requests = stub.Validates;
                    System.Threading.Thread.Sleep(600);
                    // One request sent just before Stop may still arrive, however late; a watcher still checking every
                    // 100 ms would have sent several.
                    Check(Volatile.Read(ref calls) == callsAtStop && stub.Validates <= requests + 1 && !watcher.Active, "checks or callbacks after Stop");
                    watcher.Stop();
                    watcher.Dispose();
                    Check(Catch(() => watcher.CheckAsync()) is ObjectDisposedException, "CheckAsync after Stop");

                    var inside = new ManualResetEventSlim();
                    var finished = false;
                    var slow = client.Watch(new WatchOptions { LicenseKey = WatchKey, Interval = hour, OnChange = (state, previous) => { inside.Set(); System.Threading.Thread.Sleep(300); finished = true; } });
                    Check(inside.Wait(TimeSpan.FromSeconds(30)), "no first finding");
                    slow.Stop();
                    Check(finished, "Stop returned while a callback was under way");

                    // The stored token answers the first check, so OnError (the failure) comes before OnChange (the finding).
                    stub.Mode = "503";
                    var holder = new LicenseWatcher[1];
                    var stoppedInside = new ManualResetEventSlim();
                    var changed = false;
                    holder[0] = client.Watch(new WatchOptions
                    {
                        LicenseKey = WatchKey, Interval = hour, OnChange = (state, previous) => changed = true,
                        OnError = error => { SpinWait.SpinUntil(() => Volatile.Read(ref holder[0]) != null, 30000); holder[0].Stop(); stoppedInside.Set(); },
                    });
                    Check(stoppedInside.Wait(TimeSpan.FromSeconds(30)), "Stop from a callback did not return");
                    System.Threading.Thread.Sleep(100);
                    Check(!changed && !holder[0].Active && holder[0].State.Source == "offline", "a callback ran after Stop from a callback");
                }
            });

            Test("watch: its CancellationToken stops it; one cancelled already checks nothing", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                using (var cancel = new CancellationTokenSource())
                {
                    var changes = new List<KeyValuePair<LicenseState, LicenseState>>();
                    var errors = new List<Exception>();
                    var watcher = Watching(stub, client, new WatchOptions { Interval = TimeSpan.FromMilliseconds(100), MinimumInterval = TimeSpan.FromMilliseconds(50), CancellationToken = cancel.Token }, changes, errors);
                    WaitFor(() => stub.Validates >= 2, "checks by themselves");
                    cancel.Cancel();
                    Check(!watcher.Active, "still active");
                    var requests = stub.Validates;
                    System.Threading.Thread.Sleep(500);
                    // At most the one request already sent (it may arrive late); still checking, it would send several.
                    Check(stub.Validates <= requests + 1, "checks after the cancellation");
                    var called = false;
                    var idle = client.Watch(new WatchOptions { LicenseKey = WatchKey, OnChange = (state, previous) => called = true, CancellationToken = new CancellationToken(true) });
                    System.Threading.Thread.Sleep(200);
                    Check(!idle.Active && idle.State == null && !called && stub.Validates <= requests + 1, "a watcher cancelled from the start checked");
                }
            });

            Test("watch: a throwing OnChange (and OnError) is reported and the watcher goes on; a failing store too, with no unobserved task exception", () =>
            {
                var unobserved = new List<Exception>();
                EventHandler<UnobservedTaskExceptionEventArgs> record = (sender, e) => { lock (unobserved) unobserved.Add(e.Exception); };
                TaskScheduler.UnobservedTaskException += record;
                try
                {
                    using (var stub = new WatchStub(signer))
                    {
                        var store = new FlakyStore();
                        using (var client = stub.Client(jwks, store))
                        {
                            var calls = 0;
                            var errors = new List<Exception>();
                            using (var watcher = Watching(stub, client, new WatchOptions
                            {
                                Interval = hour,
                                OnChange = (state, previous) => { throw new InvalidOperationException("onChange " + Interlocked.Increment(ref calls)); },
                                OnError = error => { lock (errors) errors.Add(error); throw new Exception("the error handler throws too"); },
                            }, null, null))
                            {
                                Check(Count(errors) == 1 && At(errors, 0) is InvalidOperationException && watcher.State.Status == WatchStatus.Valid, "not reported: " + At(errors, 0));
                                stub.Features = new[] { "render" };
                                var state = Run(watcher.CheckAsync());
                                Check(calls == 2 && Count(errors) == 2 && watcher.Active && watcher.State == state && state.Features.SequenceEqual(new[] { "render" }), "the watcher did not go on");
                                store.Broken = true;
                                Check(Catch(() => Run(watcher.CheckAsync())) is IOException && Count(errors) == 3 && At(errors, 2) is IOException, "a failing store not reported");
                                store.Broken = false;
                                stub.Features = new[] { "export" };
                                Check(Run(watcher.CheckAsync()).Features.SequenceEqual(new[] { "export" }) && calls == 3, "no check after the store failed");
                            }
                            // A check started by the timer that fails is awaited by nobody.
                            store.Broken = true;
                            var failed = new ManualResetEventSlim();
                            using (client.Watch(new WatchOptions { LicenseKey = WatchKey, OnChange = (state, previous) => { }, OnError = error => failed.Set() }))
                                Check(failed.Wait(TimeSpan.FromSeconds(30)), "the failing check not reported");
                        }
                    }
                    GC.Collect();
                    GC.WaitForPendingFinalizers();
                    GC.Collect();
                    Check(Count(unobserved) == 0, "unobserved task exceptions: " + string.Join("; ", unobserved));
                }
                finally { TaskScheduler.UnobservedTaskException -= record; }
            });

            Test("watch: CheckAsync joins a check under way (one request), its token ends only its wait; Stop cancels a check under way", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                {
                    var changes = new List<KeyValuePair<LicenseState, LicenseState>>();
                    var errors = new List<Exception>();
                    var watcher = Watching(stub, client, new WatchOptions { Interval = hour }, changes, errors);
                    var before = stub.Validates;
                    stub.Gate.Reset();
                    var a = watcher.CheckAsync();
                    var b = watcher.CheckAsync();
                    WaitFor(() => stub.Validates == before + 1, "the check under way");
                    using (var mine = new CancellationTokenSource())
                    {
                        var c = watcher.CheckAsync(mine.Token);
                        mine.Cancel();
                        Check(Catch(() => Run(c)) is OperationCanceledException && !a.IsCompleted, "a cancelled wait did not end, or ended the check");
                    }
                    stub.Features = new[] { "render" };
                    stub.Gate.Set();
                    var state = Run(a);
                    Check(state == Run(b) && stub.Validates == before + 1 && state.Features.SequenceEqual(new[] { "render" }), "two checks at once made " + (stub.Validates - before) + " requests");
                    stub.Gate.Reset();
                    var d = watcher.CheckAsync();
                    WaitFor(() => stub.Validates == before + 2, "another check under way");
                    var callbacks = Count(changes) + Count(errors);
                    watcher.Stop();
                    Check(Catch(() => Run(d)) is OperationCanceledException, "the check under way not cancelled by Stop");
                    stub.Gate.Set();
                    Check(Count(changes) + Count(errors) == callbacks, "a callback for the abandoned check");
                }
            });

            Test("watch: arguments are checked; an interval under 1 s is raised to 1 s", () =>
            {
                using (var stub = new WatchStub(signer))
                using (var client = stub.Client(jwks))
                {
                    Action<LicenseState, LicenseState> none = (state, previous) => { };
                    Check(Catch(() => client.Watch(null)) is ArgumentNullException, "null options");
                    Check(Catch(() => client.Watch(new WatchOptions { LicenseKey = " ", OnChange = none })) is ArgumentException, "an empty key");
                    Check(Catch(() => client.Watch(new WatchOptions { LicenseKey = WatchKey })) is ArgumentException, "no OnChange");
                    foreach (var interval in new[] { TimeSpan.Zero, TimeSpan.FromSeconds(-1) })
                        Check(Catch(() => client.Watch(new WatchOptions { LicenseKey = WatchKey, OnChange = none, Interval = interval })) is ArgumentException, "interval " + interval);
                    using (var watcher = client.Watch(new WatchOptions { LicenseKey = WatchKey, OnChange = none, Interval = TimeSpan.FromMilliseconds(10) }))
                        Check(watcher.Interval == TimeSpan.FromSeconds(1), "interval " + watcher.Interval);
                    using (var watcher = client.Watch(new WatchOptions { LicenseKey = WatchKey, OnChange = none }))
                        Check(watcher.Interval == TimeSpan.FromMinutes(15) && watcher.Interval == LicenseWatcher.DefaultInterval, "default interval " + watcher.Interval);
                }
            });
        }

        static void WaitFor(Func<bool> condition, string what)
        {
            var watch = Stopwatch.StartNew();
            while (!condition())
            {
                if (watch.Elapsed > TimeSpan.FromSeconds(30)) throw new Exception("timed out waiting for " + what);
                System.Threading.Thread.Sleep(20);
            }
        }

        static Exception Catch(Action action)
        {
            try { action(); }
            catch (Exception error) { return error; }
            throw new Exception("expected an exception");
        }

        static void LocalTests()
        {
            Test("FileStore: directory 0700, files 0600 whatever the umask, atomic replace", () =>
            {
                var dir = Path.Combine(Path.GetTempPath(), "kf-dotnet-" + Guid.NewGuid().ToString("N"), "store");
                try
                {
                    var store = new FileStore(dir);
                    store.Set("license:abc", "one");
                    store.Set("license:abc", "two");
                    Check(store.Get("license:abc") == "two", "value not replaced");
                    Check(Mode(dir) == "700", "directory mode " + Mode(dir));
                    var files = Directory.GetFiles(dir);
                    Check(files.Length == 1, "files: " + files.Length);
                    Check(Mode(files[0]) == "600", "file mode " + Mode(files[0]));
                    Check(!File.ReadAllText(files[0]).Contains("abc") && !Path.GetFileName(files[0]).Contains("abc"), "the record name leaks");
                    store.Delete("license:abc");
                    Check(store.Get("license:abc") == null, "not deleted");
                }
                finally { Directory.Delete(Path.GetDirectoryName(dir), true); }
            });

            Test("JSON: written as JavaScript's JSON.stringify writes it", () =>
            {
                var written = Json.Stringify(new List<object> { "a\"b\\c\n\t\u0001\u007f é \ud83d\ude00", "\ud800", 1780315200L, 2.5, null, true, new Dictionary<string, object> { { "k", new List<object>() } } });
                Check(written == "[\"a\\\"b\\\\c\\n\\t\\u0001\u007f é \ud83d\ude00\",\"\\ud800\",1780315200,2.5,null,true,{\"k\":[]}]", "got " + written);
                Check(Catch(() => Json.Parse(new string('[', 100000))) is FormatException, "deep nesting not refused as FormatException");
            });

            Test("a deactivation proof's own format: three parts, EdDSA, the claims signed", () =>
            {
                var key = DeviceKey.Create();
                var proof = LicenseFiles.SignDeactivationProof(key, "act", "lic", "dev", 1780315200);
                var jws = LicenseFiles.Unarmor("DEACTIVATION PROOF", proof);
                Check(jws.Split('.').Length == 3, "not a compact JWS");
            });

            Test("machine fingerprint: SHA-256 of the salt and the machine id (as every SDK computes it), stable, differs per salt", () =>
            {
                var a = MachineFingerprint.Get("Acme Studio");
                Check(a == MachineFingerprint.Get("Acme Studio") && a.Length == 64 && a != MachineFingerprint.Get("Other App"), "unstable or shared");
                Check(a == Codec.Sha256Hex("Acme Studio\n" + File.ReadAllText("/etc/machine-id").Trim()), "not the documented construction");
                Check(MachineFingerprint.Get("") == MachineFingerprint.Get() && MachineFingerprint.Get() == Codec.Sha256Hex("keyforge\n" + MachineFingerprint.MachineId()), "an empty salt is not the default");
            });

            Test("fuzz: random and mutated tokens and license files give KeyforgeException or a verdict, never a crash", () =>
            {
                var random = new Random(20261206);
                var tokens = List("offlineTokens").Select(v => v.Str("token")).Where(t => t != null).ToList();
                var files = List("licenseFiles").Select(v => v.Str("file")).Where(t => t != null).ToList();
                var jwks = JwksNamed("rotated");
                var check = new TokenCheck { Issuer = (string)vectors["issuer"], Products = new[] { (string)vectors["product"] }, Now = DateTimeOffset.FromUnixTimeSeconds(1780315260) };
                for (var i = 0; i < 3000; i++)
                {
                    var token = Mutate(random, tokens[random.Next(tokens.Count)]);
                    try { OfflineTokens.Verify(token, jwks.Find, check); } catch (KeyforgeException) { }
                    var file = Mutate(random, files[random.Next(files.Count)]);
                    try { LicenseFiles.OpenLicenseFile(file, "ACME-7KQ2-M9XH-4TRB-WZ3P", "conformance-device-1"); } catch (KeyforgeException) { }
                    try { LicenseFiles.Unarmor("ACTIVATION REQUEST", Mutate(random, "KFREQ1:" + token)); } catch (KeyforgeException) { }
                }
            });
        }

        static string Mutate(Random random, string text)
        {
            var chars = text.ToCharArray().ToList();
            var edits = 1 + random.Next(4);
            for (var i = 0; i < edits && chars.Count > 0; i++)
            {
                var at = random.Next(chars.Count);
                switch (random.Next(5))
                {
                    case 0: chars[at] = (char)random.Next(32, 127); break;
                    case 1: chars.RemoveAt(at); break;
                    case 2: chars.Insert(at, (char)random.Next(0, 0x3000)); break;
                    case 3: chars = chars.Take(at).ToList(); break;
                    default: chars.InsertRange(at, Enumerable.Repeat('.', random.Next(3))); break;
                }
            }
            return new string(chars.ToArray());
        }

        static string Mode(string path)
        {
            var start = new ProcessStartInfo("stat", "-c %a \"" + path + "\"") { RedirectStandardOutput = true, UseShellExecute = false };
            using (var process = Process.Start(start)) { var output = process.StandardOutput.ReadToEnd().Trim(); process.WaitForExit(); return output; }
        }

        static int Main()
        {
            vectors = (IDictionary<string, object>)Json.Parse(File.ReadAllText(Path.Combine(RepositoryRoot(), "sdks", "conformance", "vectors.json")));
            Check((double)vectors["format"] == 1, "vectors.json is of another format");
            VectorTests();
            ReleaseTests();
            HostileServerTests();
            SessionAndQueueTests();
            WatchTests();
            LocalTests();
            int passed = 0, failed = 0;
            foreach (var test in tests)
            {
                var watch = Stopwatch.StartNew();
                try
                {
                    test.Value();
                    passed++;
                    Console.WriteLine("ok   " + test.Key + " (" + watch.ElapsedMilliseconds + " ms)");
                }
                catch (Exception error)
                {
                    failed++;
                    Console.WriteLine("FAIL " + test.Key + ": " + error);
                }
            }
            Console.WriteLine(passed + " passed, " + failed + " failed");
            return failed == 0 ? 0 : 1;
        }
    }
}
