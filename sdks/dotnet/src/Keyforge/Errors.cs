using System;
using System.Collections.Generic;

namespace Keyforge
{
    /// <summary>
    /// The base of every exception the SDK throws. <see cref="Code"/> is machine-readable and spelled exactly as the REST
    /// API and the other Keyforge SDKs spell it (see <see cref="ErrorCodes"/>). A call returns only a granted result:
    /// a refusal (an HTTP 200 with <c>isValid: false</c> included) is always thrown.
    /// </summary>
    public class KeyforgeException : Exception
    {
        public string Code { get; private set; }

        public KeyforgeException(string code, string message, Exception inner = null) : base(message, inner)
        {
            Code = code;
        }
    }

    /// <summary>The server answered and refused (HTTP 200, <c>isValid: false</c>): never retried.</summary>
    public class LicenseRejectedException : KeyforgeException
    {
        /// <summary>The server's whole answer (for QuotaExceeded: total, limit, remaining, period …).</summary>
        public IDictionary<string, object> Response { get; private set; }

        public LicenseRejectedException(string code, string message, IDictionary<string, object> response) : base(code, message)
        {
            Response = response;
        }
    }

    /// <summary>An HTTP error answer. RateLimited (429) and ServiceUnavailable (502–504) are retried before it is thrown.</summary>
    public class ApiException : KeyforgeException
    {
        public int Status { get; private set; }
        /// <summary>The server's X-Request-Id (quote it in a support request).</summary>
        public string RequestId { get; private set; }
        /// <summary>Per-field problems of an InvalidRequest.</summary>
        public IDictionary<string, object> Fields { get; private set; }
        /// <summary>The Retry-After the server sent, in seconds.</summary>
        public double? RetryAfterSeconds { get; private set; }

        public ApiException(string code, string message, int status, string requestId = null, IDictionary<string, object> fields = null, double? retryAfterSeconds = null)
            : base(code, message)
        {
            Status = status;
            RequestId = requestId;
            Fields = fields;
            RetryAfterSeconds = retryAfterSeconds;
        }
    }

    /// <summary>No answer: the connection failed (NetworkError) or the per-attempt timeout passed (Timeout).</summary>
    public class NetworkException : KeyforgeException
    {
        public NetworkException(string code, string message, Exception inner = null) : base(code, message, inner) { }
    }

    /// <summary>A signed token, license file or activation response did not check out.</summary>
    public class VerificationException : KeyforgeException
    {
        public VerificationException(string code, string message, Exception inner = null) : base(code, message, inner) { }
    }

    /// <summary>
    /// Every code the SDK throws, as the REST API and the other SDKs spell them, grouped under the exception that carries
    /// them (docs/scripts/error-reference.ts reads these groups for the error reference).
    /// </summary>
    public static class ErrorCodes
    {
        // LicenseRejectedException: rejections (HTTP 200, isValid false)
        public const string LicenseNotFound = "LicenseNotFound";
        public const string LicenseRevoked = "LicenseRevoked";
        public const string Suspended = "Suspended";
        public const string LicenseExpired = "LicenseExpired";
        public const string SeatsExhausted = "SeatsExhausted";
        public const string VersionNotSupported = "VersionNotSupported";
        public const string DeviceIdRequired = "DeviceIdRequired";
        public const string ProductMismatch = "ProductMismatch";
        public const string ActivationNotFound = "ActivationNotFound";
        public const string DeviceNotActivated = "DeviceNotActivated";
        public const string FloatingNotEnabled = "FloatingNotEnabled";
        public const string FloatingSeatsExhausted = "FloatingSeatsExhausted";
        public const string SessionInvalid = "SessionInvalid";
        public const string SessionExpired = "SessionExpired";
        public const string QuotaExceeded = "QuotaExceeded";
        // ApiException: HTTP error answers, and an answer that is not the API's JSON
        public const string InvalidRequest = "InvalidRequest";
        public const string NonceRequired = "NonceRequired";
        public const string NonceInvalid = "NonceInvalid";
        public const string RateLimited = "RateLimited";
        public const string ServiceUnavailable = "ServiceUnavailable";
        public const string InternalError = "InternalError";
        public const string InvalidResponse = "InvalidResponse";
        // NetworkException: no answer
        public const string NetworkError = "NetworkError";
        public const string Timeout = "Timeout";
        // VerificationException: a token, license file or activation response that does not check out
        public const string TokenMissing = "TokenMissing";
        public const string TokenInvalid = "TokenInvalid";
        public const string TokenExpired = "TokenExpired";
        public const string KeyUnknown = "KeyUnknown";
        public const string WrongIssuer = "WrongIssuer";
        public const string WrongProduct = "WrongProduct";
        public const string WrongDevice = "WrongDevice";
        public const string ChallengeMismatch = "ChallengeMismatch";
        public const string ClockRollback = "ClockRollback";
        public const string OfflineNotAllowed = "OfflineNotAllowed";
        /// <summary>A downloaded release artifact did not check out: signature, size, SHA-256 or SHA-512.</summary>
        public const string ArtifactIntegrity = "ArtifactIntegrity";
        // KeyforgeException: a floating session's own failure, a download that cannot be written to disk
        public const string LeaseLapsed = "LeaseLapsed";
        public const string FileWriteFailed = "FileWriteFailed";

        /// <summary>True for failures worth retrying later: no answer, 429, 502, 503, 504.</summary>
        public static bool IsTransient(Exception error)
        {
            if (error is NetworkException) return true;
            var api = error as ApiException;
            return api != null && (api.Status == 429 || api.Status == 502 || api.Status == 503 || api.Status == 504);
        }
    }
}
