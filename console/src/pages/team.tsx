import type { Teammate } from "@feeds/contract";
import { useState } from "preact/hooks";
import { CopyButton, ErrorBox, Page, Pager, Table, usePages, When, type Reasons } from "../ui.js";
import { call, client, currentSession } from "../session.js";

/** The interface's reasons for a refused team change (section 2: role change, disable, enable). */
const TEAM_REASONS: Reasons = {
  FORBIDDEN: "Not allowed: only an owner may change teammates, only on their own tenant, and never their own row.",
  CONFLICT: "Refused: the tenant would be left with no active owner.",
  NOT_FOUND: "This teammate does not exist any more.",
};

/** The link an owner copies: the token travels in the fragment, so no server log or Referer sees it. */
export const inviteLink = (token: string) => `${location.origin}/console/invite#token=${encodeURIComponent(token)}`;

export function TeamPage() {
  const me = currentSession()?.operator;
  const owner = me?.role === "owner";
  const pages = usePages((next) => client.team({ next, limit: 25 }), []);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState("");
  const act = async (id: string, fn: () => Promise<Teammate>) => {
    setError(undefined);
    setBusy(id);
    try {
      await call(fn);
      pages.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy("");
    }
  };
  const rows = pages.data?.results ?? [];
  return (
    <Page title="Team">
      {owner ? <InviteForm onInvited={pages.reload} /> : null}
      <section>
        <h2 id="team-title">Teammates</h2>
        <ErrorBox error={error} reasons={TEAM_REASONS} />
        <ErrorBox error={pages.error} />
        <Table label="Teammates" head={owner ? ["Name", "Email", "Role", "Status", "Joined", "Actions"] : ["Name", "Email", "Role", "Status", "Joined"]} empty={!rows.length && !pages.loading}>
          {rows.map((m) => (
            <tr key={m.id}>
              <td>{m.name}</td>
              <td>{m.email}</td>
              <td>{m.role}</td>
              <td>
                <span class={`badge ${m.status}`}>{m.status}</span> {m.invite_pending ? <span class="badge pending">invite pending</span> : null}
              </td>
              <td>
                <When iso={m.created_at} />
              </td>
              {owner ? (
                <td class="actions">
                  {m.id === me?.id ? (
                    <span>(you)</span>
                  ) : (
                    <>
                      <button type="button" disabled={busy === m.id} onClick={() => void act(m.id, () => client.changeRole(m.id, m.role === "owner" ? "member" : "owner"))}>
                        {m.role === "owner" ? "Make member" : "Make owner"}
                      </button>
                      {m.status === "active" ? (
                        <button type="button" class="danger" disabled={busy === m.id} onClick={() => void act(m.id, () => client.disable(m.id))}>
                          Disable
                        </button>
                      ) : (
                        <button type="button" disabled={busy === m.id} onClick={() => void act(m.id, () => client.enable(m.id))}>
                          Re-enable
                        </button>
                      )}
                    </>
                  )}
                </td>
              ) : null}
            </tr>
          ))}
        </Table>
        <Pager pages={pages} />
      </section>
    </Page>
  );
}

function InviteForm({ onInvited }: { onInvited: () => void }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [role, setRole] = useState<"owner" | "member">("member");
  const [link, setLink] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setLink(undefined);
    try {
      const r = await call(() => client.invite({ email: email.trim(), name: name.trim(), role }));
      setLink(inviteLink(r.invite_token));
      setEmail("");
      setName("");
      onInvited();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="invite-title">
      <h2 id="invite-title">Invite a teammate</h2>
      <form class="inline-form" onSubmit={(e) => void submit(e)}>
        <div>
          <label for="invite-email">Email</label>
          <input id="invite-email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </div>
        <div>
          <label for="invite-name">Name</label>
          <input id="invite-name" type="text" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div>
          <label for="invite-role">Role</label>
          <select id="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value === "owner" ? "owner" : "member")}>
            <option value="member">member</option>
            <option value="owner">owner</option>
          </select>
        </div>
        <button type="submit" class="primary" disabled={busy}>
          Invite
        </button>
      </form>
      {link ? <InviteLink link={link} /> : null}
      <ErrorBox error={error} reasons={{ CONFLICT: "An operator with this email exists already.", FORBIDDEN: "Only an owner may invite." }} />
    </section>
  );
}

export function InviteLink({ link }: { link: string }) {
  return (
    <div class="secret" role="status">
      <p>Send this link to your teammate (it works once; it opens the console with the invite filled in):</p>
      <label for="invite-link">Invite link</label>
      <input id="invite-link" type="text" readOnly value={link} />
      <CopyButton text={link} label="Copy invite link" />
    </div>
  );
}
