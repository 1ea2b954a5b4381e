// The ready-to-paste POST of readings shown on a sensor's setup page.
import type { Sensor } from './api';

export interface PostExample {
  url: string;
  json: string;
  curl: string;
}

/**
 * postExample builds a batch of one reading using the sensor's input IDs,
 * and the curl command that posts it. The token stays a shell variable:
 * the console never prints a secret.
 */
export function postExample(origin: string, orgId: number, sensor: Sensor, now: Date): PostExample {
  const url = `${origin}/api/v1/org/${orgId}/proj/${sensor.project_id}/readings/${sensor.id}`;
  const inputs: Record<string, number> = {};
  if (sensor.inputs.length === 0) {
    inputs['1'] = 0; // A sensor without a blueprint takes any input ID.
  }
  for (const input of sensor.inputs) inputs[String(input.id)] = 0;
  const datetime = new Date(Math.floor(now.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const json = JSON.stringify([{ datetime, inputs }], null, 2);
  const curl = [
    `curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`,
    `  ${url} \\`,
    `  -d '${JSON.stringify([{ datetime, inputs }])}'`,
  ].join('\n');
  return { url, json, curl };
}
