// Organization: first the state of its projects' sensors, those needing
// attention on top; then its projects with their alarms, and for owners its
// members and invitations, and a link to its audit trail.
import { must, type Invitation, type InvitationCreated, type Member, type Project } from '../api';
import { allPages, id, orgName, orgRole, type Ctx } from '../app';
import { action, copyButton, field, h, section, table, type Child } from '../dom';
import { can, ROLES, type Role } from '../roles';
import { href } from '../router';
import { summarize, type ProjectSummary } from '../status';
import { formatDateTime } from '../time';
import { statusBoard } from './board';
import { levelBadge } from './sensoralarms';

export function orgPage(ctx: Ctx): HTMLElement {
  const org = id(ctx, 'org');
  const role = orgRole(ctx, org);
  ctx.setCrumbs([{ label: orgName(ctx, org), path: `/org/${org}` }]);

  // The projects, with what the board last read of their sensors.
  let projectList: Project[] = [];
  let summaries = new Map<number, ProjectSummary>();
  const projectsEl = h('div');
  const showProjects = () => projectsEl.replaceChildren(projectTable(ctx, org, role, projectList, summaries, () => projects.refresh()));
  const projects = section(async () => {
    projectList = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/projects', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } })));
    showProjects();
    return projectsEl;
  });
  const board = statusBoard(ctx, {
    org,
    show: 'attention',
    projectName: (id) => projectList.find((p) => p.id === id)?.name ?? `project ${id}`,
    onRead(list) {
      summaries = summarize(list);
      if (projectList.length) showProjects();
    },
  });
  const members = can(role, 'listMembers')
    ? section(async () => {
        const list = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/members', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } })));
        return memberTable(ctx, org, list, () => members?.refresh());
      })
    : undefined;
  const invitations = can(role, 'listInvitations')
    ? section(async () => {
        const list = await allPages((cursor) => must(ctx.api.GET('/api/v1/org/{org_id}/invitations', { params: { path: { org_id: org }, query: { limit: 1000, cursor } } })));
        return invitationTable(ctx, org, list, () => invitations?.refresh());
      })
    : undefined;
  const invited = h('div', { 'aria-live': 'polite' });

  return h(
    'div',
    null,
    h('h1', null, orgName(ctx, org)),
    h('p', { class: 'muted' }, `Organization ${org} · your role: ${role ?? 'none'}`, can(role, 'listOrgAudit') ? [' · ', h('a', { href: href(`/org/${org}/audit`) }, 'Audit trail')] : null),
    h('h2', null, 'Status'),
    h('p', { class: 'muted' }, 'The sensors of the active projects that need someone: at an alarm level, with an alarm nobody acknowledged, or silent past their overdue rule.'),
    board.el,
    h('h2', null, 'Projects'),
    can(role, 'createProject') ? createProjectForm(ctx, org, () => projects.refresh()) : null,
    projects.el,
    members ? [h('h2', null, 'Members'), addMemberForm(ctx, org, () => members.refresh()), members.el] : null,
    invitations
      ? [
          h('h2', null, 'Invitations'),
          h('p', { class: 'muted' }, 'Invite someone by email address and role: they get a one-time code that signs them in with their first token. No mail is sent: hand them the link.'),
          inviteForm(ctx, org, (inv) => {
            invited.replaceChildren(codeBox(inv));
            void invitations.refresh();
          }),
          invited,
          invitations.el,
        ]
      : null,
  );
}

