import { describe, expect, it } from 'vitest';
import { formatColumns, parseColumns, profileNote } from './sensorupload';

describe('parseColumns', () => {
  it('reads column:input pairs, spaces and empty entries aside', () => {
    expect(parseColumns(' Freq_Avg:freq, Temp_Avg : 7 ,')).toEqual({ Freq_Avg: 'freq', Temp_Avg: '7' });
    expect(parseColumns('')).toEqual({});
  });
  it('refuses a pair without a column', () => {
    expect(() => parseColumns('Freq_Avg')).toThrow('"Freq_Avg" is not column:input');
    expect(() => parseColumns(':freq')).toThrow('is not column:input');
  });
  it('writes what it reads', () => {
    const columns = { Freq_Avg: 'freq', Temp_Avg: 'temp' };
    expect(parseColumns(formatColumns(columns))).toEqual(columns);
  });
});

describe('profileNote', () => {
  it('says what the profile does, or that there is none', () => {
    expect(profileNote({ sensor_id: 1, tz: 'UTC', columns: {} })).toBe('No import profile: files are read in UTC, columns by input key or ID.');
    expect(profileNote({ sensor_id: 1, tz: 'Europe/Zurich', dst: 'earlier', columns: { Freq_Avg: 'freq' }, updated_at: '2024-05-01T00:00:00.000Z' })).toBe(
      'Import profile: times in Europe/Zurich, the autumn fold’s earlier; columns Freq_Avg:freq.',
    );
  });
});
