// Where a sensor's input takes its values from.
import type { Sensor } from './api';

export type InputLink = NonNullable<Sensor['inputs'][number]['link']>;

/** sourceText says where an input's values come from: its own readings, or a link to another sensor of the project, named when listed. */
export function sourceText(link: InputLink | undefined, sensors: Pick<Sensor, 'id' | 'name'>[]): string {
  if (!link) return 'own reading';
  const source = sensors.find((x) => x.id === link.sensor_id);
  return `linked to ${source ? source.name : `sensor ${link.sensor_id}`} ${link.key}, staleness ${link.staleness} s`;
}
