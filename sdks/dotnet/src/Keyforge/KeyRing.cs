using System;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge
{
    /// <summary>
    /// The public keys that verify tokens. Pinned keys (shipped with the application) are the only ones trusted when
    /// given; otherwise the server's JWKS is fetched once, cached in memory (5 minutes, as the server's Cache-Control
    /// says) and in the store (for verification after an offline restart), and fetched again when a token names an
    /// unknown <c>kid</c> (a key rotation), at most every 10 seconds per kid.
    /// </summary>
    internal sealed class KeyRing
    {
        static readonly TimeSpan MaxAge = TimeSpan.FromMinutes(5);
        static readonly TimeSpan RefetchCooldown = TimeSpan.FromSeconds(10);

        readonly Jwks pinned;
        readonly Transport transport;
        readonly ITokenStore store;
        readonly string storeKey;
        readonly Func<DateTimeOffset> clock;
        readonly SemaphoreSlim fetchLock = new SemaphoreSlim(1, 1);
        readonly System.Collections.Concurrent.ConcurrentDictionary<string, DateTimeOffset> misses = new System.Collections.Concurrent.ConcurrentDictionary<string, DateTimeOffset>();
        volatile Jwks keys;
        DateTimeOffset fetchedAt = DateTimeOffset.MinValue;

        public KeyRing(Jwks pinned, Transport transport, ITokenStore store, string storeKey, Func<DateTimeOffset> clock)
        {
            if (pinned != null && pinned.Keys.Count == 0) throw new ArgumentException("Pinned keys must be a JWKS with at least one Ed25519 key.");
            this.pinned = pinned;
            this.transport = transport;
            this.store = store;
            this.storeKey = storeKey;
            this.clock = clock;
            keys = pinned;
        }

        public async Task<SigningKey> KeyFor(string kid, bool online, CancellationToken cancel)
        {
            var key = (await Current(online, cancel).ConfigureAwait(false)).Find(kid);
            if (key == null && pinned == null && online)
            {
                DateTimeOffset last;
                var now = clock();
                if (!misses.TryGetValue(kid, out last) || now - last >= RefetchCooldown)
                {
                    if (misses.Count > 100) misses.Clear();
                    misses[kid] = now;
                    key = (await Fetch(cancel).ConfigureAwait(false)).Find(kid);
                }
            }
            if (key == null)
            {
                throw new VerificationException(ErrorCodes.KeyUnknown, pinned != null
                    ? "The token is signed by key " + kid + ", which is not among the pinned keys (after a key rotation, ship the new JWKS)."
                    : "The token is signed by key " + kid + ", which the server's JWKS does not list.");
            }
            return key;
        }

        async Task<Jwks> Current(bool online, CancellationToken cancel)
        {
            if (pinned != null) return pinned;
            var cached = keys;
            if (cached != null && (!online || clock() - fetchedAt < MaxAge)) return cached;
            if (online)
            {
                try
                {
                    return await Fetch(cancel).ConfigureAwait(false);
                }
                catch (KeyforgeException error)
                {
                    // The JWKS endpoint is away: a copy we have still verifies tokens of the keys it lists.
                    if (cached != null) return cached;
                    var stored = Stored();
                    if (stored.Keys.Count > 0) return stored;
                    throw new VerificationException(ErrorCodes.KeyUnknown, "The server's keys (JWKS) could not be fetched: " + error.Message, error);
                }
            }
            return cached ?? Stored();
        }

        /// <summary>Fetches the JWKS (one request at a time), keeps it in memory and in the store.</summary>
        public async Task<Jwks> Fetch(CancellationToken cancel)
        {
            if (pinned != null) return pinned;
            var before = fetchedAt;
            await fetchLock.WaitAsync(cancel).ConfigureAwait(false);
            try
            {
                // Another caller fetched while this one waited: use that.
                if (fetchedAt != before && keys != null) return keys;
                var answer = await transport.Retrying(n => transport.Once("GET", "/.well-known/jwks.json", cancel: cancel), cancel).ConfigureAwait(false);
                var fetched = Jwks.Parse(Json.Stringify(answer.Json));
                keys = fetched;
                fetchedAt = clock();
                try { store.Set(storeKey, fetched.Text); } catch (Exception) { /* best effort: only the offline copy is lost */ }
                return fetched;
            }
            finally
            {
                fetchLock.Release();
            }
        }

        Jwks Stored()
        {
            try
            {
                var raw = store.Get(storeKey);
                var stored = Jwks.Parse(raw ?? "{}");
                if (stored.Keys.Count > 0) keys = stored;
                return stored;
            }
            catch (Exception)
            {
                return Jwks.Parse("{}");
            }
        }
    }
}
