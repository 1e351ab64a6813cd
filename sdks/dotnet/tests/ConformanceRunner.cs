using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Net.Http;
using System.Text;
using System.Threading.Tasks;

namespace Keyforge.Conformance
{
    /// <summary>
    /// The .NET SDK's runner of the conformance scenarios (sdks/conformance/README.md › "Scenario runner protocol"):
    /// reads the run's JSON on stdin, drives the SDK through the scenario's steps and prints {"steps":[…]} on one line.
    /// </summary>
    static class Runner
    {
        static IDictionary<string, object> input;
        static readonly List<object> steps = new List<object>();
        static readonly HttpClient control = new HttpClient();
        static long clockOffsetMs;

        static string In(string key) { return input.Str(key); }

        static T Run<T>(Task<T> task) { return task.GetAwaiter().GetResult(); }

        static void Run(Task task) { task.GetAwaiter().GetResult(); }

        /// <summary>Runs one step: its value, or the SDK's error code; anything else crashes the runner.</summary>
        static void Step(string name, Func<IDictionary<string, object>> body)
        {
            try
            {
                var value = body();
                steps.Add(new Dictionary<string, object> { { "name", name }, { "ok", true }, { "value", value } });
            }
            catch (KeyforgeException error)
            {
                steps.Add(new Dictionary<string, object> { { "name", name }, { "ok", false }, { "error", error.Code } });
            }
            catch (Exception error)
            {
                throw new InvalidOperationException("step " + name + " crashed (the steps before it: " + Json.Stringify(steps) + ")", error);
            }
        }

        static IDictionary<string, object> Control(string action, IDictionary<string, object> body = null)
        {
            var content = new StringContent(Json.Stringify(body ?? new Dictionary<string, object>()), Encoding.UTF8, "application/json");
            var response = control.PostAsync(In("control") + "/" + action, content).GetAwaiter().GetResult();
            var text = response.Content.ReadAsStringAsync().GetAwaiter().GetResult();
            var json = Json.TryParseObject(text);
            if ((int)response.StatusCode >= 400 || json == null) throw new InvalidOperationException("control " + action + " answered " + (int)response.StatusCode + ": " + text);
            return json;
        }

        static KeyforgeClient Client(string baseUrl, string storeDir)
        {
            return new KeyforgeClient(new KeyforgeClientOptions
            {
                BaseUrl = baseUrl, Products = new[] { In("product") }, Issuer = In("issuer"), Store = new FileStore(storeDir),
                Clock = () => DateTimeOffset.UtcNow.AddMilliseconds(clockOffsetMs),
            });
        }

        static Dictionary<string, object> Value(params object[] pairs)
        {
            var value = new Dictionary<string, object>();
            for (var i = 0; i < pairs.Length; i += 2) value[(string)pairs[i]] = pairs[i + 1];
            return value;
        }

        static object Num(int? value) { return value == null ? null : (object)(long)value.Value; }

        static int Main(string[] args)
        {
            input = Json.TryParseObject(Console.In.ReadToEnd());
            if (input == null) { Console.Error.WriteLine("stdin is not a JSON object"); return 2; }
            var scenario = args.Length > 0 ? args[0] : In("scenario");
            var key = In("licenseKey");
            using (var client = Client(In("server"), In("storeDir")))
            {
                switch (scenario)
                {
                    case "activate": Activate(client, key); break;
                    case "validate": Validate(client, key); break;
                    case "revoke-offline": RevokeOffline(client, key); break;
                    case "wrong-product": WrongProduct(client, key); break;
                    case "floating": Floating(client, key); break;
                    case "air-gapped": AirGapped(client, key); break;
                    case "metering": Metering(client, key); break;
                    case "releases": Releases(client, key); break;
                    case "watch": Watch(client, key); break;
                    default: Console.Error.WriteLine("unknown scenario " + scenario); return 2;
                }
            }
            Console.WriteLine(Json.Stringify(Value("steps", steps)));
            return 0;
        }

