// Which value of a constant the API computes with now.
import type { Sensor } from './api';

export interface InForce {
  value: number;
  /** The dated value's datetime, when a calibration is what applies. */
  since?: string;
}

/**
 * inForce is the value of constant key that a reading taken at `at` uses, as
 * the API decides it: the latest dated value at or before `at`, else the
 * undated value in force (the sensor's own, else the default). The
 * sensor's `constants` alone would miss a calibration dated in the past.
 */
export function inForce(s: Sensor, key: string, at: Date = new Date()): InForce | undefined {
  let best: { from: string; value: number; t: number } | undefined;
  for (const c of s.calibrations[key] ?? []) {
    const t = Date.parse(c.from);
    if (t <= at.getTime() && (!best || t >= best.t)) best = { ...c, t };
  }
  if (best) return { value: best.value, since: best.from };
  const v = s.constants[key];
  return v === undefined ? undefined : { value: v };
}
