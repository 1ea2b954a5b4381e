// Profile: the user, their memberships and their API tokens.
import { must, type Token, type TokenCreated, type TokenScope } from '../api';
import { allPages, type Ctx } from '../app';
import { action, copyButton, field, h, section, table } from '../dom';
import { ROLES, type Role } from '../roles';
import { href } from '../router';
import { formatAge, formatDateTime } from '../time';

export function profilePage(ctx: Ctx): HTMLElement {
  ctx.setCrumbs([{ label: 'Profile' }]);
  const { user, memberships } = ctx.me;

  const tokens = section(async () => {
    const list = await allPages((cursor) => must(ctx.api.GET('/api/v1/me/tokens', { params: { query: { limit: 1000, cursor } } })));
    return tokenTable(ctx, list, () => tokens.refresh());
  });
  const secret = h('div', { 'aria-live': 'polite' });

  return h(
    'div',
    null,
    h('h1', null, user.name || user.email),
    h('p', { class: 'muted' }, user.email, ` · user ${user.id} · since ${formatDateTime(user.created_at)}`),
    h('h2', null, 'Organizations'),
    memberships.length === 0
      ? h('p', { class: 'muted' }, 'You are not a member of any organization yet.')
      : table(
          ['Organization', 'Your role'],
          memberships.map((m) => [h('a', { href: href(`/org/${m.org_id}`) }, m.org_name), m.role]),
        ),
    h('h2', null, 'API tokens'),
    h(
      'p',
      { class: 'muted' },
      'A token acts as you in every organization you belong to, unless you limit it to one organization, project or some sensors, with a role no higher than yours. A device token may only post readings, to the sensors it is limited to. Its secret is shown once, when it is made.',
    ),
    createTokenForm(ctx, (t) => {
      secret.replaceChildren(secretBox(t));
      void tokens.refresh();
    }),
    secret,
    tokens.el,
  );
}

function createTokenForm(ctx: Ctx, created: (t: TokenCreated) => void): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: 100, placeholder: 'datalogger' });
  const days = h('input', { name: 'expires_in_days', type: 'number', min: 1, max: 3650, placeholder: 'never' });
  const org = h(
    'select',
    { name: 'org_id', 'aria-label': 'Organization' },
    h('option', { value: '' }, 'all of yours'),
    ctx.me.memberships.map((m) => h('option', { value: String(m.org_id) }, m.org_name)),
  );
  // The organization's projects and the project's sensors, by name and ID,
  // rather than IDs typed from memory.
  const project = h('select', { name: 'project_id', disabled: true }, h('option', { value: '' }, 'any'));
  const sensors = h('fieldset', { class: 'sensor-picks' }, h('legend', null, 'Sensors'), h('span', { class: 'muted' }, 'any (choose a project to pick some)'));
  const picked = () => [...sensors.querySelectorAll<HTMLInputElement>('input[type=checkbox]:checked')].map((b) => Number(b.value));
  org.addEventListener('change', () =>
    void action(null, out, async () => {
      project.replaceChildren(h('option', { value: '' }, 'any'));
      project.disabled = !org.value;
      sensors.replaceChildren(h('legend', null, 'Sensors'), h('span', { class: 'muted' }, 'any (choose a project to pick some)'));
      if (!org.value) return;
      const path = { org_id: Number(org.value) };
      const list = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/projects', { params: { path, query: { limit: 1000, cursor } } })));
      project.append(...list.map((p) => h('option', { value: String(p.id) }, `${p.name} (${p.id})`)));
    }),
  );
  project.addEventListener('change', () =>
    void action(null, out, async () => {
      sensors.replaceChildren(h('legend', null, 'Sensors'));
      if (!project.value) {
        sensors.append(h('span', { class: 'muted' }, 'any (choose a project to pick some)'));
        return;
      }
      const path = { org_id: Number(org.value), proj_id: Number(project.value) };
      const list = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/proj/{proj_id}/sensors', { params: { path, query: { limit: 1000, cursor } } })));
      if (list.length === 0) sensors.append(h('span', { class: 'muted' }, 'the project has no sensors'));
      sensors.append(...list.map((x) => h('label', { class: 'pick' }, h('input', { type: 'checkbox', name: 'sensor_ids', value: String(x.id) }), `${x.name} (${x.id})`)));
    }),
  );
  const role = h('select', { name: 'role', 'aria-label': 'Role' }, h('option', { value: '' }, 'yours'), ROLES.map((r) => h('option', { value: r }, r)));
  const device = h('input', { name: 'device', type: 'checkbox' });
  const button = h('button', { type: 'submit' }, 'Create token');
  const out = h('div');
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'New token' },
    field('Name', name),
    field('Expires in days', days),
    field('Organization', org),
    field('Project', project),
    sensors,
    field('Role', role),
    field('Device (post readings only)', device),
    button,
    out,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(button, out, async () => {
      const t = await must(
        ctx.api.POST('/api/v1/me/tokens', {
          body: { name: name.value.trim(), expires_in_days: days.value ? Number(days.value) : undefined, scope: scopeOf(org.value, project.value, picked(), role.value, device.checked) },
        }),
      );
      form.reset();
      org.dispatchEvent(new Event('change')); // the project and sensors follow the reset organization
      created(t);
    });
  });
  return form;
}

