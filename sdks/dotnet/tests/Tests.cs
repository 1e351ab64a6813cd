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
                Func<Dictionary<string, object>, Dictionary<string, object>, string> sign = (header, payload) =>
                {
                    var input = Codec.Base64Url(Codec.Utf8.GetBytes(Json.Stringify(header))) + "." + Codec.Base64Url(Codec.Utf8.GetBytes(Json.Stringify(payload)));
                    return input + "." + Codec.Base64Url(Sodium.Sign(Codec.Utf8.GetBytes(input), Codec.FromBase64UrlStrict(signer.Str("seed"))));
                };
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
                var input = Codec.Base64Url(Codec.Utf8.GetBytes(Json.Stringify(header))) + "." + Codec.Base64Url(Codec.Utf8.GetBytes(Json.Stringify(claims)));
                return new Artifact { Id = "art-1", Filename = "acme.tar.gz", Platform = "linux", Arch = "x64", Filetype = "tar.gz", Size = file.Length, Sha256 = sha256, Sha512 = sha512, Signature = input + "." + Codec.Base64Url(Sodium.Sign(Codec.Utf8.GetBytes(input), Codec.FromBase64UrlStrict(signer.Str("seed")))) };
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
