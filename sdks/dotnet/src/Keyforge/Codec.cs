using System;
using System.Security.Cryptography;
using System.Text;

namespace Keyforge
{
    /// <summary>Encodings and the standard constructions the formats use (HMAC-SHA256 and SHA-256 from the BCL; HKDF per RFC 5869 over them).</summary>
    internal static class Codec
    {
        public static readonly UTF8Encoding Utf8 = new UTF8Encoding(false, true);

        public static string Base64Url(byte[] bytes)
        {
            return Convert.ToBase64String(bytes).TrimEnd('=').Replace('+', '-').Replace('/', '_');
        }

        /// <summary>base64url or standard base64, padded or not; null when it is neither.</summary>
        public static byte[] FromBase64(string text)
        {
            if (text == null) return null;
            foreach (var c in text)
            {
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '+' || c == '/' || c == '=')) return null;
            }
            var standard = text.TrimEnd('=').Replace('-', '+').Replace('_', '/');
            if (standard.Length % 4 == 1) return null;
            standard = standard.PadRight(standard.Length + (4 - standard.Length % 4) % 4, '=');
            try { return Convert.FromBase64String(standard); }
            catch (FormatException) { return null; }
        }

        /// <summary>Strict base64url without padding (what a JWS part must be).</summary>
        public static byte[] FromBase64UrlStrict(string text)
        {
            if (text == null) return null;
            foreach (var c in text)
            {
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return null;
            }
            return FromBase64(text);
        }

        public static string RandomToken(int bytes)
        {
            var buffer = new byte[bytes];
            using (var random = RandomNumberGenerator.Create()) random.GetBytes(buffer);
            return Base64Url(buffer);
        }

        public static byte[] RandomBytes(int count)
        {
            var buffer = new byte[count];
            using (var random = RandomNumberGenerator.Create()) random.GetBytes(buffer);
            return buffer;
        }

        public static string Sha256Hex(string text)
        {
            using (var sha = SHA256.Create())
            {
                var digest = sha.ComputeHash(Utf8.GetBytes(text));
                var builder = new StringBuilder(digest.Length * 2);
                foreach (var b in digest) builder.Append(b.ToString("x2"));
                return builder.ToString();
            }
        }

        public static byte[] HmacSha256(byte[] key, byte[] message)
        {
            using (var hmac = new HMACSHA256(key)) return hmac.ComputeHash(message);
        }

        /// <summary>HKDF-SHA256 (RFC 5869): extract with the salt (zeros when empty), expand with info.</summary>
        public static byte[] Hkdf(byte[] ikm, byte[] salt, byte[] info, int length)
        {
            var prk = HmacSha256(salt != null && salt.Length > 0 ? salt : new byte[32], ikm);
            var output = new byte[length];
            var previous = new byte[0];
            var written = 0;
            for (byte counter = 1; written < length; counter++)
            {
                var block = new byte[previous.Length + info.Length + 1];
                Buffer.BlockCopy(previous, 0, block, 0, previous.Length);
                Buffer.BlockCopy(info, 0, block, previous.Length, info.Length);
                block[block.Length - 1] = counter;
                previous = HmacSha256(prk, block);
                var take = Math.Min(previous.Length, length - written);
                Buffer.BlockCopy(previous, 0, output, written, take);
                written += take;
            }
            return output;
        }

        static readonly System.Text.RegularExpressions.Regex KeyforgeKeyPattern =
            new System.Text.RegularExpressions.Regex(@"^[A-Z][A-Z0-9]{1,11}(-[ABCDEFGHJKMNPQRSTVWXYZ23456789]{4}){4}\z", System.Text.RegularExpressions.RegexOptions.CultureInvariant);

        /// <summary>Whether a key (as <see cref="NormalizeKey"/> gives it) is in Keyforge's own format, rather than imported from another service.</summary>
        public static bool IsKeyforgeKey(string key) { return KeyforgeKeyPattern.IsMatch(key); }

        /// <summary>
        /// A license key as the server compares it: a Keyforge key with its white space removed, upper case; any other key
        /// (one imported from another licensing service) exactly as given, only the white space around it trimmed.
        /// </summary>
        public static string NormalizeKey(string licenseKey)
        {
            var builder = new StringBuilder(licenseKey.Length);
            foreach (var c in licenseKey) if (!char.IsWhiteSpace(c)) builder.Append(c);
            var keyforge = builder.ToString().ToUpperInvariant();
            return IsKeyforgeKey(keyforge) ? keyforge : licenseKey.Trim();
        }

        public static bool FixedTimeEquals(byte[] a, byte[] b)
        {
            if (a == null || b == null || a.Length != b.Length) return false;
            var diff = 0;
            for (var i = 0; i < a.Length; i++) diff |= a[i] ^ b[i];
            return diff == 0;
        }
    }
}
