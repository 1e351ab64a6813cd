// The `upload` scenario of `pnpm bench` (only when named in BENCH_SCENARIOS): does a large release upload and a
// crowd of downloads slow down license validation? Validate alone on the real server, then validate again while
// a BENCH_UPLOAD_MB (default 512) artifact streams to the staff upload route (PUT /api/releases/{id}/artifacts,
// one after the other until the validate run ends) and BENCH_DOWNLOADS (default 50) clients download a published
// artifact in a loop (download link, then the file). Reported: validate under load / validate alone, and the
// upload's MB/s.
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';

export interface UploadSeed {
  key: string;
  adminKey: string;
  productId: string;
  productName: string;
}
export interface UploadResult {
  uploadMb: number;
  downloadClients: number;
  validateAloneRps: number;
  validateLoadedRps: number;
  ratio: number;
  uploads: number;
  uploadMbPerSecond: number;
  downloads: number;
  downloadErrors: number;
  downloadMbPerSecond: number;
}

const MiB = 1024 * 1024;

async function graphql(base: string, apiKey: string, query: string, variables: Record<string, unknown>) {
  const response = await fetch(`${base}/api/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ query, variables }) });
  const json = (await response.json()) as { data?: Record<string, { release: { id: string } }>; errors?: unknown };
  if (json.errors || !json.data) throw new Error(`GraphQL: ${JSON.stringify(json.errors)}`);
  return json.data;
}
const createRelease = async (base: string, seed: UploadSeed, version: string) =>
  (await graphql(base, seed.adminKey, 'mutation($input: CreateReleaseInput!) { createRelease(input: $input) { release { id } } }', { input: { productId: seed.productId, version } })).createRelease.release.id;

/** `bytes` of a repeated pattern, streamed in 1 MiB chunks (no buffer of the whole file in this process). */
function body(bytes: number): Readable {
  const chunk = Buffer.alloc(MiB, 0x5a);
  let left = bytes;
  return new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      const part = left >= MiB ? chunk : chunk.subarray(0, left);
      left -= part.length;
      this.push(part);
    },
  });
}

/** PUTs an artifact of `bytes` (Content-Length set, streamed); resolves with the seconds it took. */
function upload(base: string, apiKey: string, releaseId: string, filename: string, bytes: number): Promise<number> {
  const started = performance.now();
  const url = new URL(`${base}/api/releases/${releaseId}/artifacts?${new URLSearchParams({ filename, platform: 'linux', arch: 'x64' })}`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'PUT', headers: { 'x-api-key': apiKey, 'content-type': 'application/octet-stream', 'content-length': String(bytes) } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => (res.statusCode === 201 ? resolve((performance.now() - started) / 1000) : reject(new Error(`upload: ${res.statusCode} ${text.slice(0, 300)}`))));
    });
    req.on('error', reject);
    body(bytes).pipe(req);
  });
}

export async function runUploadScenario(options: {
  base: string;
  seed: UploadSeed;
  uploadMb: number;
  downloadClients: number;
  /** A timed validate run on the real server (warm-up included), as the other scenarios measure it. */
  validate: () => Promise<{ rps: number; errors: number }>;
}): Promise<UploadResult> {
  const { base, seed, uploadMb, downloadClients } = options;
  const tag = Date.now().toString(36);
  // A published release with a 16 MiB artifact for the downloads.
  const published = await createRelease(base, seed, `1.0.0-bench.${tag}`);
  await upload(base, seed.adminKey, published, 'bench-download.bin', 16 * MiB);
  await graphql(base, seed.adminKey, 'mutation($input: PublishReleaseInput!) { publishRelease(input: $input) { release { id } } }', { input: { id: published } });
  const listed = (await (await fetch(`${base}/api/v1/releases?${new URLSearchParams({ product: seed.productName, channel: 'dev' })}`, { headers: { authorization: `License ${seed.key}` } })).json()) as { releases: { id: string; artifacts: { id: string }[] }[] };
  const artifactId = listed.releases.find((release) => release.id === published)?.artifacts[0]?.id;
  if (!artifactId) throw new Error(`the published bench release is not listed: ${JSON.stringify(listed).slice(0, 300)}`);

  console.log(`\nupload: validate alone on keyforge…`);
  const alone = await options.validate();

  // The load: uploads back to back into a draft, and the download clients, until the validate run ends.
  let stop = false;
  const draft = await createRelease(base, seed, `2.0.0-bench.${tag}`);
  const uploadTimes: number[] = [];
  const uploading = (async () => {
    for (let i = 0; !stop; i++) uploadTimes.push(await upload(base, seed.adminKey, draft, `bench-${i}.bin`, uploadMb * MiB));
  })();
  let downloads = 0;
  let downloadErrors = 0;
  let downloadedBytes = 0;
  const downloadStarted = performance.now();
  const downloading = Array.from({ length: downloadClients }, async () => {
    while (!stop) {
      try {
        const link = (await (await fetch(`${base}/api/v1/artifacts/${artifactId}/download?${new URLSearchParams({ product: seed.productName })}`, { headers: { authorization: `License ${seed.key}` } })).json()) as { url: string };
        // PUBLIC_URL may name another host: the path and token on this server.
        const file = await fetch(`${base}${new URL(link.url).pathname}${new URL(link.url).search}`);
        if (!file.ok || !file.body) throw new Error(`download: ${file.status}`);
        const reader = file.body.getReader();
        for (let part = await reader.read(); !part.done; part = await reader.read()) downloadedBytes += part.value.length;
        downloads++;
      } catch {
        downloadErrors++;
      }
    }
  });
  console.log(`upload: validate while ${uploadMb} MiB uploads stream and ${downloadClients} clients download…`);
  const loaded = await options.validate();
  const downloadSeconds = (performance.now() - downloadStarted) / 1000;
  stop = true;
  await Promise.all(downloading);
  await uploading; // the upload in flight finishes (a cut upload would leave nothing to measure)

  const result: UploadResult = {
    uploadMb,
    downloadClients,
    validateAloneRps: Math.round(alone.rps),
    validateLoadedRps: Math.round(loaded.rps),
    ratio: Number((loaded.rps / alone.rps).toFixed(2)),
    uploads: uploadTimes.length,
    uploadMbPerSecond: Number(((uploadTimes.length * uploadMb) / uploadTimes.reduce((a, b) => a + b, 0)).toFixed(1)),
    downloads,
    downloadErrors,
    downloadMbPerSecond: Number((downloadedBytes / MiB / downloadSeconds).toFixed(1)),
  };
  console.log(
    `upload: validate ${result.validateLoadedRps} req/s under load vs ${result.validateAloneRps} alone: ratio ${result.ratio.toFixed(2)}; ` +
      `${result.uploads} upload(s) of ${uploadMb} MiB at ${result.uploadMbPerSecond} MiB/s; ${downloads} downloads (${downloadErrors} errors) at ${result.downloadMbPerSecond} MiB/s in total.`,
  );
  return result;
}