/** scopeOf reads the form's scope fields; the API says what does not fit together. */
function scopeOf(org: string, project: string, ids: number[], role: string, device: boolean): TokenScope | undefined {
  if (!org) {
    if (project || ids.length || role || device) throw new Error('Choose the organization the token is limited to.');
    return undefined;
  }
  return {
    org_id: Number(org),
    project_id: project ? Number(project) : undefined,
    sensor_ids: ids.length ? ids : undefined,
    role: role ? (role as Role) : undefined,
    device: device || undefined,
  };
}

/** scopeText says what a token is limited to. */
export function scopeText(s: TokenScope | undefined): string {
  if (!s) return 'all';
  const parts = [`org ${s.org_id}`];
  if (s.project_id) parts.push(`project ${s.project_id}`);
  if (s.sensor_ids) parts.push(`sensors ${s.sensor_ids.join(', ')}`);
  if (s.device) parts.push('device');
  else if (s.role) parts.push(`≤ ${s.role}`);
  return parts.join(' · ');
}

function secretBox(t: TokenCreated): HTMLElement {
  return h(
    'div',
    { class: 'secret card', role: 'status' },
    h('p', null, h('strong', null, `Token “${t.name}” created.`), ' Copy its secret now: it is not shown again.'),
    h('div', { class: 'secret-value' }, h('code', { 'data-testid': 'new-token' }, t.token), copyButton(t.token, 'Copy', 'the token')),
    t.expires_at ? h('p', { class: 'muted' }, `Expires ${formatDateTime(t.expires_at)}.`) : null,
  );
}

function tokenTable(ctx: Ctx, list: Token[], changed: () => void): HTMLElement {
  if (list.length === 0) return h('p', { class: 'muted' }, 'No tokens.');
  const out = h('div');
  const now = new Date();
  return h(
    'div',
    null,
    out,
    table(
      ['Name', 'Prefix', 'Scope', 'Created', 'Last used', 'Expires', 'State', ''],
      list.map((t) => {
        const expired = t.expires_at !== undefined && new Date(t.expires_at) <= now;
        const state = t.revoked_at ? `revoked ${formatDateTime(t.revoked_at)}` : expired ? 'expired' : 'active';
        const mine = t.id === ctx.me.token_id;
        const revoke = h('button', { type: 'button', class: 'danger small' }, 'Revoke');
        revoke.addEventListener('click', () => {
          const warning = mine
            ? `Revoke “${t.name}” (${t.prefix}…), the token this console is signed in with? You will be signed out.`
            : `Revoke the token “${t.name}” (${t.prefix}…)? Anything using it stops working at once.`;
          if (!confirm(warning)) return;
          void action(revoke, out, async () => {
            await must(ctx.api.DELETE('/api/v1/me/tokens/{token_id}', { params: { path: { token_id: t.id } } }));
            changed();
          });
        });
        return [
          mine ? h('span', null, t.name, ' ', h('span', { class: 'muted' }, '(this session)')) : t.name,
          h('code', null, t.prefix + '…'),
          scopeText(t.scope),
          formatDateTime(t.created_at),
          t.last_used_at ? formatAge(t.last_used_at, now) : 'never',
          t.expires_at ? formatDateTime(t.expires_at) : 'never',
          state,
          t.revoked_at ? '' : revoke,
        ];
      }),
      { 'aria-label': 'Tokens' },
    ),
  );
}
