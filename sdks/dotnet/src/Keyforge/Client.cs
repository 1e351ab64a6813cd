using System;
using System.Collections.Generic;
using System.Linq;
using System.Net.Http;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge
{
    public sealed class KeyforgeClientOptions
    {
        /// <summary>The licensing server's origin, without /api/v1 (e.g. https://licenses.example.com).</summary>
        public string BaseUrl;
        /// <summary>
        /// Your application's product name(s) as the vendor named them in Keyforge. Sent with every activation and
        /// checkout, so the server refuses a key of another product (ProductMismatch) before it takes a seat; a token
        /// of another product is refused (WrongProduct) unless it is a bundle containing one of them.
        /// </summary>
        public IList<string> Products;
        /// <summary>The expected iss of tokens: the server's PUBLIC_URL. Default: BaseUrl.</summary>
        public string Issuer;
        /// <summary>Keys pinned at build time (the server's /.well-known/jwks.json): the only keys trusted, never fetched.</summary>
        public Jwks PinnedKeys;
        /// <summary>Where tokens, fetched keys and device keys are kept. Default: a <see cref="MemoryStore"/>.</summary>
        public ITokenStore Store;
        /// <summary>Per-attempt timeout (default 10 s).</summary>
        public TimeSpan Timeout = TimeSpan.FromSeconds(10);
        public RetryOptions Retry = new RetryOptions();
        /// <summary>Leeway for clock differences when checking token times (default 300 s).</summary>
        public int ClockToleranceSeconds = 300;
        /// <summary>The local wall clock (default: the system clock); for tests.</summary>
        public Func<DateTimeOffset> Clock;
        /// <summary>
        /// An HTTP handler to use (a proxy, a test double); default: HttpClient's, with redirects off. A handler of your
        /// own must not follow redirects either (HttpClientHandler.AllowAutoRedirect = false): the license key is in the body.
        /// </summary>
        public HttpMessageHandler Handler;
    }

    /// <summary>
    /// The Keyforge licensing client. One instance per server and application; thread-safe: share it. Every method
    /// returns only a granted result and throws a <see cref="KeyforgeException"/> (with its <c>Code</c>) otherwise.
    /// </summary>
    public sealed partial class KeyforgeClient : IDisposable
    {
        /// <summary>Below this, a measured clock difference is noise (whole-second iat, network latency).</summary>
        const long SkewNoiseMs = 2000;
        static readonly Regex DeviceIdPattern = new Regex("^[0-9a-f]{64}$", RegexOptions.CultureInvariant);

        public string BaseUrl { get; private set; }
        public string Issuer { get; private set; }
        public IList<string> Products { get; private set; }

        readonly Transport transport;
        readonly KeyRing keys;
        readonly ITokenStore store;
        readonly Func<DateTimeOffset> clock;
        readonly int tolerance;
        readonly object deviceLock = new object();
        readonly SemaphoreSlim usageLock = new SemaphoreSlim(1, 1);
        string deviceId;

        public KeyforgeClient(KeyforgeClientOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            Uri url;
            if (options.BaseUrl == null || !Uri.TryCreate(options.BaseUrl, UriKind.Absolute, out url) || (url.Scheme != "http" && url.Scheme != "https"))
                throw new ArgumentException("BaseUrl must be an absolute http(s) URL, e.g. https://licenses.example.com");
            if (url.Query.Length > 0 || url.Fragment.Length > 0 || url.UserInfo.Length > 0) throw new ArgumentException("BaseUrl must not carry a query, fragment or credentials.");
            var origin = url.GetLeftPart(UriPartial.Path).TrimEnd('/');
            if (origin.EndsWith("/api/v1", StringComparison.Ordinal)) origin = origin.Substring(0, origin.Length - "/api/v1".Length);
            BaseUrl = origin;
            Issuer = options.Issuer ?? BaseUrl;
            if (options.Products == null || options.Products.Count == 0 || options.Products.Any(string.IsNullOrEmpty))
                throw new ArgumentException("Products must name your application's product (or products).");
            Products = options.Products.ToList().AsReadOnly();
            clock = options.Clock ?? (() => DateTimeOffset.UtcNow);
            store = options.Store ?? new MemoryStore();
            tolerance = options.ClockToleranceSeconds;
            transport = new Transport(BaseUrl, options.Handler, options.Timeout, options.Retry ?? new RetryOptions(), clock);
            keys = new KeyRing(options.PinnedKeys, transport, store, "jwks:" + Issuer, clock);
        }

        public void Dispose() { transport.Dispose(); }

        static string RequireKey(string licenseKey)
        {
            if (string.IsNullOrWhiteSpace(licenseKey)) throw new ArgumentException("licenseKey must be a non-empty string.");
            return licenseKey;
        }

        object ProductField() { return Products.Count == 1 ? (object)Products[0] : Products.ToList(); }

        static LicenseRejectedException Rejection(IDictionary<string, object> json)
        {
            return new LicenseRejectedException(json.Str("errorCode") ?? "Rejected", json.Str("message") ?? "The server refused the request.", json);
        }

        long NowMs() { return clock().ToUnixTimeMilliseconds(); }

        /// <summary>
        /// This installation's device id: 64 random hex characters created on first use and kept in the store. For a
        /// machine-bound id, pass <see cref="MachineFingerprint.Get"/> as deviceId instead.
        /// </summary>
        public string DeviceId()
        {
            lock (deviceLock)
            {
                if (deviceId != null) return deviceId;
                var stored = store.Get("device");
                if (stored != null && DeviceIdPattern.IsMatch(stored)) return deviceId = stored;
                var created = string.Concat(Codec.RandomBytes(32).Select(b => b.ToString("x2")));
                store.Set("device", created);
                return deviceId = created;
            }
        }

        /// <summary>
        /// Registers this installation and takes a seat. Each attempt fetches its own fresh nonce; a retry after a lost
        /// answer reuses the same device, which the server answers with the same seat.
        /// </summary>
        /// <exception cref="LicenseRejectedException">SeatsExhausted, ProductMismatch, LicenseExpired …</exception>
        public async Task<Activation> ActivateAsync(string licenseKey, string deviceId = null, string deviceName = null, string version = null, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var device = deviceId ?? DeviceId();
            var answer = await transport.Retrying(async n =>
            {
                var issued = await transport.Once("GET", "/api/v1/nonce", cancel: cancel).ConfigureAwait(false);
                var nonce = issued.Json.Str("nonce");
                if (nonce == null) throw new ApiException(ErrorCodes.InvalidResponse, "GET /api/v1/nonce answered without a nonce.", issued.Status);
                var body = new Dictionary<string, object> { { "licenseKey", licenseKey }, { "deviceId", device }, { "product", ProductField() }, { "nonce", nonce } };
                if (deviceName != null) body["deviceName"] = deviceName;
                if (version != null) body["version"] = version;
                return await transport.Once("POST", "/api/v1/activate", body, cancel: cancel).ConfigureAwait(false);
            }, cancel).ConfigureAwait(false);
            if (!answer.Json.IsTrue("isValid")) throw Rejection(answer.Json);
            var remaining = answer.Json.Num("remainingActivations");
            return new Activation { DeviceId = device, RemainingActivations = remaining == null ? (int?)null : (int)remaining.Value, Response = answer.Json };
        }

        /// <summary>
        /// Checks the license with the server and verifies the signed entitlement (EdDSA, a trusted key, the issuer,
        /// this request's challenge, the product and the device), then stores the token for <see cref="ValidateOfflineAsync"/>.
        /// A rejection deletes the stored token.
        /// </summary>
        public Task<Validation> ValidateAsync(ValidateOptions options, CancellationToken cancel = default(CancellationToken))
        {
            return Validate(options, true, cancel);
        }

        /// <summary>ValidateAsync with the transport's retries, or one attempt (a watcher: its schedule is the retry).</summary>
        async Task<Validation> Validate(ValidateOptions options, bool retry, CancellationToken cancel)
        {
            var licenseKey = RequireKey(options.LicenseKey);
            var challenge = Codec.RandomToken(24);
            var device = options.RequireActivation ? (options.DeviceId ?? DeviceId()) : options.DeviceId;
            var body = new Dictionary<string, object> { { "licenseKey", licenseKey }, { "challenge", challenge } };
            if (options.Version != null) body["version"] = options.Version;
            if (device != null) body["deviceId"] = device;
            if (options.RequireActivation) body["requireActivation"] = true;
            Answer answer;
            try
            {
                Func<int, Task<Answer>> attempt = n => transport.Once("POST", "/api/v1/validate", body, cancel: cancel);
                answer = await (retry ? transport.Retrying(attempt, cancel) : attempt(1)).ConfigureAwait(false);
            }
            catch (KeyforgeException error) when (options.OfflineFallback && ErrorCodes.IsTransient(error) && !cancel.IsCancellationRequested)
            {
                try
                {
                    var offline = await ValidateOfflineAsync(licenseKey, device, options.RequireActivation, cancel).ConfigureAwait(false);
                    offline.OnlineError = error;
                    return offline;
                }
                catch (VerificationException offlineError) when (offlineError.Code == ErrorCodes.TokenMissing)
                {
                    throw error; // nothing stored: the network failure is the news
                }
            }
            var receivedAt = NowMs();
            if (!answer.Json.IsTrue("isValid"))
            {
                try { Forget(licenseKey); } catch (Exception) { /* the rejection is the news */ }
                throw Rejection(answer.Json);
            }
            var token = answer.Json.Str("offlineCacheToken");
            if (token == null) throw new VerificationException(ErrorCodes.TokenMissing, "The server answered without an offline token.");
            var skew = Skew(token, receivedAt);
            var entitlement = await Verify(token, true, receivedAt + skew, device, options.RequireActivation, challenge, cancel).ConfigureAwait(false);
            Save(licenseKey, token, skew, receivedAt + skew);
            return new Validation
            {
                Source = "online", Entitlement = entitlement, License = answer.Json, OfflineToken = token,
                OfflineUntil = entitlement.ExpiresAt, ClockSkewSeconds = (long)Math.Round(skew / 1000d),
            };
        }

        /// <summary>
        /// Answers from the last token stored for the license, without a network: it must verify against the pinned or
        /// stored keys, be within its grace period, be for this product (and device), and the clock must not have been
        /// set back.
        /// </summary>
        /// <exception cref="VerificationException">TokenMissing, TokenInvalid, TokenExpired, WrongProduct, WrongDevice, ClockRollback, OfflineNotAllowed, KeyUnknown.</exception>
        public async Task<Validation> ValidateOfflineAsync(string licenseKey, string deviceId = null, bool requireActivation = false, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var record = Load(licenseKey);
            var now = NowMs() + record.SkewMs;
            if (now < record.LastSeenAt - tolerance * 1000L)
                throw new VerificationException(ErrorCodes.ClockRollback, "The clock is earlier than a time already seen for this license: it has been set back.");
            var entitlement = await Verify(record.Token, false, now, deviceId, requireActivation, null, cancel).ConfigureAwait(false);
            OfflineTokens.CheckOfflineUse(entitlement, DateTimeOffset.FromUnixTimeMilliseconds(now), tolerance);
            if (now > record.LastSeenAt) { try { Save(licenseKey, record.Token, record.SkewMs, now); } catch (Exception) { /* a read-only store still answers */ } }
            return new Validation
            {
                Source = "offline", Entitlement = entitlement, OfflineToken = record.Token, OfflineUntil = entitlement.ExpiresAt,
                ClockSkewSeconds = (long)Math.Round(record.SkewMs / 1000d),
            };
        }

        /// <summary>
        /// Verifies a signed license file offline: opened with the license key (and device) when encrypted, signed by a
        /// trusted key, not expired, for this product and (when given) this device, and the clock not set back.
        /// </summary>
        public Task<Entitlement> VerifyLicenseFileAsync(string text, string licenseKey = null, string deviceId = null, bool requireActivation = false, bool fetchKeys = false, CancellationToken cancel = default(CancellationToken))
        {
            var token = LicenseFiles.OpenLicenseFile(text, licenseKey, deviceId);
            long? highWater = null;
            if (licenseKey != null) { try { highWater = Load(licenseKey).LastSeenAt; } catch (VerificationException) { } }
            return VerifyFileToken(token, deviceId, requireActivation, null, highWater, fetchKeys, cancel);
        }

        /// <summary>Verifies a license file and stores it for the license, so <see cref="ValidateOfflineAsync"/> answers from it until it expires.</summary>
        public Task<Validation> InstallLicenseFileAsync(string text, string licenseKey, string deviceId = null, bool requireActivation = false, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var token = LicenseFiles.OpenLicenseFile(text, licenseKey, deviceId);
            return StoreFile(RecordKey(licenseKey), token, deviceId, requireActivation, null, cancel);
        }

        /// <summary>Fetches a signed license file while online (POST /api/v1/license-file) and installs it.</summary>
        public async Task<KeyValuePair<Validation, string>> FetchLicenseFileAsync(string licenseKey, string deviceId = null, bool encrypt = false, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var body = new Dictionary<string, object> { { "licenseKey", licenseKey } };
            if (deviceId != null) body["deviceId"] = deviceId;
            if (encrypt) body["encrypt"] = true;
            var answer = await transport.Retrying(n => transport.Once("POST", "/api/v1/license-file", body, cancel: cancel), cancel).ConfigureAwait(false);
            if (!answer.Json.IsTrue("isValid")) throw Rejection(answer.Json);
            var file = answer.Json.Str("licenseFile");
            if (file == null) throw new ApiException(ErrorCodes.InvalidResponse, "POST /api/v1/license-file answered without a file.", 200);
            var validation = await InstallLicenseFileAsync(file, licenseKey, deviceId, deviceId != null, cancel).ConfigureAwait(false);
            return new KeyValuePair<Validation, string>(validation, file);
        }

        /// <summary>
        /// Writes an activation request for a machine that cannot reach the server: this device's id and name, a fresh
        /// Ed25519 public key (the private half stays in the store), a random challenge, the key's hint and a MAC under
        /// the license key. A newer request replaces an unanswered one.
        /// </summary>
        public ActivationRequest CreateActivationRequest(string licenseKey, string deviceId = null, string deviceName = null, string version = null)
        {
            RequireKey(licenseKey);
            var device = deviceId ?? DeviceId();
            var key = DeviceKey.Create();
            var fields = new ActivationRequestFields
            {
                Hint = LicenseFiles.KeyHint(licenseKey), Device = device, Name = deviceName, Pub = key.Pub,
                Challenge = Codec.RandomToken(32), Iat = NowMs() / 1000, Product = Products.ToList(), Version = version,
            };
            var mac = LicenseFiles.RequestMac(licenseKey, fields);
            var digest = Digest(licenseKey);
            var record = DeviceKeys(digest);
            record["pending"] = new Dictionary<string, object> { { "seed", key.Seed }, { "pub", key.Pub }, { "deviceId", device }, { "challenge", fields.Challenge } };
            store.Set("device-key:" + digest, Json.Stringify(record));
            store.Set("offline-request:" + fields.Challenge, digest);
            string request, compact;
            LicenseFiles.EncodeRequest(fields, mac, out request, out compact);
            return new ActivationRequest { Request = request, Compact = compact, DeviceId = device, Challenge = fields.Challenge };
        }

        /// <summary>
        /// Installs the answer to this installation's activation request: a device license file that must echo the
        /// request's challenge, be bound to its device and device key and attest the activation.
        /// </summary>
        /// <exception cref="VerificationException">ChallengeMismatch (not the answer to the last request, or applied already), WrongDevice, TokenInvalid …</exception>
        public async Task<Validation> ApplyActivationResponseAsync(string text, string licenseKey = null, CancellationToken cancel = default(CancellationToken))
        {
            string token;
            if (licenseKey != null)
            {
                var pendingOfKey = DeviceKeys(Digest(licenseKey)).Obj("pending");
                token = LicenseFiles.OpenLicenseFile(text, licenseKey, pendingOfKey.Str("deviceId"));
            }
            else token = LicenseFiles.OpenLicenseFile(text);
            IDictionary<string, object> header, payload;
            byte[] signature, signed;
            try { OfflineTokens.Decode(token, out header, out payload, out signature, out signed); }
            catch (VerificationException error) { throw new VerificationException(ErrorCodes.TokenInvalid, "The activation response is damaged: its token is not readable.", error); }
            var challenge = payload.Str("nonce");
            var digest = challenge == null ? null : store.Get("offline-request:" + challenge);
            var pending = digest == null ? null : DeviceKeys(digest).Obj("pending");
            if (pending == null || pending.Str("challenge") != challenge)
                throw new VerificationException(ErrorCodes.ChallengeMismatch, "This is not the answer to the last activation request of this installation (or it was applied already).");
            var validation = await StoreFile("license:" + digest, token, pending.Str("deviceId"), true, challenge, cancel).ConfigureAwait(false);
            var claims = validation.Entitlement.Claims;
            var activation = claims.Str("activation");
            if (claims.Str("deviceKey") != pending.Str("pub") || activation == null)
            {
                store.Delete("license:" + digest);
                throw new VerificationException(ErrorCodes.WrongDevice, "The response is bound to another device key: not the answer to this installation's request.");
            }
            var active = new Dictionary<string, object>
            {
                { "seed", pending.Str("seed") }, { "pub", pending.Str("pub") }, { "deviceId", pending.Str("deviceId") },
                { "activation", activation }, { "license", validation.Entitlement.LicenseId },
            };
            store.Set("device-key:" + digest, Json.Stringify(new Dictionary<string, object> { { "v", 1L }, { "active", active } }));
            store.Delete("offline-request:" + challenge);
            return validation;
        }

        /// <summary>
        /// Offline deactivation: deletes the license file stored for the license and returns a proof, signed with this
        /// device's private key, that frees the seat once uploaded (customer portal or vendor). Keep it until uploaded.
        /// </summary>
        /// <exception cref="VerificationException">TokenMissing when this installation holds no offline activation of the license.</exception>
        public OfflineDeactivation DeactivateOffline(string licenseKey)
        {
            RequireKey(licenseKey);
            var digest = Digest(licenseKey);
            var active = DeviceKeys(digest).Obj("active");
            if (active == null || active.Str("seed") == null)
                throw new VerificationException(ErrorCodes.TokenMissing, "This installation holds no offline activation of this license (apply an activation response first).");
            var proof = LicenseFiles.SignDeactivationProof(new DeviceKey(active.Str("seed")), active.Str("activation"), active.Str("license"), active.Str("deviceId"), NowMs() / 1000);
            Forget(licenseKey);
            store.Delete("device-key:" + digest);
            return new OfflineDeactivation { Proof = proof, ActivationId = active.Str("activation"), DeviceId = active.Str("deviceId") };
        }

        /// <summary>
        /// Frees the seat of a device (default: this installation) and deletes the stored token. Safe to retry: a retry
        /// that finds the seat already free after a lost answer returns RemainingActivations null.
        /// </summary>
        public async Task<Deactivation> DeactivateAsync(string licenseKey, string deviceId = null, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var device = deviceId ?? DeviceId();
            var unanswered = false;
            var body = new Dictionary<string, object> { { "licenseKey", licenseKey }, { "deviceId", device } };
            var answer = await transport.Retrying(n => transport.Once("POST", "/api/v1/deactivate", body, cancel: cancel), cancel, error => unanswered |= error is NetworkException).ConfigureAwait(false);
            if (!answer.Json.IsTrue("deactivated") && !(unanswered && answer.Json.Str("errorCode") == ErrorCodes.ActivationNotFound)) throw Rejection(answer.Json);
            Forget(licenseKey);
            var remaining = answer.Json.Num("remainingActivations");
            return new Deactivation { RemainingActivations = remaining == null ? (int?)null : (int)remaining.Value };
        }

        /// <summary>
        /// Takes a floating seat; the session heartbeats itself in the background at the server's interval until
        /// <see cref="FloatingSession.CheckinAsync"/> or Dispose.
        /// </summary>
        /// <exception cref="LicenseRejectedException">FloatingSeatsExhausted (retry later), FloatingNotEnabled, ProductMismatch …</exception>
        public async Task<FloatingSession> CheckoutAsync(string licenseKey, string deviceId = null, string deviceName = null, string version = null, TimeSpan? heartbeatInterval = null, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var device = deviceId ?? Codec.RandomToken(24);
            var body = new Dictionary<string, object> { { "licenseKey", licenseKey }, { "deviceId", device }, { "product", ProductField() } };
            if (deviceName != null) body["deviceName"] = deviceName;
            if (version != null) body["version"] = version;
            var answer = await transport.Retrying(n => transport.Once("POST", "/api/v1/float/checkout", body, cancel: cancel), cancel).ConfigureAwait(false);
            if (!answer.Json.IsTrue("isValid")) throw Rejection(answer.Json);
            if (answer.Json.Str("sessionToken") == null || answer.Json.Str("sessionId") == null)
                throw new ApiException(ErrorCodes.InvalidResponse, "POST /api/v1/float/checkout answered without a session.", 200);
            return new FloatingSession(answer.Json, device, transport, heartbeatInterval);
        }

        /// <summary>
        /// Records usage. Every attempt carries the same idempotency key, so a retry after a lost answer is counted once
        /// (Replayed true). With <paramref name="queueOffline"/>, usage that cannot reach the server is kept in the store
        /// and sent, in order, by the next call that gets through or by <see cref="FlushUsageAsync"/>.
        /// </summary>
        /// <exception cref="LicenseRejectedException">QuotaExceeded (Response has total, limit, remaining) …</exception>
        public async Task<MeterResult> MeterAsync(string licenseKey, string eventName, long quantity = 1, string idempotencyKey = null, bool queueOffline = false, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var record = new QueuedUsage { Event = eventName, Quantity = quantity, IdempotencyKey = idempotencyKey ?? Codec.RandomToken(16) };
            if (!queueOffline) return await SendUsage(licenseKey, record, cancel).ConfigureAwait(false);
            record.Timestamp = DateTimeOffset.FromUnixTimeMilliseconds(ServerNow(licenseKey)).ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", System.Globalization.CultureInfo.InvariantCulture);
            var name = UsageName(licenseKey);
            if (Usage.List(store, name).Count > 0)
            {
                // Behind what is waiting, so the server gets usage in the order it happened.
                Usage.Append(store, name, record);
                var flushed = await FlushUsageAsync(licenseKey, cancel).ConfigureAwait(false);
                var sent = flushed.Sent.FirstOrDefault(result => result.IdempotencyKey == record.IdempotencyKey);
                if (sent != null) return sent;
                var dropped = flushed.Dropped.FirstOrDefault(entry => entry.Key.IdempotencyKey == record.IdempotencyKey);
                if (dropped.Value != null) throw dropped.Value;
                return new MeterResult { Queued = true, IdempotencyKey = record.IdempotencyKey, QueuedBecause = flushed.StoppedBy };
            }
            try
            {
                return await SendUsage(licenseKey, record, cancel).ConfigureAwait(false);
            }
            catch (KeyforgeException error) when (ErrorCodes.IsTransient(error) && !cancel.IsCancellationRequested)
            {
                Usage.Append(store, name, record);
                return new MeterResult { Queued = true, IdempotencyKey = record.IdempotencyKey, QueuedBecause = error };
            }
        }

        /// <summary>
        /// Sends the queued usage of a license, one record at a time in the order recorded, each with its idempotency
        /// key and original timestamp. A record the server refuses for good is dropped (listed); the first that gets no
        /// answer stops the flush, and it and the rest stay queued. One flush at a time per client.
        /// </summary>
        public async Task<UsageFlush> FlushUsageAsync(string licenseKey, CancellationToken cancel = default(CancellationToken))
        {
            RequireKey(licenseKey);
            var name = UsageName(licenseKey);
            await usageLock.WaitAsync(cancel).ConfigureAwait(false);
            try
            {
                var report = new UsageFlush();
                foreach (var record in Usage.List(store, name))
                {
                    try
                    {
                        report.Sent.Add(await SendUsage(licenseKey, record, cancel).ConfigureAwait(false));
                    }
                    catch (KeyforgeException error)
                    {
                        var definite = error is LicenseRejectedException || (error is ApiException && ((ApiException)error).Status >= 400 && ((ApiException)error).Status < 500 && !ErrorCodes.IsTransient(error));
                        if (!definite) { report.StoppedBy = error; break; }
                        report.Dropped.Add(new KeyValuePair<QueuedUsage, KeyforgeException>(record, error));
                    }
                    Usage.Remove(store, name, record.IdempotencyKey);
                }
                report.Remaining = Usage.List(store, name).Count;
                return report;
            }
            finally
            {
                usageLock.Release();
            }
        }

        /// <summary>The usage records of a license waiting to be sent, oldest first.</summary>
        public IList<QueuedUsage> PendingUsage(string licenseKey)
        {
            return Usage.List(store, UsageName(RequireKey(licenseKey)));
        }

        async Task<MeterResult> SendUsage(string licenseKey, QueuedUsage record, CancellationToken cancel)
        {
            var body = new Dictionary<string, object> { { "licenseKey", licenseKey }, { "event", record.Event }, { "quantity", record.Quantity }, { "idempotencyKey", record.IdempotencyKey } };
            if (record.Timestamp != null) body["timestamp"] = record.Timestamp;
            var answer = await transport.Retrying(n => transport.Once("POST", "/api/v1/meter", body, cancel: cancel), cancel).ConfigureAwait(false);
            if (!answer.Json.IsTrue("isValid")) throw Rejection(answer.Json);
            IEnumerable<string> replayed;
            var isReplay = answer.Headers.TryGetValues("Idempotent-Replayed", out replayed) && replayed.Contains("true");
            return new MeterResult
            {
                IdempotencyKey = record.IdempotencyKey, Replayed = isReplay, Response = answer.Json,
                Total = answer.Json.Num("total"), Limit = answer.Json.Num("limit"), Remaining = answer.Json.Num("remaining"),
            };
        }

        /// <summary>Deletes the stored token of a license (e.g. when the user removes the key).</summary>
        public void Forget(string licenseKey)
        {
            store.Delete(RecordKey(RequireKey(licenseKey)));
        }

        /// <summary>Fetches the server's JWKS now (e.g. at build time, to pin it); with pinned keys, returns them.</summary>
        public Task<Jwks> FetchKeysAsync(CancellationToken cancel = default(CancellationToken))
        {
            return keys.Fetch(cancel);
        }

        async Task<Entitlement> Verify(string token, bool online, long nowMs, string deviceId, bool requireActivation, string challenge, CancellationToken cancel)
        {
            var kid = OfflineTokens.KeyIdOf(token);
            var key = await keys.KeyFor(kid, online, cancel).ConfigureAwait(false);
            return OfflineTokens.Verify(token, k => k == key.Kid ? key : null, new TokenCheck
            {
                Issuer = Issuer, Products = Products, Now = DateTimeOffset.FromUnixTimeMilliseconds(nowMs), ClockToleranceSeconds = tolerance,
                DeviceId = deviceId, RequireActivation = requireActivation, Challenge = challenge,
            });
        }

        async Task<Entitlement> VerifyFileToken(string token, string deviceId, bool requireActivation, string challenge, long? highWater, bool online, CancellationToken cancel)
        {
            var now = NowMs();
            if (highWater != null && now < highWater.Value - tolerance * 1000L)
                throw new VerificationException(ErrorCodes.ClockRollback, "The clock is earlier than a time already seen for this license: it has been set back.");
            var entitlement = await Verify(token, online, now, deviceId, requireActivation, challenge, cancel).ConfigureAwait(false);
            if (entitlement.Claims.Str("kind") != OfflineTokens.LicenseFileKind) throw new VerificationException(ErrorCodes.TokenInvalid, "This is not a license file (an online token, or something else).");
            if (now < entitlement.IssuedAt.ToUnixTimeMilliseconds() - tolerance * 1000L)
                throw new VerificationException(ErrorCodes.ClockRollback, "The clock is earlier than the time the license file was issued: it has been set back.");
            return entitlement;
        }

        async Task<Validation> StoreFile(string recordKey, string token, string deviceId, bool requireActivation, string challenge, CancellationToken cancel)
        {
            var previous = Json.TryParseObject(store.Get(recordKey) ?? "");
            var seen = previous.Num("lastSeenAt");
            long? highWater = seen == null ? (long?)null : (long)seen.Value;
            var entitlement = await VerifyFileToken(token, deviceId, requireActivation, challenge, highWater, false, cancel).ConfigureAwait(false);
            // A file is verified with the local clock (an air-gapped machine has no other): no clock difference is assumed.
            store.Set(recordKey, Json.Stringify(new Dictionary<string, object> { { "v", 1L }, { "token", token }, { "skewMs", 0L }, { "lastSeenAt", Math.Max(NowMs(), highWater ?? 0) } }));
            return new Validation { Source = "offline", Entitlement = entitlement, OfflineToken = token, OfflineUntil = entitlement.ExpiresAt };
        }

        long Skew(string token, long receivedAt)
        {
            IDictionary<string, object> header, payload;
            byte[] signature, signed;
            OfflineTokens.Decode(token, out header, out payload, out signature, out signed);
            var iat = payload.Num("iat");
            if (iat == null) return 0;
            var skew = (long)(iat.Value * 1000) - receivedAt;
            return Math.Abs(skew) <= SkewNoiseMs ? 0 : skew;
        }

        long ServerNow(string licenseKey)
        {
            try { return NowMs() + Load(licenseKey).SkewMs; }
            catch (VerificationException) { return NowMs(); }
        }

        /// <summary>A digest naming a license in the store, so the store never holds the key itself.</summary>
        internal string Digest(string licenseKey) { return Codec.Sha256Hex(Issuer + "\n" + Codec.NormalizeKey(licenseKey)).Substring(0, 32); }
        string RecordKey(string licenseKey) { return "license:" + Digest(licenseKey); }
        string UsageName(string licenseKey) { return "usage:" + Digest(licenseKey); }

        sealed class TokenRecord
        {
            public string Token;
            public long SkewMs;
            public long LastSeenAt;
        }

        void Save(string licenseKey, string token, long skewMs, long lastSeenAt)
        {
            store.Set(RecordKey(licenseKey), Json.Stringify(new Dictionary<string, object> { { "v", 1L }, { "token", token }, { "skewMs", skewMs }, { "lastSeenAt", lastSeenAt } }));
        }

        TokenRecord Load(string licenseKey)
        {
            var raw = store.Get(RecordKey(licenseKey));
            if (raw == null) throw new VerificationException(ErrorCodes.TokenMissing, "No verified token is stored for this license: validate online first.");
            var record = Json.TryParseObject(raw);
            if (record == null) throw new VerificationException(ErrorCodes.TokenInvalid, "The stored token record is not valid JSON: tampered or corrupted.");
            var v = record.Num("v");
            var skew = record.Num("skewMs");
            var seen = record.Num("lastSeenAt");
            if (v != 1 || record.Str("token") == null || skew == null || seen == null)
                throw new VerificationException(ErrorCodes.TokenInvalid, "The stored token record is malformed: tampered or corrupted.");
            return new TokenRecord { Token = record.Str("token"), SkewMs = (long)skew.Value, LastSeenAt = (long)seen.Value };
        }

        Dictionary<string, object> DeviceKeys(string digest)
        {
            var parsed = Json.TryParseObject(store.Get("device-key:" + digest) ?? "");
            var v = parsed.Num("v");
            return parsed != null && v == 1 ? parsed : new Dictionary<string, object> { { "v", 1L } };
        }
    }
}
