import type { AdminTenant } from "@feeds/contract";
import { useEffect, useRef, useState } from "preact/hooks";
import { CopyButton, ErrorBox, Page, Pager, Table, useLoad, usePages, When } from "../ui.js";
import { call, client } from "../session.js";
import { RotateSecret } from "./tenant.js";
import { inviteLink, InviteLink } from "./team.js";

/** Platform staff: tenants (create, suspend/reactivate with confirmation, rotate, create an operator). */
export function TenantsPage() {
  const pages = usePages((next) => client.listTenants({ next, limit: 25 }), []);
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const rows = pages.data?.results ?? [];
  const chosen = rows.find((t) => t.id === selected);
  return (
    <Page title="Tenants">
      <CreateTenant onCreated={pages.reload} />
      <section aria-labelledby="tenants-title">
        <h2 id="tenants-title">All tenants</h2>
        <ErrorBox error={pages.error} />
        <Table label="Tenants" head={["Name", "Status", "API key", "Rate limit / min", "Created", "Actions"]} empty={!rows.length && !pages.loading}>
          {rows.map((t) => (
            <tr key={t.id} class={t.id === selected ? "selected" : ""}>
              <td>{t.name}</td>
              <td>
                <span class={`badge ${t.status}`}>{t.status}</span>
              </td>
              <td>
                <code>{t.api_key}</code>
              </td>
              <td>{t.rate_limit_per_minute ?? "default"}</td>
              <td>
                <When iso={t.created_at} />
              </td>
              <td>
                <button type="button" aria-expanded={t.id === selected} onClick={() => setSelected(t.id === selected ? undefined : t.id)}>
                  Manage
                </button>
              </td>
            </tr>
          ))}
        </Table>
        <Pager pages={pages} />
      </section>
      {chosen ? <ManageTenant tenant={chosen} key={chosen.id} onChanged={pages.reload} /> : null}
    </Page>
  );
}

function CreateTenant({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [created, setCreated] = useState<{ name: string; key: string; secret: string } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const r = await call(() => client.createTenant({ name: name.trim() }));
      setCreated({ name: r.tenant.name, key: r.tenant.api_key, secret: r.api_secret });
      setName("");
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="create-title">
      <h2 id="create-title">Create a tenant</h2>
      <form class="inline-form" onSubmit={(e) => void submit(e)}>
        <div>
          <label for="tenant-name">Tenant name</label>
          <input id="tenant-name" type="text" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <button type="submit" class="primary" disabled={busy}>
          Create tenant
        </button>
      </form>
      {created ? (
        <div class="secret" role="status">
          <p>
            Tenant <strong>{created.name}</strong> created, API key <code>{created.key}</code>.
          </p>
          <p class="warning">
            <strong>Shown once.</strong> Copy the API secret now: it cannot be shown again.
          </p>
          <code class="secret-value">{created.secret}</code> <CopyButton text={created.secret} label="Copy secret" />
        </div>
      ) : null}
      <ErrorBox error={error} />
    </section>
  );
}

function ManageTenant({ tenant, onChanged }: { tenant: AdminTenant; onChanged: () => void }) {
  const [confirm, setConfirm] = useState<"suspend" | "reactivate" | undefined>(undefined);
  // Opened from a row: the panel's heading takes the focus (and comes into view).
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  // A confirmation that opens takes the focus on its safe choice, Cancel.
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (confirm) cancel.current?.focus();
  }, [confirm]);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const change = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await call(() => (confirm === "suspend" ? client.suspendTenant(tenant.id) : client.reactivateTenant(tenant.id)));
      setConfirm(undefined);
      onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="manage-title">
      <h2 id="manage-title" tabIndex={-1} ref={heading}>
        Manage <span>{tenant.name}</span>
      </h2>
      <p>
        Tenant id <code>{tenant.id}</code>, status <span class={`badge ${tenant.status}`}>{tenant.status}</span>
      </p>
      {confirm ? (
        <div class="confirm" role="group" aria-label={`Confirm: ${confirm} ${tenant.name}`}>
          <p>
            {confirm === "suspend"
              ? `Suspend ${tenant.name}? Every request with its tokens is refused from the next request on, on every gateway.`
              : `Reactivate ${tenant.name}? Its tokens work again from the next request on.`}
          </p>
          <button type="button" class={confirm === "suspend" ? "danger" : "primary"} disabled={busy} onClick={() => void change()}>
            {confirm === "suspend" ? "Yes, suspend" : "Yes, reactivate"}
          </button>
          <button type="button" ref={cancel} onClick={() => setConfirm(undefined)}>
            Cancel
          </button>
        </div>
      ) : tenant.status === "active" ? (
        <button type="button" class="danger" onClick={() => setConfirm("suspend")}>
          Suspend
        </button>
      ) : (
        <button type="button" class="primary" onClick={() => setConfirm("reactivate")}>
          Reactivate
        </button>
      )}
      <ErrorBox error={error} />
      <RotateSecret tenantName={tenant.name} rotate={() => client.rotateTenantSecret(tenant.id)} />
      <CreateOperator tenantId={tenant.id} />
    </section>
  );
}

function CreateOperator({ tenantId }: { tenantId: string }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [role, setRole] = useState<"owner" | "member">("owner");
  const [link, setLink] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setLink(undefined);
    try {
      const r = await call(() => client.createTenantOperator(tenantId, { email: email.trim(), name: name.trim(), role }));
      setLink(inviteLink(r.invite_token));
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="create-op-title">
      <h3 id="create-op-title">Create an operator</h3>
      <form class="inline-form" onSubmit={(e) => void submit(e)}>
        <div>
          <label for="op-email">Email</label>
          <input id="op-email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </div>
        <div>
          <label for="op-name">Name</label>
          <input id="op-name" type="text" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div>
          <label for="op-role">Role</label>
          <select id="op-role" value={role} onChange={(e) => setRole(e.currentTarget.value === "member" ? "member" : "owner")}>
            <option value="owner">owner</option>
            <option value="member">member</option>
          </select>
        </div>
        <button type="submit">Create operator</button>
      </form>
      {link ? <InviteLink link={link} /> : null}
      <ErrorBox error={error} reasons={{ CONFLICT: "An operator with this email exists already." }} />
    </section>
  );
}

/** Queue health: pending and dead-letter depth per queue. */
export function QueuesPage() {
  const queues = useLoad(() => client.adminQueues(), []);
  const rows = queues.data?.queues ?? [];
  return (
    <Page title="Queues">
      <ErrorBox error={queues.error} />
      <Table label="Queue health" head={["Queue", "Pending", "Dead-letter depth"]} empty={!rows.length && !queues.loading}>
        {rows.map((q) => (
          <tr key={q.queue}>
            <td>{q.queue}</td>
            <td class="num">{q.pending}</td>
            <td class={`num ${q.dlq_depth > 0 ? "alarm" : ""}`}>{q.dlq_depth}</td>
          </tr>
        ))}
      </Table>
      <button type="button" onClick={queues.reload} disabled={queues.loading}>
        Refresh
      </button>
    </Page>
  );
}
