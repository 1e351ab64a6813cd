using System.Reflection;
using System.Runtime.CompilerServices;

[assembly: AssemblyTitle("Keyforge")]
[assembly: AssemblyDescription("Keyforge licensing SDK for .NET")]
[assembly: AssemblyVersion("0.1.0.0")]
[assembly: AssemblyInformationalVersion("0.1.0")]
// The tests check the store layout of air-gapped activations against the conformance vectors.
[assembly: InternalsVisibleTo("Keyforge.Tests")]
