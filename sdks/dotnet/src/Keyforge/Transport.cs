using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.IO;
using System.Net.Http;
using System.Net.Http.Headers;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge
{
    /// <summary>How calls are retried on 429, 502, 503, 504 and network failures (never on a definite answer).</summary>
    public sealed class RetryOptions
    {
        /// <summary>Attempts in all, the first included (1 turns retries off).</summary>
        public int Attempts = 4;
        /// <summary>The n-th retry waits between ½ and 1 × BaseDelay · 2ⁿ⁻¹, capped by MaxDelay.</summary>
        public TimeSpan BaseDelay = TimeSpan.FromMilliseconds(500);
        public TimeSpan MaxDelay = TimeSpan.FromSeconds(8);
        /// <summary>A longer Retry-After is not waited for: the ApiException is thrown at once, carrying RetryAfterSeconds.</summary>
        public double MaxRetryAfterSeconds = 30;
    }

    internal sealed class Answer
    {
        public int Status;
        public IDictionary<string, object> Json;
        public HttpResponseHeaders Headers;
    }

    /// <summary>One HTTP round trip (<see cref="Once"/>) and the retry loop around a unit of work (<see cref="Retrying{T}"/>).</summary>
    internal sealed class Transport : IDisposable
    {
        /// <summary>An answer longer than this is not the API's (the JWKS and every answer are a few KB).</summary>
        public const int MaxAnswerBytes = 1 << 20;

        readonly string baseUrl;
        readonly HttpClient http;
        readonly TimeSpan timeout;
        readonly RetryOptions retry;
        readonly Func<DateTimeOffset> clock;
        static readonly Random jitter = new Random();

        public Transport(string baseUrl, HttpMessageHandler handler, TimeSpan timeout, RetryOptions retry, Func<DateTimeOffset> clock)
        {
            this.baseUrl = baseUrl;
            // Redirects are not followed: the license key travels in the body and must not be re-sent to another
            // address (configure the server's final URL). A redirect answers as the HTTP error it is.
            http = handler == null ? new HttpClient(new HttpClientHandler { AllowAutoRedirect = false }) : new HttpClient(handler, false);
            http.Timeout = System.Threading.Timeout.InfiniteTimeSpan; // each attempt has its own
            this.timeout = timeout;
            this.retry = retry;
            this.clock = clock;
        }

        public void Dispose() { http.Dispose(); }

        public async Task<Answer> Once(string method, string path, object body = null, string bearer = null, CancellationToken cancel = default(CancellationToken), string license = null)
        {
            cancel.ThrowIfCancellationRequested();
            using (var attempt = CancellationTokenSource.CreateLinkedTokenSource(cancel))
            {
                attempt.CancelAfter(timeout);
                var request = new HttpRequestMessage(new HttpMethod(method), baseUrl + path);
                request.Headers.Accept.Add(new MediaTypeWithQualityHeaderValue("application/json"));
                if (bearer != null) request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", bearer);
                // The release routes: the key in the header (never in the URL).
                if (license != null) request.Headers.TryAddWithoutValidation("Authorization", "License " + license);
                if (body != null) request.Content = new StringContent(Json.Stringify(body), Encoding.UTF8, "application/json");
                HttpResponseMessage response;
                string text;
                try
                {
                    response = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, attempt.Token).ConfigureAwait(false);
                    text = await ReadBounded(response, attempt.Token).ConfigureAwait(false);
                }
                catch (Exception error) when (!(error is KeyforgeException))
                {
                    if (cancel.IsCancellationRequested) throw new OperationCanceledException(cancel);
                    if (attempt.IsCancellationRequested) throw new NetworkException(ErrorCodes.Timeout, method + " " + path + ": no answer within " + timeout.TotalMilliseconds + " ms.", error);
                    throw new NetworkException(ErrorCodes.NetworkError, method + " " + path + ": " + error.Message, error);
                }
                using (response)
                {
                    var status = (int)response.StatusCode;
                    var requestId = Header(response, "X-Request-Id");
                    object parsed = null;
                    if (text != null) { try { parsed = Json.Parse(text); } catch (FormatException) { parsed = null; } }
                    var json = parsed as IDictionary<string, object>;
                    if (status < 200 || status > 299)
                    {
                        var error = json.Obj("error");
                        throw new ApiException(
                            error.Str("code") ?? StatusCode(status),
                            error.Str("message") ?? method + " " + path + ": HTTP " + status + ".",
                            status, requestId, error.Obj("fields"), RetryAfter(Header(response, "Retry-After")));
                    }
                    if (json == null) throw new ApiException(ErrorCodes.InvalidResponse, method + " " + path + ": the answer is not the API's JSON (HTTP " + status + ").", status, requestId, null, RetryAfter(Header(response, "Retry-After")));
                    return new Answer { Status = status, Json = json, Headers = response.Headers };
                }
            }
        }

        /// <summary>
        /// GETs an absolute <paramref name="url"/> (a download link) with no credentials and hands the body to
        /// <paramref name="write"/> chunk by chunk. Redirects are not followed (a 3xx is InvalidResponse); a body longer
        /// than <paramref name="maxBytes"/> stops with ArtifactIntegrity. The timeout bounds each wait for data, not the
        /// whole body. Errors map as for API calls.
        /// </summary>
        public async Task Download(string url, long maxBytes, Action<byte[], int> write, CancellationToken cancel)
        {
            const string what = "GET (download link)";
            cancel.ThrowIfCancellationRequested();
            using (var attempt = CancellationTokenSource.CreateLinkedTokenSource(cancel))
            {
                attempt.CancelAfter(timeout);
                var request = new HttpRequestMessage(HttpMethod.Get, url);
                HttpResponseMessage response = null;
                try
                {
                    response = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, attempt.Token).ConfigureAwait(false);
                    var status = (int)response.StatusCode;
                    if (status >= 300 && status < 400)
                        throw new ApiException(ErrorCodes.InvalidResponse, what + ": answered a redirect (HTTP " + status + "), which is not followed.", status, Header(response, "X-Request-Id"));
                    if (status < 200 || status > 299)
                    {
                        var text = await ReadBounded(response, attempt.Token).ConfigureAwait(false);
                        IDictionary<string, object> error = null;
                        if (text != null) { try { error = (Json.Parse(text) as IDictionary<string, object>).Obj("error"); } catch (FormatException) { error = null; } }
                        throw new ApiException(error.Str("code") ?? StatusCode(status), error.Str("message") ?? what + ": HTTP " + status + ".", status, Header(response, "X-Request-Id"), null, RetryAfter(Header(response, "Retry-After")));
                    }
                    var declared = response.Content == null ? null : response.Content.Headers.ContentLength;
                    if (declared != null && declared.Value > maxBytes) throw SignedArtifact.TooLong(maxBytes);
                    using (var stream = await response.Content.ReadAsStreamAsync().ConfigureAwait(false))
                    {
                        var chunk = new byte[65536];
                        long total = 0;
                        while (true)
                        {
                            attempt.CancelAfter(timeout);
                            var read = await stream.ReadAsync(chunk, 0, chunk.Length, attempt.Token).ConfigureAwait(false);
                            if (read == 0) return;
                            total += read;
                            if (total > maxBytes) throw SignedArtifact.TooLong(maxBytes);
                            write(chunk, read);
                        }
                    }
                }
                catch (Exception error) when (!(error is KeyforgeException))
                {
                    if (cancel.IsCancellationRequested) throw new OperationCanceledException(cancel);
                    if (attempt.IsCancellationRequested) throw new NetworkException(ErrorCodes.Timeout, what + ": no data within " + timeout.TotalMilliseconds + " ms.", error);
                    throw new NetworkException(ErrorCodes.NetworkError, what + ": " + error.Message, error);
                }
                finally
                {
                    if (response != null) response.Dispose();
                }
            }
        }

        /// <summary>The body as text, or null when it is longer than <see cref="MaxAnswerBytes"/> or not UTF-8 (then not the API's JSON).</summary>
        static async Task<string> ReadBounded(HttpResponseMessage response, CancellationToken cancel)
        {
            if (response.Content == null) return "";
            using (var stream = await response.Content.ReadAsStreamAsync().ConfigureAwait(false))
            using (var buffer = new MemoryStream())
            {
                var chunk = new byte[16384];
                while (true)
                {
                    var read = await stream.ReadAsync(chunk, 0, chunk.Length, cancel).ConfigureAwait(false);
                    if (read == 0) break;
                    if (buffer.Length + read > MaxAnswerBytes) return null;
                    buffer.Write(chunk, 0, read);
                }
                try { return Codec.Utf8.GetString(buffer.ToArray()); }
                catch (ArgumentException) { return null; }
            }
        }

        static string Header(HttpResponseMessage response, string name)
        {
            IEnumerable<string> values;
            if (response.Headers.TryGetValues(name, out values)) foreach (var value in values) return value;
            return null;
        }

        /// <summary>Seconds from a Retry-After header: delta-seconds or an HTTP date.</summary>
        internal double? RetryAfter(string value)
        {
            if (value == null) return null;
            var trimmed = value.Trim();
            if (trimmed.Length > 0 && trimmed.All(c => c >= '0' && c <= '9'))
            {
                // Delta-seconds of any length: one too long for a number is longer than any wait allowed.
                long seconds;
                return long.TryParse(trimmed, NumberStyles.None, CultureInfo.InvariantCulture, out seconds) ? seconds : double.MaxValue;
            }
            DateTimeOffset date;
            if (DateTimeOffset.TryParse(trimmed, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out date))
                return Math.Max(0, Math.Ceiling((date - clock()).TotalSeconds));
            return null;
        }

        /// <summary>
        /// Runs <paramref name="attempt"/> until it succeeds, a definite answer comes, the attempts are used up or the
        /// caller cancels. Transient failures wait Retry-After when sent (giving up at once when it is longer than
        /// allowed), else an exponential backoff with jitter.
        /// </summary>
        public async Task<T> Retrying<T>(Func<int, Task<T>> attempt, CancellationToken cancel, Action<Exception> onTransient = null)
        {
            for (var n = 1; ; n++)
            {
                cancel.ThrowIfCancellationRequested();
                try
                {
                    return await attempt(n).ConfigureAwait(false);
                }
                catch (Exception error) when (!cancel.IsCancellationRequested && ErrorCodes.IsTransient(error) && n < retry.Attempts)
                {
                    var delay = DelayBefore(n, error);
                    if (delay == null) throw;
                    if (onTransient != null) onTransient(error);
                    await Task.Delay(delay.Value, cancel).ConfigureAwait(false);
                }
            }
        }

        internal TimeSpan? DelayBefore(int n, Exception error)
        {
            var api = error as ApiException;
            var random = Jitter();
            if (api != null && api.RetryAfterSeconds != null)
            {
                if (api.RetryAfterSeconds.Value > retry.MaxRetryAfterSeconds) return null;
                // At least what the server asked for, spread a little so a crowd of clients does not return in step.
                return TimeSpan.FromMilliseconds(api.RetryAfterSeconds.Value * 1000 + random * Math.Min(retry.BaseDelay.TotalMilliseconds, 1000));
            }
            return Backoff(n, retry.BaseDelay, retry.MaxDelay, random);
        }

        /// <summary>A random number in [0, 1) for spreading waits, from one generator shared by every caller (two made at the same tick would agree).</summary>
        internal static double Jitter()
        {
            lock (jitter) return jitter.NextDouble();
        }

        /// <summary>"Equal jitter" exponential backoff: between half and all of base · 2ⁿ⁻¹, capped.</summary>
        internal static TimeSpan Backoff(int n, TimeSpan baseDelay, TimeSpan maxDelay, double random)
        {
            var cap = Math.Min(maxDelay.TotalMilliseconds, baseDelay.TotalMilliseconds * Math.Pow(2, n - 1));
            return TimeSpan.FromMilliseconds(cap / 2 + random * (cap / 2));
        }

        static string StatusCode(int status)
        {
            if (status == 429) return ErrorCodes.RateLimited;
            if (status == 502 || status == 503 || status == 504) return ErrorCodes.ServiceUnavailable;
            if (status >= 500) return ErrorCodes.InternalError;
            return ErrorCodes.InvalidRequest;
        }
    }
}
