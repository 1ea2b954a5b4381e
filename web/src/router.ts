// Client-side routes under /console/. The service answers index.html for
// every path there, so a reload or a shared link lands on the right page.

export const BASE = '/console';

export type Params = Record<string, string>;

/** match returns the :params of pattern in path, or null when it does not fit. */
export function match(pattern: string, path: string): Params | null {
  const want = pattern.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return null;
  const params: Params = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w.startsWith(':')) {
      if (!/^[1-9][0-9]*$/.test(g)) return null; // every parameter is an id
      params[w.slice(1)] = g;
    } else if (w !== g) {
      return null;
    }
  }
  return params;
}

/** route is the console's path of a location's pathname: /console/org/1 → /org/1. */
export function route(pathname: string): string {
  if (pathname === BASE || pathname === BASE + '/') return '/';
  if (pathname.startsWith(BASE + '/')) return pathname.slice(BASE.length).replace(/\/+$/, '') || '/';
  return '/';
}

export function href(path: string): string {
  return BASE + (path === '/' ? '/' : path);
}