function projectTable(ctx: Ctx, org: number, role: Role | undefined, list: Project[], summaries: Map<number, ProjectSummary>, changed: () => void): HTMLElement {
  if (list.length === 0) return h('p', { class: 'muted' }, 'No projects yet.');
  const out = h('div');
  const rows = list.map((p) => {
    const buttons: HTMLElement[] = [];
    if (can(role, 'projectAction')) {
      const act = p.state === 'active' ? 'archive' : 'restore';
      const b = h('button', { type: 'button', class: 'small' }, act === 'archive' ? 'Archive' : 'Restore');
      b.addEventListener('click', () =>
        void action(b, out, async () => {
          await must(ctx.api.POST('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path: { org_id: org, proj_id: p.id } }, body: { action: act } }));
          changed();
        }),
      );
      buttons.push(b);
    }
    if (can(role, 'deleteProject')) {
      const b = h('button', { type: 'button', class: 'small danger' }, 'Delete');
      b.addEventListener('click', () => {
        if (!confirm(`Delete the project “${p.name}” with all its sensors and readings? This cannot be undone.`)) return;
        void action(b, out, async () => {
          await must(ctx.api.DELETE('/api/v1/org/{org_id}/proj/{proj_id}', { params: { path: { org_id: org, proj_id: p.id } } }));
          changed();
        });
      });
      buttons.push(b);
    }
    return [
      h('a', { href: href(`/org/${org}/proj/${p.id}`) }, p.name),
      String(p.id),
      p.description,
      h('span', { class: `badge ${p.state}` }, p.state),
      p.state === 'active' ? alarmsOf(summaries.get(p.id)) : h('span', { class: 'muted' }, 'archived: not on the board'),
      formatDateTime(p.created_at),
      h('span', { class: 'actions' }, buttons),
    ];
  });
  return h('div', null, out, table(['Project', 'ID', 'Description', 'State', 'Alarms', 'Created', ''], rows, { 'aria-label': 'Projects' }));
}

/** alarmsOf says a project's alarms in a line: its worst level, how many, how many unacknowledged, how many overdue. */
function alarmsOf(s: ProjectSummary | undefined): Child {
  if (!s) return h('span', { class: 'muted' }, 'no sensors');
  if (!s.worst && !s.overdue && !s.unacknowledged) return h('span', { class: 'muted' }, `${s.sensors} ${s.sensors === 1 ? 'sensor' : 'sensors'}, all at rest`);
  return h(
    'span',
    { class: 'project-alarms', 'data-testid': 'project-alarms' },
    s.worst ? [levelBadge(s.worst.name, s.worst.colour), ' '] : null,
    `${s.alarms} ${s.alarms === 1 ? 'alarm' : 'alarms'} on ${s.inAlarm} of ${s.sensors} sensors`,
    s.unacknowledged ? [' · ', h('span', { class: 'badge unacked' }, `${s.unacknowledged} unacknowledged`)] : null,
    s.overdue ? ` · ${s.overdue} overdue` : null,
  );
}

function createProjectForm(ctx: Ctx, org: number, created: () => void): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: 200, placeholder: 'Dam monitoring' });
  const description = h('input', { name: 'description', maxlength: 2000 });
  const button = h('button', { type: 'submit' }, 'Create project');
  const out = h('div');
  const form = h('form', { class: 'inline', 'aria-label': 'New project' }, field('Name', name), field('Description', description), button, out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(button, out, async () => {
      await must(ctx.api.POST('/api/v1/org/{org_id}/projects', { params: { path: { org_id: org } }, body: { name: name.value.trim(), description: description.value } }));
      form.reset();
      created();
    });
  });
  return form;
}

function roleSelect(value: Role): HTMLSelectElement {
  return h('select', { 'aria-label': 'Role', value }, ROLES.map((r) => h('option', { value: r, selected: r === value }, r)));
}

function memberTable(ctx: Ctx, org: number, list: Member[], changed: () => void): HTMLElement {
  const out = h('div');
  const rows = list.map((m) => {
    const select = roleSelect(m.role);
    select.addEventListener('change', () =>
      void action(null, out, async () => {
        try {
          await must(ctx.api.PUT('/api/v1/org/{org_id}/members/{user_id}', { params: { path: { org_id: org, user_id: m.user_id } }, body: { role: select.value as Role } }));
        } finally {
          changed(); // show what the API kept, also when it refused
        }
        if (m.user_id === ctx.me.user.id) await ctx.reload(); // one's own role changed what the page offers
      }),
    );
    const remove = h('button', { type: 'button', class: 'small danger' }, 'Remove');
    remove.addEventListener('click', () => {
      if (!confirm(`Remove ${m.email} from the organization? Their user and tokens stay.`)) return;
      void action(remove, out, async () => {
        await must(ctx.api.DELETE('/api/v1/org/{org_id}/members/{user_id}', { params: { path: { org_id: org, user_id: m.user_id } } }));
        if (m.user_id === ctx.me.user.id) await ctx.reload();
        else changed();
      });
    });
    return [m.email, m.name, select, formatDateTime(m.created_at), remove];
  });
  return h('div', null, out, table(['Email', 'Name', 'Role', 'Joined', ''], rows, { 'aria-label': 'Members' }));
}

