import { parseFeedRef } from "@feeds/client";
import { useState } from "preact/hooks";
import { ErrorBox, Page, Pager, Table, useLoad, usePages, When } from "../ui.js";
import { client } from "../session.js";
import { liveNote, useLive, useLiveReload } from "../live.js";

const PAGE = 25;

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** One side of a feed's edges (its follows or its followers): the other feed and since when, paged. */
function EdgeTable(props: { title: string; column: string; pages: ReturnType<typeof usePages>; edges: { feed: string; at: string }[]; hideError: boolean }) {
  const { title, column, pages, edges } = props;
  return (
    <div>
      <h3>{title}</h3>
      {props.hideError ? null : <ErrorBox error={pages.error} />}
      <Table label={title} head={[column, "Since"]} empty={!edges.length}>
        {edges.map((e) => (
          <tr key={e.feed}>
            <td>
              <code>{e.feed}</code>
            </td>
            <td>
              <When iso={e.at} />
            </td>
          </tr>
        ))}
      </Table>
      <div role="group" aria-label={`${title} pages`}>
        <Pager pages={pages} />
      </div>
    </div>
  );
}

/** Inspector: a feed (page, promoted and objects sidecars, follows, followers, stats), the activities and the users. */
export function InspectorPage() {
  const [input, setInput] = useState("");
  const [feed, setFeed] = useState<string | undefined>(undefined);
  const [inputError, setInputError] = useState<unknown>(undefined);
  const submit = (e: Event) => {
    e.preventDefault();
    try {
      const { group, id } = parseFeedRef(input.trim());
      setInputError(undefined);
      setFeed(`${group}:${id}`);
    } catch (err) {
      setInputError(err);
    }
  };
  return (
    <Page title="Inspector">
      <form class="card inline-form" role="search" onSubmit={submit}>
        <div>
          <label for="feed">Feed</label>
          <input id="feed" type="text" placeholder="group:id, e.g. user:alice" autocomplete="off" spellcheck={false} value={input} onInput={(e) => setInput(e.currentTarget.value)} />
        </div>
        <button type="submit" class="primary">
          Inspect
        </button>
        <ErrorBox error={inputError} />
      </form>
      {feed ? <FeedView feed={feed} key={feed} /> : null}
      <Activities />
      <Users />
    </Page>
  );
}

function FeedView({ feed }: { feed: string }) {
  const pages = usePages((next) => client.inspectFeed(feed, { next, limit: PAGE }), [feed]);
  const stats = useLoad(() => client.inspectStats(feed), [feed]);
  const follows = usePages((next) => client.inspectFollows(feed, { next, limit: PAGE }), [feed]);
  const followers = usePages((next) => client.inspectFollowers(feed, { next, limit: PAGE }), [feed]);
  const page = pages.data;
  const objects = Object.entries(page?.objects ?? {});
  return (
    <section class="card" aria-labelledby="feed-title">
      <h2 id="feed-title">
        Feed <code>{feed}</code>
      </h2>
      {stats.data ? (
        <p>
          {plural(stats.data.follower_count, "follower")} · follows {plural(stats.data.following_count, "feed")}
        </p>
      ) : null}
      {/* One box for the feed: its four calls fail alike (a malformed or refused feed). */}
      <ErrorBox error={pages.error ?? stats.error} />
      <h3>Activities</h3>
      <Table label="Feed activities" head={["Time", "Actor", "Verb", "Object", "Id"]} empty={!page?.results.length}>
        {(page?.results ?? []).map((a) => (
          <tr key={a.id}>
            <td>
              <When iso={a.time} />
            </td>
            <td>{a.actor}</td>
            <td>{a.verb}</td>
            <td>{a.object}</td>
            <td>
              <code>{a.id}</code>
            </td>
          </tr>
        ))}
      </Table>
      <div class="region-pager" role="group" aria-label="Feed pages">
        <Pager pages={pages} />
      </div>
      <h3>Promoted</h3>
      {pages.page === 1 ? (
        <Table label="Promoted sidecar" head={["Actor", "Verb", "Object", "Id"]} empty={!page?.promoted?.length}>
          {(page?.promoted ?? []).map((p) => (
            <tr key={p.id}>
              <td>{p.actor}</td>
              <td>{p.verb}</td>
              <td>{p.object}</td>
              <td>
                <code>{p.id}</code>
              </td>
            </tr>
          ))}
        </Table>
      ) : (
        <p>Promoted activities come with the first page only.</p>
      )}
      <h3>Objects</h3>
      <Table label="Objects sidecar" head={["Ref", "Custom", "Updated"]} empty={!objects.length}>
        {objects.map(([ref, o]) => (
          <tr key={ref}>
            <td>
              <code>{ref}</code>
            </td>
            <td>
              <code class="json">{JSON.stringify(o.custom)}</code>
            </td>
            <td>
              <When iso={o.updated_at} />
            </td>
          </tr>
        ))}
      </Table>
      <div class="two">
        <EdgeTable title="Follows" column="Target" pages={follows} edges={(follows.data?.results ?? []).map((f) => ({ feed: `${f.target_group}:${f.target_id}`, at: f.created_at }))} hideError={!!pages.error} />
        <EdgeTable title="Followers" column="Source" pages={followers} edges={(followers.data?.results ?? []).map((f) => ({ feed: `${f.source_group}:${f.source_id}`, at: f.created_at }))} hideError={!!pages.error} />
      </div>
    </section>
  );
}

