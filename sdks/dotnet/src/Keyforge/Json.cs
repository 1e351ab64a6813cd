using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Keyforge
{
    /// <summary>
    /// The JSON the SDK reads and writes: objects as <see cref="Dictionary{TKey,TValue}"/> (insertion order kept),
    /// arrays as <see cref="List{T}"/>, numbers as <see cref="double"/> (or <see cref="long"/> when written), strings,
    /// booleans and null. Written output is byte for byte what JavaScript's <c>JSON.stringify</c> writes, because the
    /// activation request's MAC is computed over it. No JSON package is required: netstandard2.0 has none built in.
    /// </summary>
    public static class Json
    {
        /// <summary>Nesting deeper than this is refused (a hostile document cannot exhaust the stack).</summary>
        public const int MaxDepth = 64;

        public static object Parse(string text)
        {
            if (text == null) throw new FormatException("No JSON.");
            var parser = new Parser(text);
            parser.SkipWhite();
            var value = parser.Value(0);
            parser.SkipWhite();
            if (parser.Position != text.Length) throw new FormatException("Text after the JSON value.");
            return value;
        }

        /// <summary>The JSON object in <paramref name="text"/>, or null when it is not valid JSON or not an object.</summary>
        public static Dictionary<string, object> TryParseObject(string text)
        {
            try { return Parse(text) as Dictionary<string, object>; }
            catch (FormatException) { return null; }
        }

        public static string Stringify(object value)
        {
            var builder = new StringBuilder();
            Write(builder, value);
            return builder.ToString();
        }

        static void Write(StringBuilder builder, object value)
        {
            if (value == null) { builder.Append("null"); return; }
            if (value is string) { WriteString(builder, (string)value); return; }
            if (value is bool) { builder.Append((bool)value ? "true" : "false"); return; }
            if (value is int || value is long) { builder.Append(Convert.ToInt64(value).ToString(CultureInfo.InvariantCulture)); return; }
            if (value is double)
            {
                var number = (double)value;
                if (double.IsNaN(number) || double.IsInfinity(number)) { builder.Append("null"); return; }
                if (Math.Floor(number) == number && Math.Abs(number) < 9007199254740992d) builder.Append(((long)number).ToString(CultureInfo.InvariantCulture));
                else builder.Append(number.ToString("R", CultureInfo.InvariantCulture));
                return;
            }
            var map = value as IDictionary<string, object>;
            if (map != null)
            {
                builder.Append('{');
                var first = true;
                foreach (var entry in map)
                {
                    if (!first) builder.Append(',');
                    first = false;
                    WriteString(builder, entry.Key);
                    builder.Append(':');
                    Write(builder, entry.Value);
                }
                builder.Append('}');
                return;
            }
            var list = value as System.Collections.IEnumerable;
            if (list != null)
            {
                builder.Append('[');
                var first = true;
                foreach (var item in list)
                {
                    if (!first) builder.Append(',');
                    first = false;
                    Write(builder, item);
                }
                builder.Append(']');
                return;
            }
            throw new ArgumentException("Cannot write a " + value.GetType().Name + " as JSON.");
        }

        /// <summary>As JSON.stringify: the short escapes, \u00XX for other control characters, lone surrogates escaped.</summary>
        static void WriteString(StringBuilder builder, string text)
        {
            builder.Append('"');
            for (var i = 0; i < text.Length; i++)
            {
                var c = text[i];
                switch (c)
                {
                    case '"': builder.Append("\\\""); break;
                    case '\\': builder.Append("\\\\"); break;
                    case '\b': builder.Append("\\b"); break;
                    case '\f': builder.Append("\\f"); break;
                    case '\n': builder.Append("\\n"); break;
                    case '\r': builder.Append("\\r"); break;
                    case '\t': builder.Append("\\t"); break;
                    default:
                        if (c < 0x20) builder.Append("\\u").Append(((int)c).ToString("x4"));
                        else if (char.IsHighSurrogate(c) && (i + 1 >= text.Length || !char.IsLowSurrogate(text[i + 1]))) builder.Append("\\u").Append(((int)c).ToString("x4"));
                        else if (char.IsLowSurrogate(c) && (i == 0 || !char.IsHighSurrogate(text[i - 1]))) builder.Append("\\u").Append(((int)c).ToString("x4"));
                        else builder.Append(c);
                        break;
                }
            }
            builder.Append('"');
        }

        sealed class Parser
        {
            readonly string text;
            public int Position;

            public Parser(string text) { this.text = text; }

            public void SkipWhite()
            {
                while (Position < text.Length && (text[Position] == ' ' || text[Position] == '\t' || text[Position] == '\n' || text[Position] == '\r')) Position++;
            }

            FormatException Error(string what) { return new FormatException(what + " at " + Position + "."); }

            public object Value(int depth)
            {
                if (depth > MaxDepth) throw Error("JSON nested too deeply");
                if (Position >= text.Length) throw Error("Unexpected end of JSON");
                var c = text[Position];
                switch (c)
                {
                    case '{': return Object(depth);
                    case '[': return Array(depth);
                    case '"': return String();
                    case 't': return Literal("true", true);
                    case 'f': return Literal("false", false);
                    case 'n': return Literal("null", null);
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return Number();
                        throw Error("Unexpected character");
                }
            }

            object Literal(string word, object value)
            {
                if (string.CompareOrdinal(text, Position, word, 0, word.Length) != 0) throw Error("Unexpected word");
                Position += word.Length;
                return value;
            }

            Dictionary<string, object> Object(int depth)
            {
                var result = new Dictionary<string, object>(StringComparer.Ordinal);
                Position++;
                SkipWhite();
                if (Position < text.Length && text[Position] == '}') { Position++; return result; }
                while (true)
                {
                    SkipWhite();
                    if (Position >= text.Length || text[Position] != '"') throw Error("Expected a property name");
                    var key = String();
                    SkipWhite();
                    if (Position >= text.Length || text[Position] != ':') throw Error("Expected ':'");
                    Position++;
                    SkipWhite();
                    result[key] = Value(depth + 1); // a repeated name keeps the last value, as JSON.parse does
                    SkipWhite();
                    if (Position >= text.Length) throw Error("Unexpected end of JSON");
                    if (text[Position] == ',') { Position++; continue; }
                    if (text[Position] == '}') { Position++; return result; }
                    throw Error("Expected ',' or '}'");
                }
            }

            List<object> Array(int depth)
            {
                var result = new List<object>();
                Position++;
                SkipWhite();
                if (Position < text.Length && text[Position] == ']') { Position++; return result; }
                while (true)
                {
                    SkipWhite();
                    result.Add(Value(depth + 1));
                    SkipWhite();
                    if (Position >= text.Length) throw Error("Unexpected end of JSON");
                    if (text[Position] == ',') { Position++; continue; }
                    if (text[Position] == ']') { Position++; return result; }
                    throw Error("Expected ',' or ']'");
                }
            }

            string String()
            {
                Position++;
                var builder = new StringBuilder();
                while (true)
                {
                    if (Position >= text.Length) throw Error("Unterminated string");
                    var c = text[Position++];
                    if (c == '"') return builder.ToString();
                    if (c < 0x20) throw Error("Control character in string");
                    if (c != '\\') { builder.Append(c); continue; }
                    if (Position >= text.Length) throw Error("Unterminated string");
                    var e = text[Position++];
                    switch (e)
                    {
                        case '"': builder.Append('"'); break;
                        case '\\': builder.Append('\\'); break;
                        case '/': builder.Append('/'); break;
                        case 'b': builder.Append('\b'); break;
                        case 'f': builder.Append('\f'); break;
                        case 'n': builder.Append('\n'); break;
                        case 'r': builder.Append('\r'); break;
                        case 't': builder.Append('\t'); break;
                        case 'u':
                            if (Position + 4 > text.Length) throw Error("Bad \\u escape");
                            int code;
                            if (!int.TryParse(text.Substring(Position, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code)) throw Error("Bad \\u escape");
                            builder.Append((char)code);
                            Position += 4;
                            break;
                        default: throw Error("Bad escape");
                    }
                }
            }

            double Number()
            {
                var start = Position;
                if (text[Position] == '-') Position++;
                if (Position >= text.Length) throw Error("Bad number");
                if (text[Position] == '0') Position++;
                else if (text[Position] >= '1' && text[Position] <= '9') { while (Position < text.Length && char.IsDigit(text[Position]) && text[Position] < 128) Position++; }
                else throw Error("Bad number");
                if (Position < text.Length && text[Position] == '.')
                {
                    Position++;
                    var digits = Position;
                    while (Position < text.Length && text[Position] >= '0' && text[Position] <= '9') Position++;
                    if (Position == digits) throw Error("Bad number");
                }
                if (Position < text.Length && (text[Position] == 'e' || text[Position] == 'E'))
                {
                    Position++;
                    if (Position < text.Length && (text[Position] == '+' || text[Position] == '-')) Position++;
                    var digits = Position;
                    while (Position < text.Length && text[Position] >= '0' && text[Position] <= '9') Position++;
                    if (Position == digits) throw Error("Bad number");
                }
                return double.Parse(text.Substring(start, Position - start), NumberStyles.Float, CultureInfo.InvariantCulture);
            }
        }
    }

    /// <summary>Typed reads of parsed JSON objects (a server answer's <c>Response</c>, an entitlement's <c>Claims</c>): null when absent or of another type.</summary>
    public static class JsonValue
    {
        public static string Str(this IDictionary<string, object> map, string key)
        {
            object value;
            return map != null && map.TryGetValue(key, out value) ? value as string : null;
        }

        public static double? Num(this IDictionary<string, object> map, string key)
        {
            object value;
            return map != null && map.TryGetValue(key, out value) && value is double ? (double?)value : null;
        }

        public static bool IsTrue(this IDictionary<string, object> map, string key)
        {
            object value;
            return map != null && map.TryGetValue(key, out value) && value is bool && (bool)value;
        }

        public static IDictionary<string, object> Obj(this IDictionary<string, object> map, string key)
        {
            object value;
            return map != null && map.TryGetValue(key, out value) ? value as IDictionary<string, object> : null;
        }

        /// <summary>The value as a list of strings, or null when it is not an array of strings only.</summary>
        public static List<string> Strings(this IDictionary<string, object> map, string key)
        {
            object value;
            if (map == null || !map.TryGetValue(key, out value)) return null;
            var list = value as List<object>;
            if (list == null) return null;
            var result = new List<string>();
            foreach (var item in list)
            {
                var text = item as string;
                if (text == null) return null;
                result.Add(text);
            }
            return result;
        }
    }
}