        static void Activate(KeyforgeClient client, string key)
        {
            Step("activate", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, In("deviceId"))).RemainingActivations)));
            Step("activateAgain", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, In("deviceId"))).RemainingActivations)));
            Step("activateOther", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, In("otherDeviceId"))).RemainingActivations)));
            Step("activateThird", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, In("thirdDeviceId"))).RemainingActivations)));
            Step("deactivateOther", () => Value("remainingActivations", Num(Run(client.DeactivateAsync(key, In("otherDeviceId"))).RemainingActivations)));
            Step("deactivateOtherAgain", () => Value("remainingActivations", Num(Run(client.DeactivateAsync(key, In("otherDeviceId"))).RemainingActivations)));
            Step("seats", () => Control("seats"));
        }

        static void Validate(KeyforgeClient client, string key)
        {
            Step("activate", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, In("deviceId"))).RemainingActivations)));
            Step("validate", () =>
            {
                var e = Run(client.ValidateAsync(new ValidateOptions { LicenseKey = key })).Entitlement;
                return Value("product", e.Product, "features", e.Features.Cast<object>().ToList(), "device", e.Device, "deviceActivated", e.DeviceActivated, "offlineGraceDays", e.OfflineGraceDays);
            });
            Step("validateDevice", () =>
            {
                var e = Run(client.ValidateAsync(new ValidateOptions { LicenseKey = key, DeviceId = In("deviceId"), RequireActivation = true })).Entitlement;
                return Value("device", e.Device, "deviceActivated", e.DeviceActivated);
            });
            Step("validateOtherDevice", () =>
            {
                var e = Run(client.ValidateAsync(new ValidateOptions { LicenseKey = key, DeviceId = In("otherDeviceId"), RequireActivation = true })).Entitlement;
                return Value("device", e.Device, "deviceActivated", e.DeviceActivated);
            });
            Step("validateUnknownKey", () => Value("product", Run(client.ValidateAsync(new ValidateOptions { LicenseKey = In("unknownKey") })).Entitlement.Product));
            using (var replay = Client(In("control") + "/replay", Path.Combine(In("storeDir"), "replay")))
            {
                Step("validateReplayFirst", () => Value("product", Run(replay.ValidateAsync(new ValidateOptions { LicenseKey = key })).Entitlement.Product));
                Step("validateReplayed", () => Value("product", Run(replay.ValidateAsync(new ValidateOptions { LicenseKey = key })).Entitlement.Product));
            }
        }

        static void RevokeOffline(KeyforgeClient client, string key)
        {
            var device = In("deviceId");
            Step("activate", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, device)).RemainingActivations)));
            Step("validate", () => Value("offlineGraceDays", Run(client.ValidateAsync(new ValidateOptions { LicenseKey = key, DeviceId = device, RequireActivation = true })).Entitlement.OfflineGraceDays));
            Control("revoke");
            Func<IDictionary<string, object>> offline = () => Value("source", Run(client.ValidateOfflineAsync(key, device, true)).Source);
            Step("validateOfflineRevoked", offline);
            AdvanceClock(172800);
            Step("validateOfflineExpired", offline);
            Step("validateOnline", () => Value("source", Run(client.ValidateAsync(new ValidateOptions { LicenseKey = key, DeviceId = device, RequireActivation = true })).Source));
            Step("validateOfflineAfterRejection", offline);
        }

        static void Watch(KeyforgeClient client, string key)
        {
            var device = In("deviceId");
            Step("activate", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, device)).RemainingActivations)));
            var changes = 0;
            // An hour between checks: every check here is one the scenario asks for.
            using (var watcher = client.Watch(new WatchOptions { LicenseKey = key, DeviceId = device, Interval = TimeSpan.FromHours(1), OnChange = (state, previous) => changes++ }))
            {
                Func<IDictionary<string, object>> found = () =>
                {
                    var state = Run(watcher.CheckAsync());
                    var features = state.Features.OrderBy(f => f, StringComparer.Ordinal).Cast<object>().ToList();
                    return Value("status", state.Status, "source", state.Source, "features", features, "code", state.Code, "changes", (long)changes);
                };
                Step("watchFirst", found);
                Control("setFeatures", Value("features", input["features"]));
                Step("watchFeaturesChanged", found);
                Step("watchUnchanged", found);
                Control("revoke");
                Step("watchRevoked", found);
                watcher.Stop();
                Step("watchStopped", () => Value("active", watcher.Active));
            }
        }

        static void AdvanceClock(long seconds)
        {
            var answer = Control("advanceClock", Value("seconds", seconds));
            var now = (long)answer.Num("now").Value * 1000;
            clockOffsetMs = now - DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
        }

        static void WrongProduct(KeyforgeClient client, string key)
        {
            var device = In("deviceId");
            Step("activate", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, device)).RemainingActivations)));
            Step("checkout", () => { using (var session = Run(client.CheckoutAsync(key, device))) return Value("floatingSeats", (long)session.FloatingSeats); });
            Step("validate", () => Value("product", Run(client.ValidateAsync(new ValidateOptions { LicenseKey = key })).Entitlement.Product));
            Step("seats", () => Control("seats"));
        }

        static void Floating(KeyforgeClient client, string key)
        {
            var sessions = new Dictionary<string, FloatingSession>();
            Func<string, string, Func<IDictionary<string, object>>> checkout = (name, device) => () =>
            {
                var session = Run(client.CheckoutAsync(key, In(device)));
                sessions[name] = session;
                return Value("floatingSeats", (long)session.FloatingSeats, "remainingFloatingSeats", (long)session.RemainingFloatingSeats);
            };
            Func<string, Func<IDictionary<string, object>>> checkin = name => () => Value("checkedIn", Run(sessions[name].CheckinAsync()).IsTrue("checkedIn"));
            Step("checkoutA", checkout("A", "deviceA"));
            Step("checkoutB", checkout("B", "deviceB"));
            Step("checkoutC", checkout("C", "deviceC"));
            Step("checkinA", checkin("A"));
            Step("checkoutCAgain", checkout("C", "deviceC"));
            Step("heartbeatC", () => { sessions["C"].HeartbeatAsync().GetAwaiter().GetResult(); return Value(); });
            Step("seats", () => Control("seats"));
            Step("checkinB", checkin("B"));
            Step("checkinC", checkin("C"));
            Step("seatsAfterCheckin", () => Control("seats"));
        }

        static void AirGapped(KeyforgeClient client, string key)
        {
            var device = In("deviceId");
            // An air-gapped application ships the server's keys: the client holds them before it goes offline.
            Run(client.FetchKeysAsync());
            ActivationRequest request = null;
            string response = null;
            OfflineDeactivation deactivation = null;
            Step("createRequest", () =>
            {
                request = client.CreateActivationRequest(key, device, In("deviceName"), In("version"));
                var fields = Json.TryParseObject(LicenseFiles.Unarmor("ACTIVATION REQUEST", request.Request));
                return Value("device", fields.Str("device"), "product", fields.Strings("product").Cast<object>().ToList());
            });
            if (request != null) response = Control("airGappedRespond", Value("request", request.Request)).Str("response");
            Func<IDictionary<string, object>> apply = () =>
            {
                var claims = Run(client.ApplyActivationResponseAsync(response)).Entitlement.Claims;
                return Value("device", claims.Str("device"), "deviceActivated", claims.IsTrue("deviceActivated"), "kind", claims.Str("kind"));
            };
            Step("applyResponse", apply);
            Step("applyResponseAgain", apply);
            Func<IDictionary<string, object>> offline = () => Value("source", Run(client.ValidateOfflineAsync(key, device, true)).Source);
            Step("validateOffline", offline);
            Step("seatsAfterActivation", () => Control("seats"));
            Step("deactivateOffline", () => { deactivation = client.DeactivateOffline(key); return Value("deviceId", deactivation.DeviceId); });
            Step("validateOfflineAfterDeactivation", offline);
            Func<IDictionary<string, object>> upload = () =>
            {
                var answer = Control("airGappedDeactivate", Value("proof", deactivation.Proof));
                if (!answer.IsTrue("deactivated")) throw new KeyforgeException(answer.Str("error"), "The server refused the proof.");
                return answer;
            };
            Step("uploadProof", upload);
            Step("uploadProofAgain", upload);
            Step("seatsAfterDeactivation", () => Control("seats"));
        }

        static void Metering(KeyforgeClient client, string key)
        {
            Func<long, string, Func<IDictionary<string, object>>> meter = (quantity, idempotencyKey) => () =>
            {
                var result = Run(client.MeterAsync(key, "exports", quantity, idempotencyKey));
                return Value("total", result.Total, "limit", result.Limit, "remaining", result.Remaining, "replayed", result.Replayed);
            };
            Step("meter", meter(3, In("idempotencyKey")));
            Step("meterReplayed", meter(3, In("idempotencyKey")));
            Step("meterSecond", meter(2, In("secondIdempotencyKey")));
            Step("meterOverQuota", meter(6, null));
        }

        static void Releases(KeyforgeClient client, string key)
        {
            string platform = In("platform"), arch = In("arch");
            Action<string, Dictionary<string, object>> publish = (version, extra) =>
            {
                var body = new Dictionary<string, object> { { "version", version }, { "platform", platform }, { "arch", arch }, { "filename", "acme-studio-" + version + "-" + platform + "-" + arch + ".tar.gz" }, { "content", In("artifactContent") } };
                foreach (var pair in extra) body[pair.Key] = pair.Value;
                Control("publishRelease", body);
            };
            Artifact artifact = null;
            Func<string, string, Func<IDictionary<string, object>>> check = (current, deviceId) => () =>
            {
                var answer = Run(client.CheckForUpdateAsync(key, current, platform: platform, arch: arch, deviceId: deviceId));
                if (artifact == null && answer.Release != null && answer.Release.Artifacts.Count > 0) artifact = answer.Release.Artifacts[0];
                return Value("available", answer.Available, "reason", answer.Reason, "version", answer.Release == null ? null : answer.Release.Version);
            };
            Func<IDictionary<string, object>> versions = () => Value("versions", Run(client.ListReleasesAsync(key, platform: platform, arch: arch)).Select(r => (object)r.Version).ToList());
            publish("1.1.0", new Dictionary<string, object> { { "requiresMaintenance", true } });
            Step("checkForUpdate", check(In("currentVersion"), null));
            Step("listReleases", versions);
            Step("activate", () => Value("remainingActivations", Num(Run(client.ActivateAsync(key, In("deviceId"))).RemainingActivations)));
            Step("download", () =>
            {
                var bytes = Run(client.DownloadArtifactAsync(key, artifact, In("deviceId")));
                using (var sha = System.Security.Cryptography.SHA256.Create())
                    return Value("filename", artifact.Filename, "size", (long)bytes.Length, "sha256", string.Concat(sha.ComputeHash(bytes).Select(b => b.ToString("x2"))));
            });
            Step("downloadEditedListing", () =>
            {
                var edited = new Artifact { Id = artifact.Id, Filename = artifact.Filename, Platform = artifact.Platform, Arch = artifact.Arch, Filetype = artifact.Filetype, Size = artifact.Size, Sha256 = new string('0', 64), Sha512 = artifact.Sha512, Signature = artifact.Signature };
                Run(client.DownloadArtifactAsync(key, edited));
                return Value();
            });
            // Into a file of a folder of its own: what is there afterwards (the file, and nothing else left behind).
            var downloads = Path.Combine(In("storeDir"), "downloads");
            Directory.CreateDirectory(downloads);
            Func<string> target = () => Path.Combine(downloads, artifact.Filename);
            Func<IDictionary<string, object>> onDisk = () =>
            {
                var bytes = File.ReadAllBytes(target());
                using (var sha = System.Security.Cryptography.SHA256.Create())
                    return Value("size", (long)bytes.Length, "sha256", string.Concat(sha.ComputeHash(bytes).Select(b => b.ToString("x2"))), "leftovers", (long)(Directory.GetFileSystemEntries(downloads).Length - 1));
            };
            Step("downloadToFile", () =>
            {
                Run(client.DownloadArtifactToFileAsync(key, artifact, target(), In("deviceId")));
                return onDisk();
            });
            Step("downloadToFileEdited", () =>
            {
                var edited = new Artifact { Id = artifact.Id, Filename = artifact.Filename, Platform = artifact.Platform, Arch = artifact.Arch, Filetype = artifact.Filetype, Size = artifact.Size, Sha256 = new string('0', 64), Sha512 = artifact.Sha512, Signature = artifact.Signature };
                Run(client.DownloadArtifactToFileAsync(key, edited, target(), In("deviceId")));
                return Value();
            });
            // Through the control server's tampering proxy: the file's last byte changed on the way.
            using (var tampered = Client(In("control") + "/tamper", Path.Combine(In("storeDir"), "tamper")))
            {
                Step("downloadToFileTampered", () =>
                {
                    Run(tampered.DownloadArtifactToFileAsync(key, artifact, target(), In("deviceId")));
                    return Value();
                });
            }
            Step("fileKept", onDisk);
            Step("checkOtherDevice", check(In("currentVersion"), In("otherDeviceId")));
            publish("1.2.0", new Dictionary<string, object> { { "requiredFeatures", new List<object> { "enterprise" } } });
            Step("checkFeatureMissing", check("1.1.0", null));
            Control("yankRelease", new Dictionary<string, object> { { "version", "1.2.0" } });
            Step("checkAfterYank", check("1.1.0", null));
            Control("lapseMaintenance");
            Step("checkMaintenanceExpired", check(In("currentVersion"), null));
            Step("listAfterLapse", versions);
        }
    }
}
