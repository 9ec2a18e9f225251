import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import "./style.css";
import { currentSession, homeOf, logout, onSessionChange, refreshOperator } from "./session.js";
import { linkClick, navigate, onNavigate } from "./router.js";
import { resetLive } from "./live.js";
import { InvitePage, LoginPage } from "./pages/login.js";
import { TenantPage } from "./pages/tenant.js";
import { TeamPage } from "./pages/team.js";
import { InspectorPage } from "./pages/inspector.js";
import { WebhooksPage } from "./pages/webhooks.js";
import { QueuesPage, TenantsPage } from "./pages/staff.js";

// The operator console: a header with the navigation of the operator's role and Log out, and the
// page of the path. Signed out, every path but the invite page shows the login page.

const TENANT_NAV = [
  { path: "/console/tenant", label: "Tenant", page: TenantPage },
  { path: "/console/team", label: "Team", page: TeamPage },
  { path: "/console/inspector", label: "Inspector", page: InspectorPage },
  { path: "/console/webhooks", label: "Webhooks", page: WebhooksPage },
];
const STAFF_NAV = [
  { path: "/console/tenants", label: "Tenants", page: TenantsPage },
  { path: "/console/queues", label: "Queues", page: QueuesPage },
];

function useRerender(): void {
  const [, set] = useState(0);
  useEffect(() => {
    const bump = () => set((n) => n + 1);
    const offNav = onNavigate(bump);
    const offSession = onSessionChange(bump);
    return () => {
      offNav();
      offSession();
    };
  }, []);
}

function App() {
  useRerender();
  const path = location.pathname.replace(/\/+$/, "");
  const session = currentSession();
  // After a navigation (not on the first load), the new page's heading takes the focus, so a
  // screen reader announces it and Tab goes on from there.
  const shown = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (shown.current !== undefined && shown.current !== path) document.getElementById("page-title")?.focus({ preventScroll: true });
    shown.current = path;
    // Who the operator is now (an owner may have changed their role): failures other than 401
    // leave the session as it was.
    refreshOperator().catch(() => undefined);
  }, [path]);

  if (path === "/console/invite") return <Shell>{<InvitePage />}</Shell>;
  if (!session) return <Shell>{<LoginPage />}</Shell>;
  const nav = session.operator.role === "staff" ? STAFF_NAV : TENANT_NAV;
  const entry = nav.find((n) => n.path === path);
  if (!entry) {
    queueMicrotask(() => navigate(homeOf(session.operator), { replace: true }));
    return <Shell>{null}</Shell>;
  }
  const Current = entry.page;
  return (
    <Shell
      nav={
        <nav aria-label="Console">
          <ul>
            {nav.map((n) => (
              <li key={n.path}>
                <a href={n.path} aria-current={n.path === path ? "page" : undefined} onClick={(e) => linkClick(e, n.path)}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      }
      who={
        <div class="who">
          <span>
            {session.operator.name} <span class="badge">{session.operator.role}</span>
          </span>
          <button
            type="button"
            onClick={() => {
              resetLive();
              void logout();
            }}
          >
            Log out
          </button>
        </div>
      }
    >
      <Current key={path} />
    </Shell>
  );
}

function Shell({ nav, who, children }: { nav?: preact.ComponentChildren; who?: preact.ComponentChildren; children: preact.ComponentChildren }) {
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <span class="brand">Feeds console</span>
        {nav}
        {who}
      </header>
      <main id="main">{children}</main>
    </>
  );
}

// A session that ends takes its change signal with it (the next one starts from scratch).
onSessionChange(() => {
  if (!currentSession()) resetLive();
});
render(<App />, document.getElementById("app") as HTMLElement);
// First render done, handlers attached: what "first load to interactive" measures (docs/console.md).
performance.mark("console-interactive");