function addMemberForm(ctx: Ctx, org: number, added: () => void): HTMLElement {
  const email = h('input', { name: 'email', type: 'email', required: true, placeholder: 'grace@example.com' });
  const name = h('input', { name: 'name', maxlength: 200, placeholder: 'for a new user' });
  const role = roleSelect('viewer');
  const button = h('button', { type: 'submit' }, 'Add member');
  const out = h('div');
  const form = h('form', { class: 'inline', 'aria-label': 'New member' }, field('Email', email), field('Name', name), field('Role', role), button, out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(button, out, async () => {
      await must(
        ctx.api.POST('/api/v1/org/{org_id}/members', {
          params: { path: { org_id: org } },
          body: { email: email.value.trim(), name: name.value.trim() || undefined, role: role.value as Role },
        }),
      );
      form.reset();
      added();
    });
  });
  return h('div', null, form, h('p', { class: 'muted' }, 'A member added here gets a first token from an operator (', h('code', null, 'readings admin token create'), '); an invitation below lets them get one themselves.'));
}

function inviteForm(ctx: Ctx, org: number, created: (inv: InvitationCreated) => void): HTMLElement {
  const email = h('input', { name: 'email', type: 'email', required: true, placeholder: 'grace@example.com' });
  const role = roleSelect('viewer');
  const days = h('input', { name: 'expires_in_days', type: 'number', min: 1, max: 30, placeholder: '7' });
  const button = h('button', { type: 'submit' }, 'Invite');
  const out = h('div');
  const form = h('form', { class: 'inline', 'aria-label': 'New invitation' }, field('Email', email), field('Role', role), field('Expires in days', days), button, out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void action(button, out, async () => {
      const inv = await must(
        ctx.api.POST('/api/v1/org/{org_id}/invitations', {
          params: { path: { org_id: org } },
          body: { email: email.value.trim(), role: role.value as Role, expires_in_days: days.value ? Number(days.value) : undefined },
        }),
      );
      form.reset();
      created(inv);
    });
  });
  return form;
}

function codeBox(inv: InvitationCreated): HTMLElement {
  const link = location.origin + inv.accept_path;
  return h(
    'div',
    { class: 'secret card', role: 'status' },
    h('p', null, h('strong', null, `${inv.email} is invited as ${inv.role}.`), ' Send them this link now: it is not shown again.'),
    h('div', { class: 'secret-value' }, h('code', { 'data-testid': 'invitation-link' }, link), copyButton(link, 'Copy link', 'the link')),
    h('p', { class: 'muted' }, 'Or the code alone: ', h('code', { 'data-testid': 'invitation-code' }, inv.code), ` · expires ${formatDateTime(inv.expires_at)}`),
  );
}

function invitationTable(ctx: Ctx, org: number, list: Invitation[], changed: () => void): HTMLElement {
  if (list.length === 0) return h('p', { class: 'muted' }, 'No invitations.');
  const out = h('div');
  const rows = list.map((inv) => {
    const revoke = h('button', { type: 'button', class: 'small danger' }, 'Revoke');
    revoke.addEventListener('click', () => {
      if (!confirm(`Revoke the invitation of ${inv.email}? Its code stops working at once.`)) return;
      void action(revoke, out, async () => {
        await must(ctx.api.DELETE('/api/v1/org/{org_id}/invitations/{invitation_id}', { params: { path: { org_id: org, invitation_id: inv.id } } }));
        changed();
      });
    });
    return [inv.email, inv.role, h('span', { class: `badge ${inv.state}` }, inv.state), formatDateTime(inv.created_at), formatDateTime(inv.expires_at), inv.state === 'pending' ? revoke : ''];
  });
  return h('div', null, out, table(['Email', 'Role', 'State', 'Invited', 'Expires', ''], rows, { 'aria-label': 'Invitations' }));
}
