// A client of the Sensor Readings Service in TypeScript, typed from the
// contract: `make ts-check` generates ./api.d.ts from openapi/openapi.yaml
// with openapi-typescript, then type-checks this file with tsc. A change of
// the spec that breaks a client like this one fails the check.
//
// It creates a sensor, posts a batch of readings and reads them back with
// their outputs, following the Link header from page to page.
import createClient, { type Middleware } from "openapi-fetch";

import type { components, paths } from "./api";

type ApiError = components["schemas"]["Error"];
type Reading = components["schemas"]["Reading"];
type ReadingBatch = components["schemas"]["ReadingBatch"];
type Sensor = components["schemas"]["Sensor"];

/** An answer other than 2xx, with the service's JSON error body. */
export class ReadingsError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly details: ApiError["details"],
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

/** A client that sends the token on every call. */
export function readingsClient(baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl });
  const bearer: Middleware = {
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${token}`);
      return request;
    },
  };
  client.use(bearer);
  return client;
}

/**
 * Returns the data of a 2xx answer, or throws its error: every non-2xx
 * answer of the service has the body {code, message, details?}, even where
 * a proxy answered instead, in which case the status is all there is.
 */
function ok<T>(result: { data?: T; error?: ApiError; response: Response }): T {
  const { data, error, response } = result;
  if (response.ok && data !== undefined) {
    return data;
  }
  if (error && typeof error === "object" && "code" in error) {
    throw new ReadingsError(response.status, error.code, error.details, error.message);
  }
  throw new ReadingsError(response.status, "http", undefined, response.statusText);
}

/** The datetime__gt of the next page, from `Link: <…>; rel="next"`. */
function nextAfter(response: Response): string | undefined {
  const link = response.headers.get("Link");
  const target = link?.match(/^<([^>]+)>;\s*rel="next"$/)?.[1];
  return target ? (new URL(target, "http://base.invalid").searchParams.get("datetime__gt") ?? undefined) : undefined;
}

export async function example(baseUrl: string, token: string, orgId: number, projectId: number): Promise<Reading[]> {
  const api = readingsClient(baseUrl, token);

  const sensor: Sensor = ok(
    await api.POST("/api/v1/org/{org_id}/proj/{proj_id}/sensors", {
      params: { path: { org_id: orgId, proj_id: projectId } },
      body: { name: "PZ-01", description: "North toe" },
    }),
  );
  const path = { org_id: orgId, proj_id: projectId, sensor_id: sensor.id };

  // Input IDs are the sensor's own; a sensor without a blueprint takes any.
  const batch: ReadingBatch = [
    { datetime: "2024-05-01T12:00:00Z", inputs: { "101": 2803.5, "102": 11.2 } },
    { datetime: "2024-05-01T14:10:00.250+02:00", inputs: { "101": 2801.0, "102": 11.3 } },
  ];
  try {
    ok(await api.POST("/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}", { params: { path }, body: batch }));
  } catch (err) {
    if (err instanceof ReadingsError && err.code === "conflict") {
      throw new Error(`project ${projectId} is archived; restore it before posting readings`, { cause: err });
    }
    if (err instanceof ReadingsError && err.code === "invalid") {
      // The message names the element and what is wrong; nothing was stored.
      console.error(`batch refused: ${err.message}`, err.details);
    }
    throw err;
  }

  const readings: Reading[] = [];
  const query = { datetime__gte: "2024-05-01T00:00:00Z", limit: 1000, outputs: true };
  for (let after: string | undefined; ; ) {
    const page = await api.GET("/api/v1/org/{org_id}/proj/{proj_id}/readings/{sensor_id}", {
      params: { path, query: after ? { ...query, datetime__gt: after } : query },
    });
    // The operation can also answer CSV (Accept: text/csv); this client
    // asks for the default, JSON.
    const body = ok(page);
    if (typeof body === "string") {
      throw new Error("expected a JSON page of readings, got CSV");
    }
    readings.push(...body);
    after = nextAfter(page.response);
    if (!after) {
      break;
    }
  }
  for (const r of readings) {
    const outputs = Object.entries(r.outputs ?? {}).map(([id, v]) => `${id}=${v}`);
    console.log(r.id, r.datetime, r.inputs, outputs.join(" ") || "(no outputs)");
  }
  return readings;
}
