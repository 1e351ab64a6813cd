/**
 * Saves a file the browser way: an object URL on a temporary link. The URL is released a moment later, not at
 * once (revoking it right after click() can cancel the download in some browsers).
 */
export function saveFile(contents: Blob, name: string) {
  const url = URL.createObjectURL(contents);
  const link = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
