import { useEffect, useState } from "preact/hooks";
import { ErrorBox, Page } from "../ui.js";
import { afterLogin, client, startSession } from "../session.js";

/** `POST /operator/login`: Email, Password, Log in. */
export function LoginPage() {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await client.login(email.trim(), password);
      startSession(s);
      afterLogin(s.operator);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <Page title="Log in">
      <form class="card narrow" onSubmit={(e) => void submit(e)}>
        <label for="login-email">Email</label>
        <input id="login-email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="login-password">Password</label>
        <input id="login-password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={busy}>
          Log in
        </button>
        <ErrorBox error={error} reasons={{ UNAUTHENTICATED: "Wrong email or password, or the account is disabled." }} />
      </form>
    </Page>
  );
}

/** The invite token from the URL fragment (`#token=…`); the fragment never reaches a server log or a Referer. */
function tokenFromFragment(): string {
  const hash = location.hash.startsWith("#") ? location.hash.slice(1) : location.hash;
  return new URLSearchParams(hash).get("token") ?? "";
}

/** `POST /operator/invite/accept`: the token from the link, New password, Accept invite. */
export function InvitePage() {
  const [token, setToken] = useState(tokenFromFragment);
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    // Read once, then out of the address bar and the history entry.
    if (location.hash) history.replaceState(null, "", location.pathname);
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await client.acceptInvite(token.trim(), password);
      startSession(s);
      afterLogin(s.operator);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <Page title="Accept your invite">
      <form class="card narrow" onSubmit={(e) => void submit(e)}>
        <p>Choose a password (12 characters or more) to join your team.</p>
        <label for="invite-token">Invite token</label>
        <input id="invite-token" type="text" autocomplete="off" spellcheck={false} required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        <label for="invite-password">New password</label>
        <input id="invite-password" type="password" autocomplete="new-password" minLength={12} required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={busy}>
          Accept invite
        </button>
        <ErrorBox error={error} reasons={{ UNAUTHENTICATED: "This invite link is not valid any more (used, expired or replaced): ask your owner for a new one." }} />
      </form>
    </Page>
  );
}
