using System.Collections.Generic;
using System.Linq;

namespace Keyforge
{
    /// <summary>The offline usage queue of a license, kept in the store as one JSON record (oldest first).</summary>
    internal static class Usage
    {
        public const int MaxQueued = 1000;
        static readonly object queueLock = new object();

        public static List<QueuedUsage> List(ITokenStore store, string name)
        {
            lock (queueLock)
            {
                var parsed = Json.TryParseObject(store.Get(name) ?? "");
                object raw = null;
                if (parsed == null || !parsed.TryGetValue("records", out raw) || !(raw is List<object>)) return new List<QueuedUsage>();
                var result = new List<QueuedUsage>();
                foreach (var item in (List<object>)raw)
                {
                    var record = item as IDictionary<string, object>;
                    var quantity = record.Num("quantity");
                    if (record == null || record.Str("event") == null || quantity == null || record.Str("timestamp") == null || record.Str("idempotencyKey") == null) continue;
                    result.Add(new QueuedUsage { Event = record.Str("event"), Quantity = (long)quantity.Value, Timestamp = record.Str("timestamp"), IdempotencyKey = record.Str("idempotencyKey") });
                }
                return result;
            }
        }

        public static void Append(ITokenStore store, string name, QueuedUsage record)
        {
            lock (queueLock)
            {
                var records = List(store, name);
                if (records.Any(queued => queued.IdempotencyKey == record.IdempotencyKey)) return;
                if (records.Count >= MaxQueued)
                    throw new KeyforgeException("UsageQueueFull", MaxQueued + " usage records are already waiting for this license: send them (FlushUsageAsync) before recording more offline.");
                records.Add(record);
                Write(store, name, records);
            }
        }

        public static void Remove(ITokenStore store, string name, string idempotencyKey)
        {
            lock (queueLock) Write(store, name, List(store, name).Where(record => record.IdempotencyKey != idempotencyKey).ToList());
        }

        static void Write(ITokenStore store, string name, List<QueuedUsage> records)
        {
            if (records.Count == 0) { store.Delete(name); return; }
            var list = records.Select(record => (object)new Dictionary<string, object>
            {
                { "event", record.Event }, { "quantity", record.Quantity }, { "timestamp", record.Timestamp }, { "idempotencyKey", record.IdempotencyKey },
            }).ToList();
            store.Set(name, Json.Stringify(new Dictionary<string, object> { { "v", 1L }, { "records", list } }));
        }
    }
}
