import { describe, expect, it } from 'vitest';
import { flagsText } from './readings';

describe('flagsText', () => {
  it('names the whole reading and each input flagged', () => {
    expect(flagsText({ id: '1-1', datetime: '2024-05-01T12:00:00.000Z', inputs: {}, flags: { '*': 'suspect', '101': 'rejected' } })).toBe('reading suspect, 101 rejected');
  });
  it('is empty without flags', () => {
    expect(flagsText({ id: '1-1', datetime: '2024-05-01T12:00:00.000Z', inputs: { '101': 1 } })).toBe('');
  });
});