/** Every activity of the tenant, tombstones marked; live on its first page. */
function Activities() {
  const live = useLive();
  const pages = usePages((next) => client.inspectActivities({ next, limit: PAGE }), []);
  useLiveReload(live, pages.reload, pages.page === 1);
  const rows = pages.data?.results ?? [];
  return (
    <section class="card">
      <h2 id="activities-title">All activities</h2>
      <p class="live">
        {live.signal ? `${live.signal.counts.activities} activities · ` : ""}
        {liveNote(live)}
      </p>
      <ErrorBox error={pages.error} />
      <Table label="All activities" head={["Time", "Actor", "Verb", "Object", "State", "Id"]} empty={!rows.length && !pages.loading}>
        {rows.map((a) => (
          <tr key={a.id} class={a.deleted_at ? "tombstone" : ""}>
            <td>
              <When iso={a.time} />
            </td>
            <td>{a.actor}</td>
            <td>{a.verb}</td>
            <td>{a.object}</td>
            <td>{a.deleted_at ? <span class="badge deleted">deleted <When iso={a.deleted_at} /></span> : <span class="badge active">live</span>}</td>
            <td>
              <code>{a.id}</code>
            </td>
          </tr>
        ))}
      </Table>
      <div role="group" aria-label="Activities pages">
        <Pager pages={pages} />
      </div>
    </section>
  );
}

/** The tenant's users (no custom data); live on its first page. */
function Users() {
  const live = useLive();
  const pages = usePages((next) => client.inspectUsers({ next, limit: PAGE }), []);
  useLiveReload(live, pages.reload, pages.page === 1);
  const rows = pages.data?.results ?? [];
  return (
    <section class="card">
      <h2 id="users-title">Users</h2>
      <p class="live">
        {live.signal ? `${live.signal.counts.users} users · ` : ""}
        {liveNote(live)}
      </p>
      <ErrorBox error={pages.error} />
      <Table label="Users" head={["Id", "Created", "Updated", "Tokens revoked before"]} empty={!rows.length && !pages.loading}>
        {rows.map((u) => (
          <tr key={u.id}>
            <td>
              <code>{u.id}</code>
            </td>
            <td>
              <When iso={u.created_at} />
            </td>
            <td>
              <When iso={u.updated_at} />
            </td>
            <td>
              <When iso={u.revoked_before} />
            </td>
          </tr>
        ))}
      </Table>
      <div role="group" aria-label="Users pages">
        <Pager pages={pages} />
      </div>
    </section>
  );
}
