import { describe, expect, it } from 'vitest';
import { href, match, route } from './router';

describe('match', () => {
  it('reads ids', () => expect(match('/org/:org/proj/:proj', '/org/1/proj/22')).toEqual({ org: '1', proj: '22' }));
  it('needs every segment', () => expect(match('/org/:org/proj/:proj', '/org/1/proj')).toBeNull());
  it('takes only ids as parameters', () => expect(match('/org/:org', '/org/abc')).toBeNull());
  it('matches literals', () => expect(match('/profile', '/profile')).toEqual({}));
});

describe('route', () => {
  const cases: [string, string][] = [
    ['/console', '/'],
    ['/console/', '/'],
    ['/console/org/1/', '/org/1'],
    ['/console/org/1/proj/2/sensors/3/readings', '/org/1/proj/2/sensors/3/readings'],
    ['/elsewhere', '/'],
  ];
  for (const [pathname, want] of cases) it(`${pathname} → ${want}`, () => expect(route(pathname)).toBe(want));
  it('href is the inverse', () => expect(href('/org/1')).toBe('/console/org/1'));
});
