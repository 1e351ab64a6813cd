using System;
using System.Collections.Generic;
using System.Linq;

namespace Keyforge
{
    /// <summary>An Ed25519 public key of the server's JWKS.</summary>
    public sealed class SigningKey
    {
        public string Kid { get; private set; }
        /// <summary>The raw 32-byte public key.</summary>
        public byte[] PublicKey { get; private set; }
        /// <summary>The JWK's <c>x</c> (base64url).</summary>
        public string X { get; private set; }

        public SigningKey(string kid, string x)
        {
            Kid = kid;
            X = x;
            PublicKey = Codec.FromBase64UrlStrict(x);
        }
    }

    /// <summary>A JSON Web Key Set as <c>/.well-known/jwks.json</c> serves it; only usable Ed25519 keys are kept.</summary>
    public sealed class Jwks
    {
        public IList<SigningKey> Keys { get; private set; }
        /// <summary>The document as given (for saving it with an application, to pin).</summary>
        public string Text { get; private set; }

        Jwks(IList<SigningKey> keys, string text) { Keys = keys; Text = text; }

        /// <summary>Keys that are not OKP/Ed25519 with a 32-byte <c>x</c> (and <c>alg</c> absent, EdDSA or Ed25519) are dropped.</summary>
        public static Jwks Parse(string json)
        {
            var document = Json.TryParseObject(json);
            var keys = new List<SigningKey>();
            object raw;
            if (document != null && document.TryGetValue("keys", out raw) && raw is List<object>)
            {
                foreach (var item in (List<object>)raw)
                {
                    var jwk = item as IDictionary<string, object>;
                    if (jwk == null || jwk.Str("kty") != "OKP" || jwk.Str("crv") != "Ed25519" || jwk.Str("x") == null) continue;
                    object alg;
                    if (jwk.TryGetValue("alg", out alg) && !(alg is string && ((string)alg == "EdDSA" || (string)alg == "Ed25519"))) continue;
                    var key = new SigningKey(jwk.Str("kid"), jwk.Str("x"));
                    if (key.PublicKey == null || key.PublicKey.Length != 32) continue;
                    keys.Add(key);
                }
            }
            return new Jwks(keys, json);
        }

        public SigningKey Find(string kid)
        {
            return Keys.FirstOrDefault(key => key.Kid == kid);
        }
    }

    /// <summary>
    /// The entitlement the server signed (the claims of <c>offlineCacheToken</c> or of a license file). Every field is
    /// covered by the Ed25519 signature.
    /// </summary>
    public sealed class Entitlement
    {
        /// <summary>The license's id (<c>sub</c>), never the key.</summary>
        public string LicenseId { get; internal set; }
        public string TenantId { get; internal set; }
        public string ProductId { get; internal set; }
        public string Product { get; internal set; }
        public IList<string> BundleProducts { get; internal set; }
        public IList<string> Features { get; internal set; }
        public string LicenseExpiresAt { get; internal set; }
        public bool IsTrial { get; internal set; }
        public bool NodeLocked { get; internal set; }
        public double? OfflineGraceDays { get; internal set; }
        public string MaintenanceExpiresAt { get; internal set; }
        public string MinVersion { get; internal set; }
        public string MaxVersion { get; internal set; }
        /// <summary>The device the token is bound to, or null.</summary>
        public string Device { get; internal set; }
        /// <summary>True when the server checked that <see cref="Device"/> holds an activation.</summary>
        public bool DeviceActivated { get; internal set; }
        public DateTimeOffset IssuedAt { get; internal set; }
        /// <summary>When it stops verifying: the end of the offline grace period (or of a license file's ttl).</summary>
        public DateTimeOffset ExpiresAt { get; internal set; }
        public string KeyId { get; internal set; }
        /// <summary>Every claim as signed, including any a newer server adds.</summary>
        public IDictionary<string, object> Claims { get; internal set; }
    }

    /// <summary>What a token must satisfy besides its signature.</summary>
    public sealed class TokenCheck
    {
        public string Issuer;
        public IList<string> Products;
        /// <summary>"Now" as the check should see it (the server's clock as the client estimates it).</summary>
        public DateTimeOffset Now;
        public int ClockToleranceSeconds = 300;
        public string DeviceId;
        public bool RequireActivation;
        public string Challenge;
    }

