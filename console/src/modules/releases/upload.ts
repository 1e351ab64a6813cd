import { session } from '../../lib/session';

export interface ArtifactUpload {
  releaseId: string;
  file: File;
  platform: string;
  arch: string;
  /** exe, dmg, AppImage, tar.gz…; empty: the server takes it from the file name's extension. */
  filetype?: string;
  /** The SHA-256 (hex) the build computed; the server refuses the upload when the bytes that arrived differ. */
  sha256?: string;
}

/** The server's error body (`{ error: { message, fields } }`), or a plain description of what went wrong. */
export class UploadError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly fields: Record<string, string> = {},
  ) {
    super(message);
  }
}

function send({ releaseId, file, platform, arch, filetype, sha256 }: ArtifactUpload, token: string | null, onProgress: (percent: number) => void) {
  return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const query = new URLSearchParams({ filename: file.name, platform, arch, ...(filetype && { filetype }), ...(sha256 && { sha256 }) });
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', `/api/releases/${encodeURIComponent(releaseId)}/artifacts?${query}`);
    if (token) xhr.setRequestHeader('authorization', `Bearer ${token}`);
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    xhr.withCredentials = true;
    xhr.responseType = 'json';
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(Math.floor((event.loaded / event.total) * 100));
    };
    xhr.onload = () => resolve({ status: xhr.status, body: xhr.response });
    xhr.onerror = () => reject(new UploadError('The upload did not reach the server (network error).', 0));
    xhr.onabort = () => reject(new UploadError('The upload was cancelled.', 0));
    xhr.send(file);
  });
}

/**
 * Streams a file to `PUT /api/releases/{releaseId}/artifacts` (docs/integrate/management-api.md) with the session's
 * bearer token. XMLHttpRequest rather than fetch: only it reports upload progress. An HTTP 401 (the access token
 * expired mid-way) refreshes the session and sends the file once more.
 */
export async function uploadArtifact(upload: ArtifactUpload, onProgress: (percent: number) => void): Promise<{ id: string; size: number }> {
  let answer = await send(upload, session.accessToken, onProgress);
  if (answer.status === 401 && (await session.refresh())) {
    onProgress(0);
    answer = await send(upload, session.accessToken, onProgress);
  }
  if (answer.status === 201) {
    onProgress(100);
    return answer.body as { id: string; size: number };
  }
  const error = (answer.body as { error?: { message?: string; fields?: Record<string, string> } } | null)?.error;
  throw new UploadError(error?.message ?? `The server answered HTTP ${answer.status}.`, answer.status, error?.fields);
}

/** "1.2 MB": a file size in bytes, decimal units as file managers show them. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}
