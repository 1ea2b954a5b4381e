// The ready-to-paste POST of readings shown on a sensor's setup page.
import type { Reading, Sensor } from './api';

export interface PostExample {
  url: string;
  json: string;
  curl: string;
  /** What posting it as it is does. */
  note: string;
}

/**
 * postExample builds a batch of one reading using the sensor's input IDs,
 * and the curl command that posts it. With the sensor's latest reading it
 * is that reading again, at its own datetime: posting it replaces the
 * reading with itself and changes nothing. Without one, each value is a
 * placeholder naming the input, which the API refuses until it is a
 * number: a made-up value (0 Hz is −1,080 kPa on a piezometer) posted now
 * would become the sensor's latest reading and could raise its alarms. The
 * token stays a shell variable: the console never prints a secret.
 */
export function postExample(origin: string, orgId: number, sensor: Sensor, latest?: Reading): PostExample {
  const url = `${origin}/api/v1/org/${orgId}/proj/${sensor.project_id}/readings/${sensor.id}`;
  let batch: { datetime: string; inputs: Record<string, number | string> }[];
  let note: string;
  if (latest) {
    batch = [{ datetime: latest.datetime, inputs: latest.inputs }];
    note = 'This is the sensor’s latest reading, at its own datetime: posting it as it is replaces that reading with itself and changes nothing. Change the datetime and the values to post a new reading.';
  } else {
    const inputs: Record<string, string> = {};
    if (sensor.inputs.length === 0) inputs['1'] = '<a number>'; // A sensor without a blueprint takes any input ID.
    for (const input of sensor.inputs) inputs[String(input.id)] = `<${input.key}${input.unit ? ` in ${input.unit}` : ''}>`;
    batch = [{ datetime: '<datetime, such as 2024-05-01T12:00:00Z>', inputs }];
    note = 'Replace each <…> with the logger’s datetime and values: the API refuses the placeholders, so that no made-up reading becomes the sensor’s latest.';
  }
  const json = JSON.stringify(batch, null, 2);
  const curl = [`curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\`, `  ${url} \\`, `  -d '${JSON.stringify(batch)}'`].join('\n');
  return { url, json, curl, note };
}
