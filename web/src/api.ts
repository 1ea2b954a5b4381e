// The one way the console talks to the service: openapi-fetch over the
// types openapi-typescript generates from ../openapi/openapi.yaml
// (src/gen/api.d.ts). No request or response type is written by hand.
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './gen/api';

export type Schemas = components['schemas'];
export type Me = Schemas['Me'];
export type Token = Schemas['Token'];
export type TokenCreated = Schemas['TokenCreated'];
export type Member = Schemas['Member'];
export type Invitation = Schemas['Invitation'];
export type InvitationCreated = Schemas['InvitationCreated'];
export type TokenScope = Schemas['TokenScope'];
export type Project = Schemas['Project'];
export type Sensor = Schemas['Sensor'];
export type Blueprint = Schemas['Blueprint'];
export type BlueprintWrite = Schemas['BlueprintWrite'];
export type Reading = Schemas['Reading'];
export type Latest = Schemas['Latest'];
// JSON is what the console reads; the CSV export is fetched as a Blob.
export type ApiClient = Client<paths, 'application/json'>;

/** ApiError is an error answer of the API: its status, code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** toApiError turns an error body into an ApiError, keeping the API's message. */
export function toApiError(status: number, body: unknown): ApiError {
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    const b = body as { code?: unknown; message: string; details?: unknown };
    const details = b.details && typeof b.details === 'object' ? (b.details as Record<string, unknown>) : undefined;
    return new ApiError(status, typeof b.code === 'string' ? b.code : 'error', b.message, details);
  }
  // Not the API's error body: a proxy's page, say. Say what came back.
  return new ApiError(status, 'http', `the service answered HTTP ${status}`);
}

export interface ClientOptions {
  baseUrl: string;
  token: () => string | null;
  /** Called when the API refuses the token, so the console can ask for another. */
  onUnauthorized?: (err: ApiError) => void;
  fetch?: typeof globalThis.fetch;
}

export function newClient(opts: ClientOptions): ApiClient {
  const client = createClient<paths, 'application/json'>({ baseUrl: opts.baseUrl, fetch: opts.fetch });
  client.use({
    onRequest({ request }) {
      const token = opts.token();
      if (token) request.headers.set('Authorization', `Bearer ${token}`);
      return request;
    },
    async onResponse({ response }) {
      if (response.status === 401 && opts.onUnauthorized) {
        const body: unknown = await response.clone().json().catch(() => undefined);
        opts.onUnauthorized(toApiError(401, body));
      }
      return response;
    },
  });
  return client;
}

type Result<D> = { data?: D; error?: unknown; response: Response };

/**
 * send waits for an openapi-fetch call and returns its data with the
 * response (for its headers), or throws the API's error as an ApiError.
 * Pages show err.message as the API wrote it.
 */
export async function send<D>(call: Promise<Result<D>>): Promise<{ data: D; response: Response }> {
  let r: Result<D>;
  try {
    r = await call;
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'the service did not answer; check your connection and try again');
  }
  if (!r.response.ok) throw toApiError(r.response.status, r.error);
  return { data: r.data as D, response: r.response };
}

/** must is send's data alone. */
export async function must<D>(call: Promise<Result<D>>): Promise<D> {
  return (await send(call)).data;
}
export type AlarmLevel = Schemas['AlarmLevel'];
export type AlarmRule = Schemas['AlarmRule'];
export type AlarmRuleInput = Schemas['AlarmRuleInput'];
export type OverdueRule = Schemas['OverdueRule'];
export type Alarm = Schemas['Alarm'];
export type AlarmEvent = Schemas['AlarmEvent'];
export type Bucket = Schemas['Bucket'];
