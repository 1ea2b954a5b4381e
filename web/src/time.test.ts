import { describe, expect, it } from 'vitest';
import { customRange, filterBounds, formatAge, formatDateTime, formatDuration, fromLocalInput, presetRange, timeAxisLabels, toExactText, toLocalInput, toLocalText, zoneName } from './time';

describe('formatAge', () => {
  const now = new Date('2024-05-01T12:00:00Z');
  const cases: [string, string][] = [
    ['2024-05-01T12:00:00Z', 'just now'],
    ['2024-05-01T11:59:55Z', 'just now'],
    ['2024-05-01T11:59:30Z', '30 s ago'],
    ['2024-05-01T11:57:00Z', '3 min ago'],
    ['2024-05-01T11:00:01Z', '59 min ago'],
    ['2024-05-01T09:00:00Z', '3 h ago'],
    ['2024-04-28T12:00:00Z', '3 d ago'],
    ['2022-05-01T12:00:00Z', '2 y ago'],
    ['2024-05-01T12:00:30Z', 'just now'], // skew under a minute
    ['2024-05-01T12:05:00Z', 'in 5 min'],
  ];
  for (const [then, want] of cases) {
    it(`${then} → ${want}`, () => expect(formatAge(then, now)).toBe(want));
  }
  it('is empty for garbage', () => expect(formatAge('not a date', now)).toBe(''));
});

describe('presetRange', () => {
  const now = new Date('2024-05-01T12:00:00.400Z');
  it('ends at the next whole second, so this second’s readings are in', () => {
    const r = presetRange('24h', now);
    expect(r.to.toISOString()).toBe('2024-05-01T12:00:01.000Z');
    expect(r.from.toISOString()).toBe('2024-04-30T12:00:01.000Z');
  });
  it('spans 7 and 30 days', () => {
    expect(presetRange('7d', now).from.toISOString()).toBe('2024-04-24T12:00:01.000Z');
    expect(presetRange('30d', now).from.toISOString()).toBe('2024-04-01T12:00:01.000Z');
  });
});

describe('customRange', () => {
  it('reads local times', () => {
    const r = customRange('2024-05-01T00:00', '2024-05-02T00:00');
    expect(r.to.getTime() - r.from.getTime()).toBe(24 * 3600 * 1000 + dstShift(r.from, r.to));
    expect(r.from.getHours()).toBe(0);
  });
  it('refuses an empty or backwards range', () => {
    expect(() => customRange('', '2024-05-02T00:00')).toThrow('starts');
    expect(() => customRange('2024-05-01T00:00', 'x')).toThrow('ends');
    expect(() => customRange('2024-05-02T00:00', '2024-05-01T00:00')).toThrow('end after');
  });
});

describe('local inputs', () => {
  it('round-trip to the minute', () => {
    const d = fromLocalInput('2024-02-29T23:59');
    expect(toLocalInput(d)).toBe('2024-02-29T23:59');
  });
  it('take seconds and milliseconds', () => {
    const d = fromLocalInput('2024-05-01T10:20:30.5');
    expect([d.getSeconds(), d.getMilliseconds()]).toEqual([30, 500]);
  });
});

describe('filterBounds', () => {
  it('reads either bound, or both, as instants', () => {
    expect(filterBounds('', '', 'events')).toEqual({});
    expect(filterBounds('2024-05-01 12:00', '', 'events')).toEqual({ from: fromLocalInput('2024-05-01 12:00').toISOString() });
    expect(filterBounds('', '2024-05-02 00:00', 'events')).toEqual({ to: fromLocalInput('2024-05-02 00:00').toISOString() });
  });
  it('says which bound it cannot read, of what', () => {
    expect(() => filterBounds('yesterday', '', 'changes')).toThrow('write when the changes start as 2024-05-01 12:00');
    expect(() => filterBounds('', 'soon', 'events')).toThrow('write when the events end as');
  });
  it('refuses a range that ends before it starts', () => {
    expect(() => filterBounds('2024-05-02 00:00', '2024-05-01 00:00', 'events')).toThrow('end after it starts');
  });
});

describe('toExactText', () => {
  it('reads back as the same instant, to the millisecond', () => {
    for (const d of [new Date(2024, 4, 1, 12, 0, 5, 250), new Date(2024, 4, 1, 12, 0, 5), new Date(2024, 11, 31, 23, 59, 59, 999)]) {
      expect(fromLocalInput(toExactText(d)).getTime()).toBe(d.getTime());
    }
  });
  it('writes seconds always, milliseconds when there are some', () => {
    expect(toExactText(new Date(2024, 4, 1, 12, 0, 5))).toBe('2024-05-01 12:00:05');
    expect(toExactText(new Date(2024, 4, 1, 12, 0, 5, 40))).toBe('2024-05-01 12:00:05.040');
  });
});

describe('formatDateTime', () => {
  it('shows local time to the second', () => {
    expect(formatDateTime(fromLocalInput('2026-11-23T19:01:05'))).toBe('2026-11-23 19:01:05');
    expect(formatDateTime(fromLocalInput('2026-11-23T19:01:05').toISOString())).toBe('2026-11-23 19:01:05');
  });
  it('is empty without a datetime', () => expect(formatDateTime(undefined)).toBe(''));
});

describe('timeAxisLabels', () => {
  const secs = (local: string) => fromLocalInput(local).getTime() / 1000;
  it('shows the time, and the date on the first tick and where the day changes', () => {
    const ticks = ['2026-11-22T22:00', '2026-11-22T23:00', '2026-11-23T00:00', '2026-11-23T01:00'].map(secs);
    expect(timeAxisLabels(ticks, 3600)).toEqual(['22:00\n2026-11-22', '23:00', '00:00\n2026-11-23', '01:00']);
  });
  it('shows seconds when ticks are seconds apart', () => {
    expect(timeAxisLabels([secs('2026-11-23T10:00:05'), secs('2026-11-23T10:00:10')], 5)).toEqual(['10:00:05\n2026-11-23', '10:00:10']);
  });
  it('shows dates alone when ticks are days apart', () => {
    expect(timeAxisLabels([secs('2026-11-22T00:00'), secs('2026-11-23T00:00')], 86400)).toEqual(['2026-11-22', '2026-11-23']);
  });
});

describe('zoneName', () => {
  it('names the browser’s zone', () => expect(zoneName()).toBe(Intl.DateTimeFormat().resolvedOptions().timeZone));
});

// The machine's zone may change its clocks inside the range.
function dstShift(from: Date, to: Date): number {
  return (from.getTimezoneOffset() - to.getTimezoneOffset()) * 60 * 1000;
}

describe('formatDuration', () => {
  it('says a silence in its largest unit', () => {
    expect(formatDuration(7204.79 * 1000)).toBe('2 h');
    expect(formatDuration(40 * 86_400_000)).toBe('40 d');
  });
});

describe('datetimes typed as the console shows them', () => {
  it('reads "2024-05-01 12:00" as local time, as datetime-local’s form', () => {
    expect(fromLocalInput('2024-05-01 12:00').getTime()).toBe(fromLocalInput('2024-05-01T12:00').getTime());
    expect(toLocalText(fromLocalInput('2024-02-29 23:59'))).toBe('2024-02-29 23:59');
  });
  it('refuses the US form', () => expect(Number.isNaN(fromLocalInput('05/01/2024 12:00').getTime())).toBe(true));
});