    /// <summary>Verifies Keyforge's signed tokens: EdDSA only, a trusted key, issuer, expiry, then product, device and challenge.</summary>
    public static class OfflineTokens
    {
        public const string LicenseFileKind = "license-file";
        /// <summary>Tokens longer than this are refused before any work (the server's are a few hundred bytes).</summary>
        public const int MaxTokenLength = 16384;

        /// <summary>The header and payload of a compact JWS, without verifying it; throws TokenInvalid when unreadable.</summary>
        public static void Decode(string token, out IDictionary<string, object> header, out IDictionary<string, object> payload, out byte[] signature, out byte[] signed)
        {
            if (token == null || token.Length > MaxTokenLength) throw Invalid("The token is missing or too long.");
            var parts = token.Split('.');
            if (parts.Length != 3) throw Invalid("The token is not a compact JWS (three parts).");
            var headerBytes = Codec.FromBase64UrlStrict(parts[0]);
            var payloadBytes = Codec.FromBase64UrlStrict(parts[1]);
            signature = Codec.FromBase64UrlStrict(parts[2]);
            if (headerBytes == null || payloadBytes == null || signature == null) throw Invalid("The token's parts are not base64url.");
            try
            {
                header = Json.Parse(Codec.Utf8.GetString(headerBytes)) as IDictionary<string, object>;
                payload = Json.Parse(Codec.Utf8.GetString(payloadBytes)) as IDictionary<string, object>;
            }
            catch (Exception error) when (error is FormatException || error is ArgumentException)
            {
                throw Invalid("The token's header or payload is not JSON.");
            }
            if (header == null || payload == null) throw Invalid("The token's header or payload is not a JSON object.");
            signed = Codec.Utf8.GetBytes(parts[0] + "." + parts[1]);
        }

        /// <summary>The <c>kid</c> of a token whose form and algorithm are right (step 1 of the check); throws TokenInvalid otherwise.</summary>
        public static string KeyIdOf(string token)
        {
            IDictionary<string, object> payload;
            byte[] signature, signed;
            return Open(token, out payload, out signature, out signed);
        }

        /// <summary>Decodes the token and checks its header: EdDSA, with a kid (which it returns).</summary>
        static string Open(string token, out IDictionary<string, object> payload, out byte[] signature, out byte[] signed)
        {
            IDictionary<string, object> header;
            Decode(token, out header, out payload, out signature, out signed);
            if (header.Str("alg") != "EdDSA") throw Invalid("The token's algorithm is not EdDSA.");
            // A critical extension this verifier does not implement must be refused (RFC 7515 §4.1.11): none is.
            if (header.ContainsKey("crit")) throw Invalid("The token names critical header extensions this SDK does not support.");
            var kid = header.Str("kid");
            if (kid == null) throw Invalid("The token names no signing key (kid).");
            return kid;
        }

