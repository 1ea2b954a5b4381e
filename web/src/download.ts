// Downloads that need the Bearer header: a plain <a href> cannot carry it,
// so the console fetches the file and saves the Blob.

/** filenameFromDisposition reads a Content-Disposition's filename, else fallback. */
export function filenameFromDisposition(header: string | null | undefined, fallback: string): string {
  if (header) {
    const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
    if (star) {
      try {
        return safeName(decodeURIComponent(star[1]!.trim()), fallback);
      } catch {
        // A malformed escape: use the plain filename or the fallback.
      }
    }
    const plain = /filename\s*=\s*("(?:[^"\\]|\\.)*"|[^;]+)/.exec(header);
    if (plain) return safeName(plain[1]!.trim().replace(/^"(.*)"$/, '$1').replace(/\\(.)/g, '$1'), fallback);
  }
  return fallback;
}

// A name from a header must not point into directories.
function safeName(name: string, fallback: string): string {
  const base = name.split(/[/\\]/).pop() ?? '';
  return base && base !== '.' && base !== '..' ? base : fallback;
}

/**
 * rangeFilename puts a range into a file name, before its extension:
 * sensor-13.csv → sensor-13_20240501T0000Z_20240502T0000Z.csv.
 */
export function rangeFilename(name: string, from: Date, to: Date): string {
  const stamp = (d: Date) => d.toISOString().slice(0, 16).replace(/[-:]/g, '') + 'Z';
  const dot = name.lastIndexOf('.');
  const [base, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  return `${base}_${stamp(from)}_${stamp(to)}${ext}`;
}

/** saveBlob offers blob to the user as a file called name. */
export function saveBlob(blob: Blob, name: string, doc: Document = document): void {
  const url = URL.createObjectURL(blob);
  const a = doc.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noopener';
  doc.body.append(a);
  a.click();
  a.remove();
  // The download has started once click returns; the URL can go after that.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
