#!/usr/bin/env bash
# Builds the .NET SDK, its tests and the conformance runner with Mono's C# compiler (Debian: mono-mcs, mono-runtime,
# libmono-system-net-http4.0-cil, libsodium23) into build/. A .NET SDK user builds Keyforge.csproj instead.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p build
refs="-r:System.Net.Http.dll -r:System.Core.dll"
mcs -nologo -target:library -out:build/Keyforge.dll $refs -warnaserror+ -nowarn:1591 src/Keyforge/*.cs
cp src/Keyforge/Keyforge.dll.config build/Keyforge.dll.config
mcs -nologo -target:exe -out:build/Keyforge.Tests.exe $refs -r:build/Keyforge.dll tests/Tests.cs tests/TestServer.cs
mcs -nologo -target:exe -out:build/ConformanceRunner.exe $refs -r:build/Keyforge.dll tests/ConformanceRunner.cs
