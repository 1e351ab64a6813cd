using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Text.RegularExpressions;

namespace Keyforge
{
    /// <summary>An Ed25519 device key pair of an air-gapped activation (the private seed stays in the store).</summary>
    public sealed class DeviceKey
    {
        /// <summary>The 32-byte private seed, base64url.</summary>
        public string Seed { get; private set; }
        /// <summary>The public key, base64url (the request's <c>pub</c>).</summary>
        public string Pub { get; private set; }

        public DeviceKey(string seed)
        {
            var bytes = Codec.FromBase64UrlStrict(seed);
            if (bytes == null || bytes.Length != 32) throw new ArgumentException("A device key seed is 32 bytes, base64url.");
            byte[] publicKey, secretKey;
            Sodium.KeyPairFromSeed(bytes, out publicKey, out secretKey);
            Array.Clear(secretKey, 0, secretKey.Length);
            Seed = seed;
            Pub = Codec.Base64Url(publicKey);
        }

        public static DeviceKey Create()
        {
            return new DeviceKey(Codec.Base64Url(Codec.RandomBytes(32)));
        }
    }

    /// <summary>The fields of an activation request, in the order they are written and MAC'd.</summary>
    public sealed class ActivationRequestFields
    {
        public string Hint;
        public string Device;
        public string Name;
        public string Pub;
        public string Challenge;
        public long Iat;
        public IList<string> Product;
        public string Version;
    }

    /// <summary>
    /// The text formats of license files, activation requests and deactivation proofs (docs/integrate/license-files.md
    /// describes each byte; the server and every Keyforge SDK read and write the same).
    /// </summary>
    public static class LicenseFiles
    {
        public const string CompactRequestPrefix = "KFREQ1:";
        public const int MaxArmoredChars = 16384;
        const string FileKeyInfo = "keyforge license file v1";
        const string RequestMacInfo = "keyforge activation request v1";
        public const string DeactivationKind = "keyforge-deactivation";

        static readonly Regex QuoteMarkers = new Regex(@"^[ \t]*(?:>[ \t]*)+", RegexOptions.Multiline | RegexOptions.CultureInvariant);
        static readonly Regex Base64Body = new Regex(@"^[A-Za-z0-9+/]+={0,2}$", RegexOptions.CultureInvariant);

        /// <summary><c>-----BEGIN KEYFORGE label-----</c>, base64 in lines of 64, the END line.</summary>
        public static string Armor(string label, string text)
        {
            var body = Convert.ToBase64String(Codec.Utf8.GetBytes(text));
            var builder = new StringBuilder();
            builder.Append("-----BEGIN KEYFORGE ").Append(label).Append("-----\n");
            for (var i = 0; i < body.Length; i += 64) builder.Append(body, i, Math.Min(64, body.Length - i)).Append('\n');
            builder.Append("-----END KEYFORGE ").Append(label).Append("-----\n");
            return builder.ToString();
        }

        /// <summary>The text armored under <paramref name="label"/> (white space, mail quote markers and surrounding text ignored).</summary>
        public static string Unarmor(string label, string text)
        {
            var what = label.ToLowerInvariant();
            if (text == null || text.Length > MaxArmoredChars) throw Damaged("This is not a " + what + ".");
            var trimmed = text.Trim();
            try
            {
                if (label == "ACTIVATION REQUEST" && trimmed.StartsWith(CompactRequestPrefix, StringComparison.Ordinal))
                {
                    var compact = Codec.FromBase64(trimmed.Substring(CompactRequestPrefix.Length));
                    if (compact == null) throw Damaged("The " + what + " is damaged: copy it again whole.");
                    return Codec.Utf8.GetString(compact);
                }
                var begin = "-----BEGIN KEYFORGE " + label + "-----";
                var from = text.IndexOf(begin, StringComparison.Ordinal);
                var to = from < 0 ? -1 : text.IndexOf("-----END KEYFORGE " + label + "-----", from, StringComparison.Ordinal);
                if (from < 0 || to < 0) throw Damaged("This is not a whole " + what + ": its BEGIN and END lines must both be there.");
                var body = QuoteMarkers.Replace(text.Substring(from + begin.Length, to - from - begin.Length), "");
                body = new string(body.Where(c => !char.IsWhiteSpace(c)).ToArray());
                if (!Base64Body.IsMatch(body)) throw Damaged("The " + what + " is damaged: copy it again whole.");
                var bytes = Codec.FromBase64(body);
                if (bytes == null) throw Damaged("The " + what + " is damaged: copy it again whole.");
                return Codec.Utf8.GetString(bytes);
            }
            catch (VerificationException) { throw; }
            catch (Exception error) when (error is FormatException || error is ArgumentException || error is DecoderFallbackException)
            {
                throw Damaged("The " + what + " is damaged: copy it again whole.");
            }
        }

        static IDictionary<string, object> JsonObject(string text, string what)
        {
            var parsed = Json.TryParseObject(text);
            if (parsed == null) throw Damaged("The " + what + " is damaged: its content is not readable.");
            return parsed;
        }

        static byte[] FileKey(string licenseKey, byte[] salt, string info)
        {
            return Codec.Hkdf(Codec.Utf8.GetBytes(Codec.NormalizeKey(licenseKey)), salt, Codec.Utf8.GetBytes(info), 32);
        }

