#!/usr/bin/env bash
# Builds the .NET SDK, its tests and the conformance runner with Mono's C# compiler into build/ (Debian packages:
# mono-mcs, mono-runtime, libmono-system-net-http4.0-cil, libsodium23). A .NET user builds Keyforge.csproj instead.
# Safe to run concurrently: each run compiles into a directory of its own, then renames the files into build/.
set -euo pipefail
cd "$(dirname "$0")"
out=$(mktemp -d "${TMPDIR:-/tmp}/keyforge-dotnet.XXXXXX")
trap 'rm -rf "$out"' EXIT
refs="-r:System.Net.Http.dll -r:System.Core.dll"
mcs -nologo -target:library -out:"$out/Keyforge.dll" $refs -warnaserror+ -nowarn:1591 src/Keyforge/*.cs
cp src/Keyforge/Keyforge.dll.config "$out/Keyforge.dll.config"
mcs -nologo -target:exe -out:"$out/Keyforge.Tests.exe" $refs -r:"$out/Keyforge.dll" -warnaserror+ tests/Tests.cs tests/TestServer.cs
mcs -nologo -target:exe -out:"$out/ConformanceRunner.exe" $refs -r:"$out/Keyforge.dll" -warnaserror+ tests/ConformanceRunner.cs
mkdir -p build
for file in "$out"/*; do cp "$file" "build/.$(basename "$file").$$" && mv -f "build/.$(basename "$file").$$" "build/$(basename "$file")"; done
