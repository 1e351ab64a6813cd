using System;
using System.Runtime.InteropServices;

namespace Keyforge
{
    /// <summary>
    /// Ed25519 and AES-256-GCM from libsodium (the native library NSec and libsodium-net use), so the SDK has no
    /// cryptography of its own. On Windows and macOS install the <c>libsodium</c> NuGet package (its native builds);
    /// on Debian/Ubuntu <c>apt-get install libsodium23</c> (Mono maps the name through Keyforge.dll.config).
    /// </summary>
    internal static class Sodium
    {
        const string Library = "libsodium";

        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)] static extern int sodium_init();
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)] static extern int crypto_sign_ed25519_verify_detached(byte[] sig, byte[] message, ulong messageLength, byte[] publicKey);
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)] static extern int crypto_sign_ed25519_detached(byte[] sig, out ulong sigLength, byte[] message, ulong messageLength, byte[] secretKey);
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)] static extern int crypto_sign_ed25519_seed_keypair(byte[] publicKey, byte[] secretKey, byte[] seed);
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)] static extern int crypto_aead_aes256gcm_is_available();
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        static extern int crypto_aead_aes256gcm_decrypt(byte[] message, out ulong messageLength, IntPtr nsec, byte[] ciphertext, ulong ciphertextLength, byte[] ad, ulong adLength, byte[] nonce, byte[] key);
        [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
        static extern int crypto_aead_aes256gcm_encrypt(byte[] ciphertext, out ulong ciphertextLength, byte[] message, ulong messageLength, byte[] ad, ulong adLength, IntPtr nsec, byte[] nonce, byte[] key);

        static readonly object initLock = new object();
        static bool ready;

        static void Init()
        {
            if (ready) return;
            lock (initLock)
            {
                if (ready) return;
                try
                {
                    if (sodium_init() < 0) throw new InvalidOperationException("libsodium failed to initialise.");
                }
                catch (DllNotFoundException error)
                {
                    throw new InvalidOperationException("libsodium is not installed: add the libsodium NuGet package (Windows, macOS) or the libsodium23 system package (Debian, Ubuntu).", error);
                }
                ready = true;
            }
        }

        public static bool Verify(byte[] signature, byte[] message, byte[] publicKey)
        {
            Init();
            if (signature == null || signature.Length != 64 || publicKey == null || publicKey.Length != 32) return false;
            return crypto_sign_ed25519_verify_detached(signature, message, (ulong)message.Length, publicKey) == 0;
        }

        /// <summary>The Ed25519 key pair of a 32-byte seed: (public key, libsodium's 64-byte secret key).</summary>
        public static void KeyPairFromSeed(byte[] seed, out byte[] publicKey, out byte[] secretKey)
        {
            Init();
            if (seed == null || seed.Length != 32) throw new ArgumentException("An Ed25519 seed is 32 bytes.");
            publicKey = new byte[32];
            secretKey = new byte[64];
            if (crypto_sign_ed25519_seed_keypair(publicKey, secretKey, seed) != 0) throw new InvalidOperationException("libsodium could not derive the key pair.");
        }

        public static byte[] Sign(byte[] message, byte[] seed)
        {
            byte[] publicKey, secretKey;
            KeyPairFromSeed(seed, out publicKey, out secretKey);
            try
            {
                var signature = new byte[64];
                ulong length;
                if (crypto_sign_ed25519_detached(signature, out length, message, (ulong)message.Length, secretKey) != 0) throw new InvalidOperationException("libsodium could not sign.");
                return signature;
            }
            finally
            {
                Array.Clear(secretKey, 0, secretKey.Length);
            }
        }

        static void RequireAes()
        {
            Init();
            if (crypto_aead_aes256gcm_is_available() != 1) throw new PlatformNotSupportedException("libsodium's AES-256-GCM needs a processor with AES-NI: encrypted license files cannot be opened here.");
        }

        /// <summary>AES-256-GCM: null when the tag does not verify (another key, or altered).</summary>
        public static byte[] AesGcmDecrypt(byte[] key, byte[] iv, byte[] ciphertextAndTag, byte[] associatedData)
        {
            RequireAes();
            if (key.Length != 32 || iv.Length != 12 || ciphertextAndTag.Length < 16) return null;
            var message = new byte[ciphertextAndTag.Length - 16];
            ulong length;
            if (crypto_aead_aes256gcm_decrypt(message, out length, IntPtr.Zero, ciphertextAndTag, (ulong)ciphertextAndTag.Length, associatedData, (ulong)associatedData.Length, iv, key) != 0) return null;
            return message;
        }

        public static byte[] AesGcmEncrypt(byte[] key, byte[] iv, byte[] plaintext, byte[] associatedData)
        {
            RequireAes();
            var ciphertext = new byte[plaintext.Length + 16];
            ulong length;
            if (crypto_aead_aes256gcm_encrypt(ciphertext, out length, plaintext, (ulong)plaintext.Length, associatedData, (ulong)associatedData.Length, IntPtr.Zero, iv, key) != 0) throw new InvalidOperationException("libsodium could not encrypt.");
            return ciphertext;
        }
    }
}
