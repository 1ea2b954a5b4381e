import { describe, expect, it } from 'vitest';
import { looksLikeToken, tokenStore, type KeyValueStore } from './token';

function memory(): KeyValueStore & { data: Map<string, string> } {
  const data = new Map<string, string>();
  return {
    data,
    getItem: (k) => data.get(k) ?? null,
    setItem: (k, v) => void data.set(k, v),
    removeItem: (k) => void data.delete(k),
  };
}

const good = 'rdg_' + 'a1B2c3D4e5'.repeat(4) + 'xyz';

describe('looksLikeToken', () => {
  it('takes the service’s shape', () => expect(looksLikeToken(good)).toBe(true));
  it('refuses others', () => {
    for (const t of ['', 'rdg_', good + 'x', good.replace('rdg_', 'rdx_'), good.slice(0, -1) + '-']) {
      expect(looksLikeToken(t)).toBe(false);
    }
  });
});

describe('tokenStore', () => {
  it('keeps, returns and forgets the token', () => {
    const storage = memory();
    const s = tokenStore(storage);
    expect(s.get()).toBeNull();
    s.set(`  ${good}\n`);
    expect(s.get()).toBe(good);
    expect([...storage.data.values()]).toEqual([good]);
    s.clear();
    expect(s.get()).toBeNull();
    expect(storage.data.size).toBe(0);
  });
  it('refuses to store a malformed token', () => {
    const storage = memory();
    expect(() => tokenStore(storage).set('hello')).toThrow('rdg_');
    expect(storage.data.size).toBe(0);
  });
  it('ignores a tampered stored value', () => {
    const storage = memory();
    storage.setItem('readings.token', 'garbage');
    expect(tokenStore(storage).get()).toBeNull();
  });
});
