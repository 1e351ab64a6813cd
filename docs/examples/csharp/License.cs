// Activate this installation and validate the license key, in C# with HttpClient and a JSON parser of the
// framework: runs on Mono (mcs + mono) and on .NET Framework.
//
//   KEYFORGE_URL  the server's public URL, e.g. https://licenses.example.com
//   LICENSE_KEY   the key shown once when the license was created (never put it in a URL)
//   DEVICE_ID     optional: this machine's identifier (default: its machine name)
//   PRODUCT       optional: this application's product name; the server then refuses a key of another product
//                 (ProductMismatch) before it takes a seat
//
// Exit status: 0 licensed, 1 refused (the errorCode is printed), 2 the server could not be asked.
//
// Build and run on Mono:  mcs -r:System.Net.Http -r:System.Web.Extensions License.cs && mono License.exe
//
// The answer's offlineCacheToken is an Ed25519-signed JWT; the framework has no Ed25519, so to trust it offline
// verify it with a library (e.g. NSec or BouncyCastle) against /.well-known/jwks.json, as the Go and curl examples do.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Net.Http;
using System.Text;
using System.Web.Script.Serialization;

static class License
{
    static readonly HttpClient Http = new HttpClient { Timeout = TimeSpan.FromSeconds(10) };
    static readonly JavaScriptSerializer Json = new JavaScriptSerializer();

    // GET (body null) or POST JSON; an HTTP error (429: honour Retry-After; 5xx) or no answer exits with status 2.
    static Dictionary<string, object> Call(string url, object body)
    {
        try
        {
            var response = body == null
                ? Http.GetAsync(url).Result
                : Http.PostAsync(url, new StringContent(Json.Serialize(body), Encoding.UTF8, "application/json")).Result;
            var text = response.Content.ReadAsStringAsync().Result;
            if (!response.IsSuccessStatusCode)
            {
                Console.Error.WriteLine("{0}: HTTP {1} {2}", url, (int)response.StatusCode, text);
                Environment.Exit(2);
            }
            return Json.Deserialize<Dictionary<string, object>>(text);
        }
        catch (AggregateException error)
        {
            Console.Error.WriteLine("{0}: {1}", url, error.InnerException.Message);
            Environment.Exit(2);
            return null;
        }
    }

    static void Refuse(string step, object code, object message)
    {
        Console.WriteLine("{0}: refused {1}: {2}", step, code, message);
        Environment.Exit(1);
    }

    static int Main()
    {
        var baseUrl = (Environment.GetEnvironmentVariable("KEYFORGE_URL") ?? "").TrimEnd('/');
        var licenseKey = Environment.GetEnvironmentVariable("LICENSE_KEY");
        if (baseUrl == "" || string.IsNullOrEmpty(licenseKey))
        {
            Console.Error.WriteLine("set KEYFORGE_URL and LICENSE_KEY");
            return 2;
        }
        var api = baseUrl + "/api/v1";
        var deviceId = Environment.GetEnvironmentVariable("DEVICE_ID");
        if (string.IsNullOrEmpty(deviceId)) deviceId = Environment.MachineName;
        var product = Environment.GetEnvironmentVariable("PRODUCT");

        // 1. A fresh single-use nonce, then the activation: takes a seat, or reuses this device's seat. With "product", a
        // key of another product (not a bundle containing it) is refused with ProductMismatch and no seat is taken.
        var nonce = (string)Call(api + "/nonce", null)["nonce"];
        var activation = new Dictionary<string, object> { { "licenseKey", licenseKey }, { "nonce", nonce }, { "deviceId", deviceId } };
        if (!string.IsNullOrEmpty(product)) activation["product"] = product;
        var activated = Call(api + "/activate", activation);
        if (!(bool)activated["isValid"]) Refuse("activate", activated["errorCode"], activated["message"]);
        Console.WriteLine("activate: ok, {0}, {1} activation(s) left", activated["productName"], activated["remainingActivations"]);

        // 2. On every launch: validate. requireActivation refuses a device whose activation was removed
        // (DeviceNotActivated). HTTP 200 can carry a refusal: grant access only when isValid is true.
        var result = Call(api + "/validate", new Dictionary<string, object> { { "licenseKey", licenseKey }, { "deviceId", deviceId }, { "requireActivation", true } });
        if (!(bool)result["isValid"]) Refuse("validate", result["errorCode"], result["message"]);
        var productName = (string)result["productName"];
        var features = new List<string>();
        foreach (var feature in (ArrayList)result["features"]) features.Add((string)feature);
        Console.WriteLine("validate: ok, {0}, expires {1}, features [{2}]", productName, result["expiresAt"] ?? "never", string.Join(", ", features));

        // 3. Keep result["offlineCacheToken"] for launches without a network; verify its signature before trusting it.
        return 0;
    }
}
