using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge
{
    /// <summary>
    /// A floating seat. It heartbeats itself on a background timer at the server's interval (or a shorter one asked
    /// for); a heartbeat that fails is retried with backoff until the lease would lapse, then the session is lost
    /// (<see cref="Lost"/> fires with LeaseLapsed or the server's rejection). Check it in when the application closes:
    /// <see cref="CheckinAsync"/>, or Dispose (<c>using</c>). Thread-safe.
    /// </summary>
    public sealed class FloatingSession : IDisposable
    {
        public string SessionId { get; private set; }
        public string DeviceId { get; private set; }
        public int FloatingSeats { get; private set; }
        public int RemainingFloatingSeats { get; private set; }
        public int LeaseSeconds { get; private set; }
        public TimeSpan HeartbeatInterval { get; private set; }
        public DateTimeOffset LeaseExpiresAt { get; private set; }
        /// <summary>The server's checkout answer (features, expiresAt, vendorWarning …).</summary>
        public IDictionary<string, object> Response { get; private set; }
        /// <summary>"active", "lost" or "closed".</summary>
        public string State { get { return state; } }
        public KeyforgeException LostReason { get; private set; }

        /// <summary>Raised once, on a background thread, when the seat is lost.</summary>
        public event Action<KeyforgeException> Lost;
        /// <summary>Raised on a background thread for each heartbeat that failed but will be retried.</summary>
        public event Action<KeyforgeException> HeartbeatFailed;

        readonly string token;
        readonly Transport transport;
        readonly TimeSpan? wanted;
        readonly Timer timer;
        readonly SemaphoreSlim beating = new SemaphoreSlim(1, 1);
        readonly CancellationTokenSource closing = new CancellationTokenSource();
        readonly Stopwatch sinceRenewal = Stopwatch.StartNew();
        readonly object stateLock = new object();
        volatile string state = "active";
        int failures;

        internal FloatingSession(IDictionary<string, object> answer, string deviceId, Transport transport, TimeSpan? heartbeatInterval)
        {
            token = answer.Str("sessionToken");
            this.transport = transport;
            wanted = heartbeatInterval;
            Response = answer;
            SessionId = answer.Str("sessionId");
            DeviceId = deviceId;
            FloatingSeats = (int)(answer.Num("floatingSeats") ?? 0);
            RemainingFloatingSeats = (int)(answer.Num("remainingFloatingSeats") ?? 0);
            LeaseSeconds = (int)Positive(answer.Num("leaseSeconds"), 300);
            LeaseExpiresAt = ParseTime(answer.Str("leaseExpiresAt")) ?? DateTimeOffset.UtcNow.AddSeconds(LeaseSeconds);
            HeartbeatInterval = Interval(answer.Num("heartbeatIntervalSeconds"));
            timer = new Timer(_ => Beat(), null, HeartbeatInterval, System.Threading.Timeout.InfiniteTimeSpan);
        }

        static double Positive(double? value, double fallback) { return value != null && value.Value > 0 && !double.IsInfinity(value.Value) ? value.Value : fallback; }

        static DateTimeOffset? ParseTime(string text)
        {
            DateTimeOffset parsed;
            return text != null && DateTimeOffset.TryParse(text, System.Globalization.CultureInfo.InvariantCulture, System.Globalization.DateTimeStyles.AssumeUniversal, out parsed) ? parsed : (DateTimeOffset?)null;
        }

        TimeSpan Interval(double? serverSeconds)
        {
            var server = TimeSpan.FromSeconds(Math.Min(Positive(serverSeconds, 60), LeaseSeconds));
            return wanted != null && wanted.Value > TimeSpan.Zero && wanted.Value < server ? wanted.Value : server;
        }

        /// <summary>Renews the lease now (the background timer does this by itself).</summary>
        /// <exception cref="KeyforgeException">The session is lost or checked in (its reason), or the heartbeat failed.</exception>
        public async Task HeartbeatAsync()
        {
            if (state != "active") throw LostReason ?? new KeyforgeException(ErrorCodes.SessionExpired, "The session is checked in.");
            var error = await Beat().ConfigureAwait(false);
            if (state == "lost") throw LostReason;
            if (error != null) throw error;
        }

        /// <summary>One heartbeat; returns the failure (after scheduling the retry) instead of throwing, for the timer.</summary>
        async Task<KeyforgeException> Beat()
        {
            await beating.WaitAsync().ConfigureAwait(false);
            try
            {
                if (state != "active") return null;
                Answer answer;
                try
                {
                    // One attempt: this loop is the retry (it knows the lease).
                    answer = await transport.Once("POST", "/api/v1/float/heartbeat", new Dictionary<string, object>(), token, closing.Token).ConfigureAwait(false);
                }
                catch (Exception raw) when (raw is KeyforgeException || raw is OperationCanceledException)
                {
                    if (state != "active") return null;
                    var error = raw as KeyforgeException ?? new NetworkException(ErrorCodes.NetworkError, raw.Message, raw);
                    failures++;
                    if (sinceRenewal.Elapsed >= TimeSpan.FromSeconds(LeaseSeconds))
                    {
                        End("lost", new KeyforgeException(ErrorCodes.LeaseLapsed, "No heartbeat got through for a whole lease: the server has freed the seat.", error));
                        return error;
                    }
                    var handler = HeartbeatFailed;
                    if (handler != null) try { handler(error); } catch (Exception) { }
                    // Transient: retry sooner than the interval, with backoff; a definite error still retries until the lease ends.
                    var delay = Transport.Backoff(failures, TimeSpan.FromSeconds(1), HeartbeatInterval, Transport.Jitter());
                    Schedule(delay);
                    return error;
                }
                if (state != "active") return null;
                if (!answer.Json.IsTrue("isValid"))
                {
                    var rejection = new LicenseRejectedException(answer.Json.Str("errorCode") ?? "Rejected", answer.Json.Str("message") ?? "The server ended the session.", answer.Json);
                    End("lost", rejection);
                    return rejection;
                }
                failures = 0;
                sinceRenewal.Restart();
                LeaseExpiresAt = ParseTime(answer.Json.Str("leaseExpiresAt")) ?? LeaseExpiresAt;
                if (answer.Json.Num("heartbeatIntervalSeconds") != null) HeartbeatInterval = Interval(answer.Json.Num("heartbeatIntervalSeconds"));
                Schedule(HeartbeatInterval);
                return null;
            }
            finally
            {
                beating.Release();
            }
        }

        void Schedule(TimeSpan delay)
        {
            lock (stateLock) if (state == "active") timer.Change(delay, System.Threading.Timeout.InfiniteTimeSpan);
        }

        void End(string how, KeyforgeException reason)
        {
            lock (stateLock)
            {
                if (state != "active") return;
                state = how;
                LostReason = reason;
                timer.Change(System.Threading.Timeout.Infinite, System.Threading.Timeout.Infinite);
            }
            if (how == "lost")
            {
                var handler = Lost;
                if (handler != null) try { handler(reason); } catch (Exception) { }
            }
        }

        /// <summary>Frees the seat at once (retried on transient failures). Idempotent. Returns the server's answer (checkedIn, endedAt, endReason).</summary>
        public async Task<IDictionary<string, object>> CheckinAsync(CancellationToken cancel = default(CancellationToken))
        {
            End("closed", null);
            closing.Cancel();
            var answer = await transport.Retrying(n => transport.Once("POST", "/api/v1/float/checkin", new Dictionary<string, object>(), token, cancel), cancel).ConfigureAwait(false);
            if (!answer.Json.IsTrue("checkedIn"))
                throw new LicenseRejectedException(answer.Json.Str("errorCode") ?? "Rejected", answer.Json.Str("message") ?? "The server refused the checkin.", answer.Json);
            return answer.Json;
        }

        /// <summary>Checks the seat in (best effort) and stops the heartbeat.</summary>
        public void Dispose()
        {
            try { CheckinAsync().GetAwaiter().GetResult(); }
            catch (KeyforgeException) { /* the lease frees the seat by itself */ }
            finally { timer.Dispose(); }
        }
    }
}
