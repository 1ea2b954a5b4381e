// The console end to end: headless Chromium (Debian's, through
// playwright-core) against the real service that scripts/e2e.sh starts on
// a fresh database. The steps run in order and share one browser tab, as a
// person would use it. Screenshots go to $E2E_OUTPUT/console/ (CI keeps them).
//
// The steps live in steps/, run in the order imported here, and share the
// tab, the configuration and the helpers of session.mjs.
import './steps/setup.mjs';
import './steps/alarms.mjs';
import './steps/sensors.mjs';
import './steps/monitoring.mjs';
import './steps/quality.mjs';
import './steps/access.mjs';