        /// <summary>Verifies <paramref name="token"/> with a key found by <paramref name="keyFor"/> (which throws KeyUnknown when it has none).</summary>
        public static Entitlement Verify(string token, Func<string, SigningKey> keyFor, TokenCheck check)
        {
            string kid;
            var payload = VerifySignature(token, keyFor, out kid);

            var iat = payload.Num("iat");
            var exp = payload.Num("exp");
            var product = payload.Str("product");
            if (payload.Str("sub") == null || iat == null || exp == null || product == null) throw Invalid("The token lacks sub, iat, exp or product.");
            if (payload.Str("iss") != check.Issuer) throw new VerificationException(ErrorCodes.WrongIssuer, "The offline token was not issued by " + check.Issuer + ".");
            var now = check.Now.ToUnixTimeMilliseconds() / 1000d;
            object nbf;
            if (payload.TryGetValue("nbf", out nbf) && (!(nbf is double) || (double)nbf > now + check.ClockToleranceSeconds))
                throw Invalid("The token is not valid yet (nbf), or its nbf is not a time.");
            if (exp.Value <= now - check.ClockToleranceSeconds) throw new VerificationException(ErrorCodes.TokenExpired, "The offline token has expired: the offline grace period is over; validate online.");

            var bundle = payload.Strings("bundleProducts");
            if (!check.Products.Contains(product) && (bundle == null || !bundle.Any(check.Products.Contains)))
                throw new VerificationException(ErrorCodes.WrongProduct, "The license is for \"" + product + "\", not " + string.Join(" or ", check.Products.Select(p => "\"" + p + "\"")) + ".");
            var device = payload.Str("device");
            if (check.DeviceId != null && device != check.DeviceId)
                throw new VerificationException(ErrorCodes.WrongDevice, device == null ? "The token is not bound to a device, but this check asks for one." : "The token is bound to another device.");
            if (check.RequireActivation && !payload.IsTrue("deviceActivated"))
                throw new VerificationException(ErrorCodes.WrongDevice, "The token does not attest that this device holds an activation: validate online with requireActivation.");
            if (check.Challenge != null && payload.Str("nonce") != check.Challenge)
                throw new VerificationException(ErrorCodes.ChallengeMismatch, "The token does not echo this request's challenge: a replayed or foreign answer.");

            return new Entitlement
            {
                LicenseId = payload.Str("sub"),
                TenantId = payload.Str("tenant") ?? "",
                ProductId = payload.Str("productId") ?? "",
                Product = product,
                BundleProducts = bundle,
                Features = payload.Strings("features") ?? new List<string>(),
                LicenseExpiresAt = payload.Str("licenseExpiresAt"),
                IsTrial = payload.IsTrue("isTrial"),
                NodeLocked = payload.IsTrue("nodeLocked"),
                OfflineGraceDays = payload.Num("offlineGraceDays"),
                MaintenanceExpiresAt = payload.Str("maintenanceExpiresAt"),
                MinVersion = payload.Str("minVersion"),
                MaxVersion = payload.Str("maxVersion"),
                Device = device,
                DeviceActivated = payload.IsTrue("deviceActivated"),
                IssuedAt = DateTimeOffset.FromUnixTimeMilliseconds((long)(iat.Value * 1000)),
                ExpiresAt = DateTimeOffset.FromUnixTimeMilliseconds((long)(exp.Value * 1000)),
                KeyId = kid,
                Claims = payload,
            };
        }

        /// <summary>
        /// The payload of a compact JWS whose form, algorithm (EdDSA), key (found by <paramref name="keyFor"/>; KeyUnknown
        /// when it has none) and Ed25519 signature check out (TokenInvalid otherwise). Shared by offline tokens, license
        /// files and artifact signatures.
        /// </summary>
        public static IDictionary<string, object> VerifySignature(string token, Func<string, SigningKey> keyFor, out string kid)
        {
            IDictionary<string, object> payload;
            byte[] signature, signed;
            kid = Open(token, out payload, out signature, out signed);
            var key = keyFor(kid);
            if (key == null) throw new VerificationException(ErrorCodes.KeyUnknown, "The token is signed by key " + kid + ", which is not among the trusted keys.");
            if (!Sodium.Verify(signature, signed, key.PublicKey)) throw Invalid("The token's signature does not verify: tampered, or not signed by this server.");
            return payload;
        }

        /// <summary>The checks of using a stored token without the server: clock set back, then whether offline use is granted.</summary>
        public static void CheckOfflineUse(Entitlement entitlement, DateTimeOffset now, int clockToleranceSeconds)
        {
            if (now < entitlement.IssuedAt.AddSeconds(-clockToleranceSeconds))
                throw new VerificationException(ErrorCodes.ClockRollback, "The clock is earlier than the time the token was issued: it has been set back.");
            var grace = entitlement.OfflineGraceDays;
            if ((grace == null || grace.Value == 0) && entitlement.Claims.Str("kind") != LicenseFileKind)
                throw new VerificationException(ErrorCodes.OfflineNotAllowed, "This license has no offline grace period: it must be validated online.");
        }

        static VerificationException Invalid(string message)
        {
            return new VerificationException(ErrorCodes.TokenInvalid, message);
        }
    }
}
