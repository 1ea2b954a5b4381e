// The console's entry point: session, layout and routing.
import './style.css';
import { must, newClient, type Me } from './api';
import type { Crumb, Ctx, Page } from './app';
import { errorBox, h } from './dom';
import { acceptPage } from './pages/accept';
import { auditPage, orgAuditPage } from './pages/audit';
import { comparePage } from './pages/compare';
import { orgPage } from './pages/org';
import { profilePage } from './pages/profile';
import { projectPage } from './pages/project';
import { readingsPage } from './pages/readings';
import { sensorPage } from './pages/sensor';
import { signinPage } from './pages/signin';
import { BASE, href, match, route } from './router';
import { tokenStore } from './token';

const tokens = tokenStore(sessionStorage);
let me: Me | undefined;
let notice: string | undefined; // why the user was signed out, shown on the sign-in page

const api = newClient({
  baseUrl: location.origin,
  token: () => tokens.get(),
  onUnauthorized(err) {
    // A revoked or expired token: forget it and ask for another.
    tokens.clear();
    me = undefined;
    notice = err.message;
    navigate('/signin', true);
  },
});

const routes: [string, Page][] = [
  ['/', profilePage],
  ['/org/:org', orgPage],
  ['/org/:org/audit', orgAuditPage],
  ['/org/:org/proj/:proj', projectPage],
  ['/org/:org/proj/:proj/compare', comparePage],
  ['/org/:org/proj/:proj/audit', auditPage],
  ['/org/:org/proj/:proj/sensors/:sensor', sensorPage],
  ['/org/:org/proj/:proj/sensors/:sensor/readings', readingsPage],
];

const app = document.getElementById('app')!;
let rendering = 0;

function navigate(path: string, replace = false): void {
  if (replace) history.replaceState(null, '', href(path));
  else history.pushState(null, '', href(path));
  window.scrollTo(0, 0);
  void render();
}

function signOut(): void {
  tokens.clear();
  me = undefined;
  notice = 'Signed out.';
  navigate('/signin');
}

async function render(): Promise<void> {
  const mine = ++rendering;
  const path = route(location.pathname);
  if (path === '/signin') {
    const shown = notice;
    notice = undefined;
    app.replaceChildren(
      signinPage({
        notice: shown,
        async signIn(token) {
          tokens.set(token);
          me = await must(api.GET('/api/v1/me'));
          navigate('/', true);
        },
      }),
    );
    return;
  }
  if (path === '/accept') {
    app.replaceChildren(
      acceptPage({
        code: new URLSearchParams(location.search).get('code') ?? '',
        signedIn: tokens.get() !== null,
        async accept(code, name) {
          const accepted = await must(api.POST('/api/v1/invitations/accept', { body: { code, name: name || undefined } }));
          tokens.set(accepted.token.token);
          me = undefined;
          navigate(`/org/${accepted.membership.org_id}`, true); // and the code leaves the address bar
        },
        async acceptAs(code, token) {
          if (token) tokens.set(token); // a refused token signs the tab out again (onUnauthorized)
          const membership = await must(api.POST('/api/v1/me/invitations/accept', { body: { code } }));
          me = undefined;
          navigate(`/org/${membership.org_id}`, true);
        },
      }),
    );
    return;
  }
  if (!tokens.get()) {
    navigate('/signin', true);
    return;
  }
  if (!me) {
    app.replaceChildren(h('main', null, h('p', { class: 'muted' }, 'Loading…')));
    try {
      me = await must(api.GET('/api/v1/me'));
    } catch (err) {
      if (mine === rendering && tokens.get()) app.replaceChildren(h('main', null, errorBox(err)));
      return;
    }
    if (mine !== rendering) return;
  }
  const crumbs = h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumbs' });
  const main = h('main');
  app.replaceChildren(layout(me, crumbs), main);
  const found = routes.map(([pattern, page]) => [match(pattern, path), page] as const).find(([params]) => params);
  if (!found) {
    main.replaceChildren(h('h1', null, 'Not found'), h('p', null, 'There is no such page. ', h('a', { href: href('/') }, 'Back to your profile')));
    return;
  }
  const ctx: Ctx = {
    api,
    me,
    params: found[0]!,
    navigate,
    async reload() {
      me = undefined;
      await render();
    },
    setCrumbs(list: Crumb[]) {
      crumbs.replaceChildren(...list.flatMap((c, i) => [i > 0 ? ' › ' : '', c.path ? h('a', { href: href(c.path) }, c.label) : h('span', null, c.label)]));
    },
  };
  const content = found[1](ctx);
  main.replaceChildren();
  if (content instanceof Node) main.append(content);
}

function layout(me: Me, crumbs: HTMLElement): HTMLElement {
  return h(
    'header',
    { class: 'top' },
    h('a', { class: 'brand', href: href('/') }, 'Readings'),
    crumbs,
    h(
      'div',
      { class: 'who' },
      h('a', { href: href('/') }, me.user.email),
      h('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out'),
    ),
  );
}

// Links inside the console change the page without reloading it.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element).closest('a');
  if (!a || a.target || a.hasAttribute('download') || a.origin !== location.origin) return;
  if (a.pathname !== BASE && !a.pathname.startsWith(BASE + '/')) return;
  e.preventDefault();
  navigate(route(a.pathname) + a.search); // the query too: a comparison's sensors
});
window.addEventListener('popstate', () => void render());

void render();
