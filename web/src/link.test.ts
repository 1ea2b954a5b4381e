import { describe, expect, it } from 'vitest';
import { nextLink, parseLink } from './link';

describe('nextLink', () => {
  const cases: [string, string | null | undefined, string | null][] = [
    ['absent', null, null],
    ['empty', '', null],
    [
      'the service’s header',
      '</api/v1/org/1/proj/1/readings/12?datetime__gt=2024-05-01T12%3A10%3A00.000000Z&limit=2>; rel="next"',
      '/api/v1/org/1/proj/1/readings/12?datetime__gt=2024-05-01T12%3A10%3A00.000000Z&limit=2',
    ],
    ['unquoted rel', '</a?x=1>; rel=next', '/a?x=1'],
    ['other rels first', '</first>; rel="first", </n?a=1,2;b>; rel="next"', '/n?a=1,2;b'],
    ['several rels in one', '</n>; title="x"; rel="last next"', '/n'],
    ['case-insensitive', '</n>; REL="Next"', '/n'],
    ['only prev', '</p>; rel="prev"', null],
  ];
  for (const [name, header, want] of cases) {
    it(name, () => expect(nextLink(header)).toBe(want));
  }
});

describe('parseLink', () => {
  it('keeps the first URL of a rel', () => {
    const links = parseLink('</a>; rel="next", </b>; rel="next"');
    expect(links.get('next')).toBe('/a');
    expect(links.size).toBe(1);
  });
});
