// The API token lives in sessionStorage: it survives a reload but not the
// tab, and is never put in a URL, where it would reach history, logs and
// Referer headers.

const KEY = 'readings.token';

/** The part of the Web Storage API the token needs; tests pass a Map-backed one. */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

// The service's token shape (store.WellFormedToken): checked before any
// request so that a pasted typo gets a clear message, not a 401.
const TOKEN = /^rdg_[0-9A-Za-z]{43}$/;

export function looksLikeToken(s: string): boolean {
  return TOKEN.test(s);
}

export interface TokenStore {
  get(): string | null;
  set(token: string): void;
  clear(): void;
}

export function tokenStore(storage: KeyValueStore): TokenStore {
  return {
    get() {
      const t = storage.getItem(KEY);
      return t && looksLikeToken(t) ? t : null;
    },
    set(token: string) {
      const t = token.trim();
      if (!looksLikeToken(t)) throw new Error('a token is rdg_ followed by 43 letters and digits');
      storage.setItem(KEY, t);
    },
    clear() {
      storage.removeItem(KEY);
    },
  };
}
