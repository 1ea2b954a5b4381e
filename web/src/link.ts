// RFC 8288 Link headers, as listReadings sends them:
//   </api/v1/org/1/proj/1/readings/12?datetime__gt=…&limit=1000>; rel="next"

/** parseLink maps each rel of a Link header to its URL (the first one wins). */
export function parseLink(header: string | null | undefined): Map<string, string> {
  const links = new Map<string, string>();
  if (!header) return links;
  // A URL may hold commas and semicolons, so split on the <…> parts, not on ','.
  const re = /<([^>]*)>((?:\s*;\s*[^;,]+)*)/g;
  for (const m of header.matchAll(re)) {
    const url = m[1] ?? '';
    for (const param of (m[2] ?? '').split(';')) {
      const eq = param.indexOf('=');
      if (eq < 0) continue;
      if (param.slice(0, eq).trim().toLowerCase() !== 'rel') continue;
      const value = param.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      // rel may list several relation types: rel="next last".
      for (const rel of value.toLowerCase().split(/\s+/)) {
        if (rel && !links.has(rel)) links.set(rel, url);
      }
    }
  }
  return links;
}

/** nextLink is the rel="next" URL of a Link header, or null on the last page. */
export function nextLink(header: string | null | undefined): string | null {
  return parseLink(header).get('next') ?? null;
}
