using System;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Keyforge.Tests
{
    /// <summary>A local HTTP server whose answers a test scripts (HttpListener on a free loopback port).</summary>
    sealed class TestServer : IDisposable
    {
        readonly HttpListener listener = new HttpListener();
        readonly Func<HttpListenerContext, int, Task> handle;
        int requests;

        public string Url { get; private set; }
        public int Requests { get { return requests; } }

        public TestServer(Func<HttpListenerContext, int, Task> handle)
        {
            this.handle = handle;
            var probe = new TcpListener(IPAddress.Loopback, 0);
            probe.Start();
            var port = ((IPEndPoint)probe.LocalEndpoint).Port;
            probe.Stop();
            Url = "http://127.0.0.1:" + port;
            listener.Prefixes.Add(Url + "/");
            listener.Start();
            Task.Run(Loop);
        }

        async Task Loop()
        {
            while (listener.IsListening)
            {
                HttpListenerContext context;
                try { context = await listener.GetContextAsync().ConfigureAwait(false); }
                catch (Exception) { return; }
                var n = Interlocked.Increment(ref requests);
#pragma warning disable 4014 // each request runs on its own; the loop takes the next one
                Task.Run(async () =>
                {
                    try { await handle(context, n).ConfigureAwait(false); }
                    catch (Exception) { }
                    finally { try { context.Response.Close(); } catch (Exception) { } }
                });
#pragma warning restore 4014
            }
        }

        public static async Task Send(HttpListenerContext context, int status, string body, string contentType = "application/json")
        {
            context.Response.StatusCode = status;
            context.Response.ContentType = contentType;
            var bytes = Encoding.UTF8.GetBytes(body);
            context.Response.ContentLength64 = bytes.Length;
            await context.Response.OutputStream.WriteAsync(bytes, 0, bytes.Length).ConfigureAwait(false);
        }

        public void Dispose()
        {
            try { listener.Stop(); listener.Close(); } catch (Exception) { }
        }
    }
}
