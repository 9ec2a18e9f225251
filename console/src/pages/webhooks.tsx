import { useState } from "preact/hooks";
import { ErrorBox, Page, Pager, Table, usePages, When } from "../ui.js";
import { call, client } from "../session.js";
import { liveNote, useLive, useLiveReload } from "../live.js";

/** Webhooks: destinations (no secrets), the event log (live), Send test event. */
export function WebhooksPage() {
  const live = useLive();
  const destinations = usePages((next) => client.webhookDestinations({ next, limit: 25 }), []);
  const events = usePages((next) => client.webhookEvents({ next, limit: 25 }), []);
  useLiveReload(live, events.reload, events.page === 1);
  const [sent, setSent] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const test = async () => {
    setBusy(true);
    setError(undefined);
    setSent("");
    try {
      const r = await call(() => client.sendTestWebhook());
      setSent(r.published === 1 ? "A webhook.test event was sent to 1 destination." : `A webhook.test event was sent to ${r.published} destinations.`);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const dests = destinations.data?.results ?? [];
  const log = events.data?.results ?? [];
  return (
    <Page title="Webhooks">
      <section class="card">
        <h2 id="dest-title">Destinations</h2>
        <p>Your backend registers destinations with a server token (signing secrets are shown only to it).</p>
        <ErrorBox error={destinations.error} />
        <Table label="Destinations" head={["URL", "Events", "Created", "Id"]} empty={!dests.length && !destinations.loading}>
          {dests.map((d) => (
            <tr key={d.id}>
              <td>
                <code>{d.url}</code>
              </td>
              <td>{d.events ? d.events.join(", ") : "every event"}</td>
              <td>
                <When iso={d.created_at} />
              </td>
              <td>
                <code>{d.id}</code>
              </td>
            </tr>
          ))}
        </Table>
        <div role="group" aria-label="Destinations pages">
          <Pager pages={destinations} />
        </div>
        <button type="button" class="primary" disabled={busy} onClick={() => void test()}>
          Send test event
        </button>
        <span role="status">{sent}</span>
        <ErrorBox error={error} />
      </section>
      <section class="card">
        <h2 id="log-title">Event log</h2>
        <p class="live">
          {live.signal ? `${live.signal.counts.webhook_events} records · ` : ""}
          {liveNote(live)}
        </p>
        <ErrorBox error={events.error} />
        <Table label="Event log" head={["Created", "Type", "Status", "Attempts", "Destination", "Event id"]} empty={!log.length && !events.loading}>
          {log.map((r) => (
            <tr key={r.id}>
              <td>
                <When iso={r.created_at} />
              </td>
              <td>{r.event_type}</td>
              <td>
                <span class={`badge ${r.status}`}>{r.status}</span>
              </td>
              <td>{r.attempts}</td>
              <td>
                <code>{r.destination_id}</code>
              </td>
              <td>
                <code>{r.event_id}</code>
              </td>
            </tr>
          ))}
        </Table>
        <div role="group" aria-label="Event log pages">
          <Pager pages={events} />
        </div>
      </section>
    </Page>
  );
}
