// What every page gets: the API client, the signed-in user, the route's
// parameters, and a way to go elsewhere.
import type { ApiClient, Me } from './api';
import type { Child } from './dom';
import type { Params } from './router';
import type { Role } from './roles';
import { roleIn } from './roles';

export interface Crumb {
  label: string;
  path?: string;
}

export interface Ctx {
  api: ApiClient;
  me: Me;
  params: Params;
  navigate(path: string): void;
  /** Re-reads /me (after a change of memberships) and renders the page again. */
  reload(): Promise<void>;
  setCrumbs(crumbs: Crumb[]): void;
}

export type Page = (ctx: Ctx) => Child;

/** id reads a numeric route parameter. The router only matches digits. */
export function id(ctx: Ctx, name: string): number {
  return Number(ctx.params[name]);
}

export function orgRole(ctx: Ctx, orgId: number): Role | undefined {
  return roleIn(ctx.me, orgId);
}

export function orgName(ctx: Ctx, orgId: number): string {
  return ctx.me.memberships.find((m) => m.org_id === orgId)?.org_name ?? `Organization ${orgId}`;
}

/**
 * shared is load, its answer reused by the calls made within ms of the one
 * that asked for it: the parts of a page that read one list at once (the
 * board and the alarms, a project's 500 sensors) read it once.
 */
export function shared<T>(load: () => Promise<T>, ms = 2000): () => Promise<T> {
  let last: { at: number; answer: Promise<T> } | undefined;
  return () => {
    if (!last || performance.now() - last.at > ms) last = { at: performance.now(), answer: load() };
    return last.answer;
  };
}

/** allPages reads every page of a cursor-paged list. */
export async function allPages<T>(page: (cursor: string | undefined) => Promise<{ items: T[]; next_cursor?: string }>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const p = await page(cursor);
    items.push(...p.items);
    cursor = p.next_cursor;
  } while (cursor);
  return items;
}
