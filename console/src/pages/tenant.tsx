import { useEffect, useRef, useState } from "preact/hooks";
import { CopyButton, ErrorBox, Page, useLoad, When } from "../ui.js";
import { call, client, currentSession } from "../session.js";

/** Tenant overview: name, api_key, status, allowed origins (owner edits), rotate secret (owner). */
export function TenantPage() {
  const owner = currentSession()?.operator.role === "owner";
  const tenant = useLoad(() => client.tenant(), []);
  const t = tenant.data;
  return (
    <Page title="Tenant">
      <ErrorBox error={tenant.error} />
      {t ? (
        <>
          <dl class="card facts">
            <dt>Name</dt>
            <dd>{t.name}</dd>
            <dt>Tenant id</dt>
            <dd>
              <code>{t.id}</code>
            </dd>
            <dt>API key</dt>
            <dd>
              <code>{t.api_key}</code> <CopyButton text={t.api_key} label="Copy API key" />
            </dd>
            <dt>Status</dt>
            <dd>
              <span class={`badge ${t.status}`}>{t.status}</span>
            </dd>
            <dt>Created</dt>
            <dd>
              <When iso={t.created_at} />
            </dd>
          </dl>
          <Origins origins={t.allowed_origins} owner={owner} onSaved={tenant.reload} />
          {owner ? <RotateSecret tenantName={t.name} /> : null}
        </>
      ) : tenant.loading ? (
        <p>Loading…</p>
      ) : null}
    </Page>
  );
}

function Origins({ origins, owner, onSaved }: { origins: string[]; owner: boolean; onSaved: () => void }) {
  const [text, setText] = useState(origins.join("\n"));
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState("");
  const save = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setSaved("");
    try {
      const list = text.split(/\s+/).filter(Boolean);
      await call(() => client.setOrigins(list));
      setSaved("Saved.");
      onSaved();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section class="card" aria-labelledby="origins-title">
      <h2 id="origins-title">Allowed browser origins</h2>
      <p>Pages on these origins may call the API with this tenant's user tokens (CORS).</p>
      {origins.length ? (
        <ul>
          {origins.map((o) => (
            <li key={o}>
              <code>{o}</code>
            </li>
          ))}
        </ul>
      ) : (
        <p>None: no browser page may call the API.</p>
      )}
      {owner ? (
        <form onSubmit={(e) => void save(e)}>
          <label for="origins">Allowed origins (one per line, e.g. https://app.example.com)</label>
          <textarea id="origins" rows={3} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          <button type="submit">Save origins</button>
          <span role="status">{saved}</span>
          <ErrorBox error={error} reasons={{ FORBIDDEN: "Only an owner may change the allowed origins." }} />
        </form>
      ) : null}
    </section>
  );
}

/** Rotate secret behind a typed confirmation (the tenant's name); the new secret shown once. */
export function RotateSecret({ tenantName, rotate = () => client.rotateSecret() }: { tenantName: string; rotate?: () => Promise<{ api_secret: string }> }) {
  const [confirming, setConfirming] = useState(false);
  const [typed, setTyped] = useState("");
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  // The confirmation's field takes the focus when it opens.
  const confirmField = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (confirming) confirmField.current?.focus();
  }, [confirming]);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (typed !== tenantName) return;
    setBusy(true);
    setError(undefined);
    try {
      const r = await call(rotate);
      setSecret(r.api_secret);
      setConfirming(false);
      setTyped("");
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="rotate-title">
      <h2 id="rotate-title">API secret</h2>
      <p>Rotating makes a new secret and stops the old one at once: every server token signed with it fails from then on.</p>
      {!confirming ? (
        <button type="button" class="danger" onClick={() => { setConfirming(true); setSecret(undefined); }}>
          Rotate secret
        </button>
      ) : (
        <form onSubmit={(e) => void submit(e)}>
          <label for="rotate-confirm">
            Type the tenant name (<strong>{tenantName}</strong>) to confirm
          </label>
          <input id="rotate-confirm" ref={confirmField} type="text" autocomplete="off" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          <button type="submit" class="danger" disabled={typed !== tenantName || busy}>
            Confirm rotation
          </button>
          <button type="button" onClick={() => { setConfirming(false); setTyped(""); }}>
            Cancel
          </button>
        </form>
      )}
      {secret ? (
        <div class="secret" role="status">
          <p class="warning">
            <strong>Shown once.</strong> Copy the new secret now and store it where your backend reads it: it cannot be shown again.
          </p>
          <code class="secret-value">{secret}</code> <CopyButton text={secret} label="Copy secret" />
        </div>
      ) : null}
      <ErrorBox error={error} reasons={{ FORBIDDEN: "Only an owner may rotate the secret." }} />
    </section>
  );
}
