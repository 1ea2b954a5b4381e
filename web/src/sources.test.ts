import { describe, expect, it } from 'vitest';
import { sourceText } from './sources';

describe('sourceText', () => {
  const sensors = [{ id: 7, name: 'BARO-1' }];
  it('says own reading without a link', () => {
    expect(sourceText(undefined, sensors)).toBe('own reading');
  });
  it('names the source sensor, its key and the staleness', () => {
    expect(sourceText({ sensor_id: 7, key: 'kpa', staleness: 600 }, sensors)).toBe('linked to BARO-1 kpa, staleness 600 s');
  });
  it('falls back to the id of a sensor not listed', () => {
    expect(sourceText({ sensor_id: 9, key: 'p', staleness: 3600 }, sensors)).toBe('linked to sensor 9 p, staleness 3600 s');
  });
});