        /// <summary>
        /// The signed token inside a license file: as is, or decrypted (AES-256-GCM under HKDF-SHA256 of the license key
        /// and, for a device file, the device id).
        /// </summary>
        public static string OpenLicenseFile(string text, string licenseKey = null, string deviceId = null)
        {
            var envelope = JsonObject(Unarmor("LICENSE FILE", text), "license file");
            var version = envelope.Num("v");
            if (version == null || version.Value != 1) throw Damaged("This license file is of an unknown version: update the SDK.");
            object enc;
            envelope.TryGetValue("enc", out enc);
            if (enc == null && envelope.ContainsKey("enc") && envelope.Str("token") != null) return envelope.Str("token");
            var salt = envelope.Str("salt");
            var iv = envelope.Str("iv");
            var ct = envelope.Str("ct");
            if (!"A256GCM".Equals(enc) || salt == null || iv == null || ct == null) throw Damaged("The license file is damaged.");
            if (string.IsNullOrEmpty(licenseKey)) throw Damaged("This license file is encrypted: pass the licenseKey that opens it.");
            var forDevice = envelope.IsTrue("device");
            if (forDevice && string.IsNullOrEmpty(deviceId)) throw new VerificationException(ErrorCodes.WrongDevice, "This license file is encrypted for one device: pass its deviceId.");
            var saltBytes = Codec.FromBase64(salt);
            var ivBytes = Codec.FromBase64(iv);
            var ctBytes = Codec.FromBase64(ct);
            byte[] plain = null;
            if (saltBytes != null && ivBytes != null && ctBytes != null)
            {
                var key = FileKey(licenseKey, saltBytes, forDevice ? FileKeyInfo + "\n" + deviceId : FileKeyInfo);
                plain = Sodium.AesGcmDecrypt(key, ivBytes, ctBytes, Codec.Utf8.GetBytes(FileKeyInfo));
            }
            if (plain == null) throw Damaged("The license file does not open with this license key" + (forDevice ? " and device" : "") + ": another license or device, or the file was altered.");
            try { return Codec.Utf8.GetString(plain); }
            catch (DecoderFallbackException) { throw Damaged("The license file is damaged."); }
        }

        /// <summary>The license key's public hint (<c>ACME-…-WZ3P</c>), as the server shows it.</summary>
        public static string KeyHint(string licenseKey)
        {
            var key = Codec.NormalizeKey(licenseKey);
            // An imported key: its first and last 4 characters from 16 on, its last 2 below.
            if (!Codec.IsKeyforgeKey(key)) return key.Length >= 16 ? key.Substring(0, 4) + "\u2026" + key.Substring(key.Length - 4) : "\u2026" + key.Substring(Math.Max(0, key.Length - 2));
            var parts = key.Split('-');
            return parts[0] + "-\u2026-" + parts[parts.Length - 1];
        }

        /// <summary>HMAC-SHA256 under HKDF-SHA256(license key, no salt, "keyforge activation request v1") over the fields in order.</summary>
        public static string RequestMac(string licenseKey, ActivationRequestFields fields)
        {
            var key = Codec.Hkdf(Codec.Utf8.GetBytes(Codec.NormalizeKey(licenseKey)), new byte[0], Codec.Utf8.GetBytes(RequestMacInfo), 32);
            var message = Json.Stringify(new List<object> { RequestMacInfo, fields.Hint, fields.Device, fields.Name, fields.Pub, fields.Challenge, fields.Iat, fields.Product == null ? null : fields.Product.ToList(), fields.Version });
            return Codec.Base64Url(Codec.HmacSha256(key, Codec.Utf8.GetBytes(message)));
        }

        /// <summary>The JSON of a request (its fields and MAC, in the order the server writes them).</summary>
        public static string RequestJson(ActivationRequestFields fields, string mac)
        {
            var document = new Dictionary<string, object>
            {
                { "v", 1L }, { "hint", fields.Hint }, { "device", fields.Device }, { "name", fields.Name }, { "pub", fields.Pub },
                { "challenge", fields.Challenge }, { "iat", fields.Iat }, { "product", fields.Product == null ? null : fields.Product.ToList() },
                { "version", fields.Version }, { "mac", mac },
            };
            return Json.Stringify(document);
        }

        /// <summary>The armored request and its one-line form (for a QR code).</summary>
        public static void EncodeRequest(ActivationRequestFields fields, string mac, out string request, out string compact)
        {
            var json = RequestJson(fields, mac);
            request = Armor("ACTIVATION REQUEST", json);
            compact = CompactRequestPrefix + Codec.Base64Url(Codec.Utf8.GetBytes(json));
        }

        /// <summary>A deactivation proof: a compact JWS (EdDSA) by the device's private key naming its activation, license and device.</summary>
        public static string SignDeactivationProof(DeviceKey key, string activation, string license, string device, long iat, string jti = null)
        {
            var claims = new Dictionary<string, object>
            {
                { "kind", DeactivationKind }, { "activation", activation }, { "license", license }, { "device", device }, { "iat", iat },
                { "jti", jti ?? Codec.RandomToken(16) },
            };
            var signingInput = Codec.Base64Url(Codec.Utf8.GetBytes("{\"alg\":\"EdDSA\"}")) + "." + Codec.Base64Url(Codec.Utf8.GetBytes(Json.Stringify(claims)));
            var signature = Sodium.Sign(Codec.Utf8.GetBytes(signingInput), Codec.FromBase64UrlStrict(key.Seed));
            return Armor("DEACTIVATION PROOF", signingInput + "." + Codec.Base64Url(signature));
        }

        static VerificationException Damaged(string message)
        {
            return new VerificationException(ErrorCodes.TokenInvalid, message);
        }
    }
}
