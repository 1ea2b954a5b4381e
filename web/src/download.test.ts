import { describe, expect, it } from 'vitest';
import { filenameFromDisposition, rangeFilename } from './download';

describe('filenameFromDisposition', () => {
  const cases: [string | null, string][] = [
    ['attachment; filename="sensor-13.csv"', 'sensor-13.csv'],
    ['attachment; filename=sensor-13.ndjson', 'sensor-13.ndjson'],
    ["attachment; filename=\"x.csv\"; filename*=UTF-8''capteur%20%C3%A9t%C3%A9.csv", 'capteur été.csv'],
    ['attachment; filename="../../etc/passwd"', 'passwd'],
    ['attachment; filename=".."', 'fallback.csv'],
    ['attachment', 'fallback.csv'],
    [null, 'fallback.csv'],
  ];
  for (const [header, want] of cases) {
    it(`${header} → ${want}`, () => expect(filenameFromDisposition(header, 'fallback.csv')).toBe(want));
  }
});

describe('rangeFilename', () => {
  it('puts the range before the extension', () => {
    const from = new Date('2024-05-01T00:00:00Z');
    const to = new Date('2024-05-02T06:30:00Z');
    expect(rangeFilename('sensor-13.csv', from, to)).toBe('sensor-13_20240501T0000Z_20240502T0630Z.csv');
    expect(rangeFilename('export', from, to)).toBe('export_20240501T0000Z_20240502T0630Z');
  });
});

describe('saveBlob', () => {
  it('clicks a download link to a blob: URL with the name', async () => {
    const { saveBlob } = await import('./download');
    const clicked: { href: string; download: string }[] = [];
    const anchor = {
      href: '',
      download: '',
      rel: '',
      click() {
        clicked.push({ href: this.href, download: this.download });
      },
      remove() {},
    };
    const doc = { createElement: () => anchor, body: { append() {} } } as unknown as Document;
    saveBlob(new Blob(['datetime,1\n']), 'sensor-1.csv', doc);
    expect(clicked).toHaveLength(1);
    expect(clicked[0]!.download).toBe('sensor-1.csv');
    expect(clicked[0]!.href).toMatch(/^blob:/);
  });
});
