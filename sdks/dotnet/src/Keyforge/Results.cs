using System;
using System.Collections.Generic;

namespace Keyforge
{
    /// <summary>A granted activation.</summary>
    public sealed class Activation
    {
        public string DeviceId { get; internal set; }
        public int? RemainingActivations { get; internal set; }
        /// <summary>The server's whole answer.</summary>
        public IDictionary<string, object> Response { get; internal set; }
    }

    public sealed class Deactivation
    {
        /// <summary>Seats left; null when a retry found the seat already free (the first attempt's answer was lost).</summary>
        public int? RemainingActivations { get; internal set; }
    }

    /// <summary>A valid license: from the server (<c>Source == "online"</c>) or from the stored token (<c>"offline"</c>).</summary>
    public sealed class Validation
    {
        public string Source { get; internal set; }
        public Entitlement Entitlement { get; internal set; }
        /// <summary>The server's answer (status, expiry, features …); null offline.</summary>
        public IDictionary<string, object> License { get; internal set; }
        public string OfflineToken { get; internal set; }
        /// <summary>Until when the application may run offline on this token.</summary>
        public DateTimeOffset OfflineUntil { get; internal set; }
        /// <summary>Server clock minus local clock, in seconds, as measured online.</summary>
        public long ClockSkewSeconds { get; internal set; }
        /// <summary>With OfflineFallback: why the server could not be used.</summary>
        public KeyforgeException OnlineError { get; internal set; }
    }

    public sealed class ValidateOptions
    {
        public string LicenseKey;
        public string DeviceId;
        /// <summary>The device must hold an activation of the license (DeviceNotActivated otherwise).</summary>
        public bool RequireActivation;
        public string Version;
        /// <summary>When the server cannot be reached (after the retries), answer from the stored token.</summary>
        public bool OfflineFallback;
    }

    /// <summary>An activation request for a machine without internet.</summary>
    public sealed class ActivationRequest
    {
        /// <summary>The armored request to carry to the customer portal or the vendor.</summary>
        public string Request { get; internal set; }
        /// <summary>The same request on one line (for a QR code).</summary>
        public string Compact { get; internal set; }
        public string DeviceId { get; internal set; }
        public string Challenge { get; internal set; }
    }

    public sealed class OfflineDeactivation
    {
        /// <summary>The armored proof to upload (customer portal, or the vendor's console).</summary>
        public string Proof { get; internal set; }
        public string ActivationId { get; internal set; }
        public string DeviceId { get; internal set; }
    }

    public sealed class MeterResult
    {
        public bool Queued { get; internal set; }
        public string IdempotencyKey { get; internal set; }
        /// <summary>True when the server had recorded this idempotency key already (a retry).</summary>
        public bool Replayed { get; internal set; }
        public double? Total { get; internal set; }
        public double? Limit { get; internal set; }
        public double? Remaining { get; internal set; }
        /// <summary>The server's whole answer; null when queued.</summary>
        public IDictionary<string, object> Response { get; internal set; }
        /// <summary>When queued: why it could not be sent now.</summary>
        public KeyforgeException QueuedBecause { get; internal set; }
    }

    public sealed class QueuedUsage
    {
        public string Event;
        public long Quantity;
        public string Timestamp;
        public string IdempotencyKey;
    }

    public sealed class UsageFlush
    {
        public List<MeterResult> Sent = new List<MeterResult>();
        public List<KeyValuePair<QueuedUsage, KeyforgeException>> Dropped = new List<KeyValuePair<QueuedUsage, KeyforgeException>>();
        public int Remaining;
        /// <summary>The failure that stopped the flush (the record and those after it stay queued), or null.</summary>
        public KeyforgeException StoppedBy;
    }
}
