using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge
{
    /// <summary>The statuses of a <see cref="LicenseState"/>, spelled as every Keyforge SDK spells them.</summary>
    public static class WatchStatus
    {
        /// <summary>The license may be used: checked online now, or vouched for by the stored token within its grace period (<see cref="LicenseState.Source"/> says which).</summary>
        public const string Valid = "valid";
        /// <summary>The server's rejection Suspended.</summary>
        public const string Suspended = "suspended";
        /// <summary>The server's rejection LicenseRevoked.</summary>
        public const string Revoked = "revoked";
        /// <summary>The server's rejection LicenseExpired.</summary>
        public const string Expired = "expired";
        /// <summary>This device no longer holds an activation (DeviceNotActivated); only device-scoped watches.</summary>
        public const string DeviceFreed = "device-freed";
        /// <summary>The key is no longer known (deleted, or reissued and past its overlap).</summary>
        public const string NotFound = "not-found";
        /// <summary>Another rejection: <see cref="LicenseState.Code"/> says which (e.g. VersionNotSupported).</summary>
        public const string Rejected = "rejected";
        /// <summary>The server answered, but the answer did not check out (a token that does not verify, an HTTP error that is not transient).</summary>
        public const string Unverified = "unverified";
        /// <summary>No answer, and no stored token vouches for the license (none stored, past its grace period, a clock set back, no offline grace).</summary>
        public const string Unreachable = "unreachable";

        internal static string OfRejection(string code)
        {
            switch (code)
            {
                case ErrorCodes.LicenseRevoked: return Revoked;
                case ErrorCodes.Suspended: return Suspended;
                case ErrorCodes.LicenseExpired: return Expired;
                case ErrorCodes.DeviceNotActivated: return DeviceFreed;
                case ErrorCodes.LicenseNotFound: return NotFound;
                default: return Rejected;
            }
        }
    }

    /// <summary>One finding of a <see cref="LicenseWatcher"/>.</summary>
    public sealed class LicenseState
    {
        /// <summary>One of <see cref="WatchStatus"/>.</summary>
        public string Status { get; internal set; }
        /// <summary>Where a valid status came from: "online" (the server now) or "offline" (the stored token); null otherwise.</summary>
        public string Source { get; internal set; }
        /// <summary>The signed entitlement when valid; null otherwise.</summary>
        public Entitlement Entitlement { get; internal set; }
        /// <summary>The entitlement's features (empty unless valid).</summary>
        public IList<string> Features { get; internal set; }
        /// <summary>The rejection, verification, HTTP or network code behind a status other than an online valid; else null.</summary>
        public string Code { get; internal set; }
        /// <summary>The error behind <see cref="Code"/> (for valid from the stored token: why the server could not be reached).</summary>
        public KeyforgeException Error { get; internal set; }
        /// <summary>When this check ended (the client's clock).</summary>
        public DateTimeOffset CheckedAt { get; internal set; }
    }

    /// <summary>What <see cref="KeyforgeClient.Watch"/> watches, how often, and whom it tells.</summary>
    public sealed class WatchOptions
    {
        public string LicenseKey;
        /// <summary>With a device id the watch is device-scoped (RequireActivation defaults to true): a freed device shows as device-freed.</summary>
        public string DeviceId;
        /// <summary>Default: true with a DeviceId, else false. True without a DeviceId watches this installation's <see cref="KeyforgeClient.DeviceId"/>.</summary>
        public bool? RequireActivation;
        /// <summary>Checked as ValidateOptions.Version is.</summary>
        public string Version;
        /// <summary>Time between checks (default 15 minutes, at least 1 s, at most 24 days); each wait is spread by ±10 %.</summary>
        public TimeSpan Interval = LicenseWatcher.DefaultInterval;
        /// <summary>Called with the first finding (previous null) and whenever the status, its source, the features or the license's expiry change.</summary>
        public Action<LicenseState, LicenseState> OnChange;
        /// <summary>A check that got no answer (the stored token answers meanwhile), queued usage that could not be sent, a throwing callback, a failing store.</summary>
        public Action<Exception> OnError;
        /// <summary>Queued usage sent (or dropped as refused) after an online check.</summary>
        public Action<UsageFlush> OnUsageFlushed;
        /// <summary>Stops the watcher when cancelled, as <see cref="LicenseWatcher.Stop"/>.</summary>
        public CancellationToken CancellationToken;
        // Floors a test may lower, so the schedule can be watched in milliseconds.
        internal TimeSpan MinimumInterval = LicenseWatcher.MinimumInterval;
        internal TimeSpan FirstRetry = TimeSpan.FromSeconds(2);
    }

    /// <summary>What one check found, and the transient failure (no answer, 429, 502–504) it met, after which the next check backs off.</summary>
    internal sealed class WatchProbe
    {
        public LicenseState State;
        public KeyforgeException Transient;
        /// <summary>Queued usage sent after an online check.</summary>
        public UsageFlush Usage;
        /// <summary>Other failures to report (queued usage that could not be sent).</summary>
        public List<Exception> Errors = new List<Exception>();
    }

    /// <summary>
    /// Revalidates a license in the background (from <see cref="KeyforgeClient.Watch"/>). It checks at once, then every
    /// <see cref="Interval"/> with ±10 % jitter (so a fleet started together spreads out). Each check is one request: a
    /// check that gets no answer answers from the stored token and is retried sooner with exponential backoff (about
    /// 2 s, 4 s, 8 s … never longer than the interval, never sooner than the server's Retry-After). Callbacks run on a
    /// thread-pool thread, one at a time; an exception they throw goes to OnError. Thread-safe.
    /// <see cref="Stop"/> (or Dispose, or the options' CancellationToken) ends it.
    /// </summary>
    public sealed class LicenseWatcher : IDisposable
    {
        public static readonly TimeSpan DefaultInterval = TimeSpan.FromMinutes(15);
        /// <summary>Never checks more often than this, whatever Interval says (a typo must not hammer the server).</summary>
        public static readonly TimeSpan MinimumInterval = TimeSpan.FromSeconds(1);
        /// <summary>The longest wait a Timer takes in one piece (2³¹ − 1 ms, about 24.8 days).</summary>
        const double MaxWaitMs = int.MaxValue;

        /// <summary>The time between checks in use (Interval, raised to the minimum).</summary>
        public TimeSpan Interval { get; private set; }

        readonly Func<CancellationToken, Task<WatchProbe>> probe;
        readonly Action<LicenseState, LicenseState> onChange;
        readonly Action<Exception> onError;
        readonly Action<UsageFlush> onUsageFlushed;
        readonly TimeSpan firstRetry;
        readonly object gate = new object();
        readonly object callbacks = new object();
        // Not disposed: a check under way may still hold its token.
        readonly CancellationTokenSource stopping = new CancellationTokenSource();
        readonly Timer timer;
        readonly CancellationTokenRegistration registration;
        Task<LicenseState> running;
        volatile LicenseState state;
        int failures;
        int stopped;

        internal LicenseWatcher(Func<CancellationToken, Task<WatchProbe>> probe, WatchOptions options)
        {
            this.probe = probe;
            onChange = options.OnChange;
            onError = options.OnError;
            onUsageFlushed = options.OnUsageFlushed;
            firstRetry = options.FirstRetry;
            var wanted = options.Interval < options.MinimumInterval ? options.MinimumInterval : options.Interval;
            Interval = TimeSpan.FromMilliseconds(Math.Min(wanted.TotalMilliseconds, MaxWaitMs));
            timer = new Timer(_ => Tick(), null, System.Threading.Timeout.Infinite, System.Threading.Timeout.Infinite);
            registration = options.CancellationToken.Register(Stop);
            Tick();
        }

        /// <summary>The last finding (null before the first check ends).</summary>
        public LicenseState State { get { return state; } }

        /// <summary>False once stopped.</summary>
        public bool Active { get { return Volatile.Read(ref stopped) == 0; } }

        /// <summary>
        /// Checks now, or joins the check under way, and returns the finding; the schedule restarts from it. The callbacks
        /// run before the task completes (so do not wait for it inside one). <paramref name="cancel"/> ends only this
        /// wait: the check goes on. A check that Stop abandons is cancelled.
        /// </summary>
        /// <exception cref="ObjectDisposedException">The watcher is stopped.</exception>
        public Task<LicenseState> CheckAsync(CancellationToken cancel = default(CancellationToken))
        {
            Task<LicenseState> run;
            lock (gate)
            {
                if (!Active) throw new ObjectDisposedException("LicenseWatcher", "The watcher is stopped.");
                if (running == null)
                {
                    running = Task.Run(() => Run());
                    // Read the failure, so a check nobody awaits never surfaces as an unobserved task exception.
                    running.ContinueWith(t => t.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
                }
                run = running;
            }
            return cancel.CanBeCanceled ? Joined(run, cancel) : run;
        }

        /// <summary>
        /// Stops checking; a check under way is abandoned. Idempotent. When it returns no callback runs any more: it
        /// waits for one under way on another thread (as CancellationTokenRegistration.Dispose does), so do not call it
        /// from a thread such a callback waits for (a UI thread the callback Invokes onto: use BeginInvoke there).
        /// Called from a callback, it returns at once and the callbacks after it are skipped.
        /// </summary>
        public void Stop()
        {
            if (Interlocked.Exchange(ref stopped, 1) == 0)
            {
                lock (gate) timer.Dispose();
                registration.Dispose();
                try { stopping.Cancel(); }
                catch (AggregateException) { /* the check is abandoned all the same */ }
            }
            lock (callbacks) { } // waits for a callback under way (re-entrant: one on this thread is the caller)
        }

        /// <summary>Stop.</summary>
        public void Dispose() { Stop(); }

        void Tick()
        {
            if (!Active) return;
            try { CheckAsync(); }
            catch (ObjectDisposedException) { /* stopped meanwhile */ }
        }

        async Task<LicenseState> Run()
        {
            var nextMs = Interval.TotalMilliseconds;
            try
            {
                lock (gate) if (Active) timer.Change(System.Threading.Timeout.Infinite, System.Threading.Timeout.Infinite);
                WatchProbe found;
                try
                {
                    found = await probe(stopping.Token).ConfigureAwait(false);
                }
                catch (Exception error) when (!stopping.IsCancellationRequested)
                {
                    // The probe turns every failure of the server into a finding: this is the store's, or a bug.
                    Report(error);
                    throw;
                }
                stopping.Token.ThrowIfCancellationRequested();
                var previous = state;
                state = found.State;
                if (found.Transient != null) failures++;
                else failures = 0;
                nextMs = DelayMs(found.Transient);
                lock (callbacks)
                {
                    if (found.Transient != null) Report(found.Transient);
                    foreach (var error in found.Errors) Report(error);
                    var usage = found.Usage;
                    if (usage != null && (usage.Sent.Count > 0 || usage.Dropped.Count > 0) && onUsageFlushed != null) Call(() => onUsageFlushed(usage));
                    if (previous == null || Signature(previous) != Signature(found.State)) Call(() => onChange(found.State, previous));
                }
                return found.State;
            }
            finally
            {
                lock (gate)
                {
                    running = null;
                    if (Active) timer.Change((long)Math.Min(nextMs, MaxWaitMs), System.Threading.Timeout.Infinite);
                }
            }
        }

        double DelayMs(KeyforgeException transient)
        {
            var interval = Interval.TotalMilliseconds;
            if (transient == null) return interval * (0.9 + Transport.Jitter() * 0.2);
            var api = transient as ApiException;
            var retryAfterMs = api != null && api.RetryAfterSeconds != null ? api.RetryAfterSeconds.Value * 1000 : 0;
            var backoff = Transport.Backoff(failures, TimeSpan.FromMilliseconds(Math.Min(firstRetry.TotalMilliseconds, interval)), Interval, Transport.Jitter());
            return Math.Max(retryAfterMs, backoff.TotalMilliseconds);
        }

        /// <summary>What makes two findings "the same" for OnChange: the status, its source, the features, the license's expiry (and the code of rejected, unverified).</summary>
        static string Signature(LicenseState found)
        {
            var coded = found.Status == WatchStatus.Rejected || found.Status == WatchStatus.Unverified;
            return Json.Stringify(new List<object>
            {
                found.Status, found.Source, found.Features.OrderBy(f => f, StringComparer.Ordinal).Cast<object>().ToList(),
                found.Entitlement == null ? null : found.Entitlement.LicenseExpiresAt, coded ? found.Code : null,
            });
        }

        void Call(Action callback)
        {
            lock (callbacks)
            {
                if (!Active) return;
                try { callback(); }
                catch (Exception error) { Report(error); }
            }
        }

        void Report(Exception error)
        {
            if (onError == null) return;
            lock (callbacks)
            {
                if (!Active) return;
                try { onError(error); }
                catch (Exception) { /* a throwing error handler must not stop the watcher */ }
            }
        }

        static async Task<LicenseState> Joined(Task<LicenseState> run, CancellationToken cancel)
        {
            var cancelled = new TaskCompletionSource<bool>();
            using (cancel.Register(() => cancelled.TrySetResult(true)))
            {
                if (await Task.WhenAny(run, cancelled.Task).ConfigureAwait(false) != run) throw new OperationCanceledException(cancel);
            }
            return await run.ConfigureAwait(false);
        }
    }

    public sealed partial class KeyforgeClient
    {
        /// <summary>
        /// Revalidates a license in the background and reports what changes (see <see cref="LicenseWatcher"/>): checks at
        /// once, then every Interval (±10 %), and calls OnChange(state, previous) with the first finding and whenever the
        /// status (<see cref="WatchStatus"/>), its source, the features or the license's expiry change. A check that gets
        /// no answer answers from the stored token and is retried with backoff; after each online check the license's
        /// queued usage is sent. Stop the watcher before disposing the client.
        /// </summary>
        /// <exception cref="ArgumentException">An empty LicenseKey, no OnChange, an Interval that is not positive.</exception>
        public LicenseWatcher Watch(WatchOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            var licenseKey = RequireKey(options.LicenseKey);
            if (options.OnChange == null) throw new ArgumentException("Watch needs an OnChange callback.");
            if (options.Interval <= TimeSpan.Zero) throw new ArgumentException("Interval must be a positive time.");
            var deviceId = options.DeviceId;
            var requireActivation = options.RequireActivation ?? deviceId != null;
            var version = options.Version;
            return new LicenseWatcher(cancel => Probe(licenseKey, deviceId, requireActivation, version, cancel), options);
        }

        /// <summary>One check of a watcher: online (one attempt), else the stored token; then the queued usage.</summary>
        async Task<WatchProbe> Probe(string licenseKey, string deviceId, bool requireActivation, string version, CancellationToken cancel)
        {
            var device = deviceId ?? (requireActivation ? DeviceId() : null);
            Validation online;
            try
            {
                online = await Validate(new ValidateOptions { LicenseKey = licenseKey, DeviceId = device, RequireActivation = requireActivation, Version = version }, false, cancel).ConfigureAwait(false);
            }
            catch (KeyforgeException error) when (!cancel.IsCancellationRequested)
            {
                if (error is LicenseRejectedException) return Found(WatchStatus.OfRejection(error.Code), null, null, error);
                if (!ErrorCodes.IsTransient(error)) return Found(WatchStatus.Unverified, null, null, error);
                KeyforgeException reason;
                try
                {
                    var offline = await ValidateOfflineAsync(licenseKey, device, requireActivation, cancel).ConfigureAwait(false);
                    var vouched = Found(WatchStatus.Valid, "offline", offline.Entitlement, error);
                    vouched.Transient = error;
                    return vouched;
                }
                catch (KeyforgeException offlineError) when (!cancel.IsCancellationRequested)
                {
                    // Nothing stored: the network failure is the news; otherwise why the stored token does not do.
                    reason = offlineError is VerificationException && offlineError.Code == ErrorCodes.TokenMissing ? error : offlineError;
                }
                var unreachable = Found(WatchStatus.Unreachable, null, null, reason);
                unreachable.Transient = error;
                return unreachable;
            }
            var probe = Found(WatchStatus.Valid, "online", online.Entitlement, null);
            // Back online: what was recorded meanwhile goes now.
            try
            {
                probe.Usage = await FlushUsageAsync(licenseKey, cancel).ConfigureAwait(false);
                if (probe.Usage.StoppedBy != null) probe.Errors.Add(probe.Usage.StoppedBy);
            }
            catch (Exception error) when (!cancel.IsCancellationRequested)
            {
                probe.Errors.Add(error);
            }
            return probe;
        }

        WatchProbe Found(string status, string source, Entitlement entitlement, KeyforgeException error)
        {
            return new WatchProbe
            {
                State = new LicenseState
                {
                    Status = status, Source = source, Entitlement = entitlement,
                    Features = (entitlement == null ? new List<string>() : entitlement.Features.ToList()).AsReadOnly(),
                    Code = error == null ? null : error.Code, Error = error, CheckedAt = clock(),
                },
            };
        }
    }
}
