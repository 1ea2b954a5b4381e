import { describe, expect, it } from 'vitest';
import { ApiError, must, newClient, send, toApiError } from './api';

const token = 'rdg_' + 'a'.repeat(43);

function fakeFetch(status: number, body: unknown, seen: Request[] = []): typeof fetch {
  return async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = input instanceof Request ? input : new Request(input, init);
    seen.push(req);
    return new Response(body === undefined ? null : JSON.stringify(body), {
      status,
      headers: { 'Content-Type': 'application/json' },
    });
  };
}

describe('newClient', () => {
  it('sends the token as a Bearer header, never in the URL', async () => {
    const seen: Request[] = [];
    const api = newClient({ baseUrl: 'http://svc', token: () => token, fetch: fakeFetch(200, { user: {}, memberships: [] }, seen) });
    await must(api.GET('/api/v1/me'));
    expect(seen[0]!.headers.get('Authorization')).toBe(`Bearer ${token}`);
    expect(seen[0]!.url).toBe('http://svc/api/v1/me');
  });

  it('sends no header when signed out', async () => {
    const seen: Request[] = [];
    const api = newClient({ baseUrl: 'http://svc', token: () => null, fetch: fakeFetch(200, {}, seen) });
    await must(api.GET('/api/v1/me'));
    expect(seen[0]!.headers.has('Authorization')).toBe(false);
  });

  it('throws the API’s message and tells about a refused token', async () => {
    const refused: ApiError[] = [];
    const api = newClient({
      baseUrl: 'http://svc',
      token: () => token,
      onUnauthorized: (e) => refused.push(e),
      fetch: fakeFetch(401, { code: 'unauthorized', message: 'the token is not valid' }),
    });
    await expect(must(api.GET('/api/v1/me'))).rejects.toMatchObject({ status: 401, code: 'unauthorized', message: 'the token is not valid' });
    expect(refused.map((e) => e.message)).toEqual(['the token is not valid']);
  });

  it('keeps the details of a validation error', async () => {
    const api = newClient({
      baseUrl: 'http://svc',
      token: () => token,
      fetch: fakeFetch(400, { code: 'invalid', message: 'body field "/name": too short', details: { field: '/name' } }),
    });
    const err = await must(api.POST('/api/v1/me/tokens', { body: { name: '' } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).details).toEqual({ field: '/name' });
  });

  it('says the service did not answer when fetch fails', async () => {
    const api = newClient({
      baseUrl: 'http://svc',
      token: () => token,
      fetch: async () => {
        throw new TypeError('Failed to fetch');
      },
    });
    await expect(must(api.GET('/api/v1/me'))).rejects.toMatchObject({ code: 'network' });
  });
});

describe('send', () => {
  it('returns the response with the data, for its Link header', async () => {
    const api = newClient({
      baseUrl: 'http://svc',
      token: () => token,
      fetch: async () => new Response('[]', { status: 200, headers: { 'Content-Type': 'application/json', Link: '</next>; rel="next"' } }),
    });
    const { data, response } = await send(api.GET('/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}', { params: { path: { org_id: 1, proj_id: 1, sensor_id: 1 } } }));
    expect(data).toEqual([]);
    expect(response.headers.get('Link')).toBe('</next>; rel="next"');
  });
});

describe('toApiError', () => {
  it('describes a body that is not the API’s', () => {
    expect(toApiError(502, '<html>').message).toBe('the service answered HTTP 502');
  });
});
