import type { Activity, FeedPage, Notification, NotificationPage } from "@feeds/node";

// The human lines of the answers that are more than one line. Fields keep the API's names, so
// that what a reader sees here is what `--json` and the interface call them.

const json = (value: unknown) => JSON.stringify(value);
const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function activityLines(a: Activity): string[] {
  const head = `${a.id}  ${a.time}  ${a.actor} ${a.verb} ${a.object}${a.target ? ` → ${a.target}` : ""}`;
  const about = [
    a.actor_user ? `actor_user ${json(a.actor_user.custom)}` : undefined,
    Object.keys(a.custom).length > 0 ? `custom ${json(a.custom)}` : undefined,
    a.refs.length > 0 ? `refs ${a.refs.join(",")}` : undefined,
  ].filter((s) => s !== undefined);
  const engagement = [`reaction_counts ${json(a.reaction_counts)}`, a.own_reactions ? `own_reactions ${json(a.own_reactions)}` : undefined];
  return [head, ...(about.length > 0 ? [`    ${about.join("  ")}`] : []), `    ${engagement.filter((s) => s !== undefined).join("  ")}`];
}

export function feedPageLines(feed: string, page: FeedPage): string[] {
  const lines = [`${feed}: ${count(page.results.length, "activity", "activities")}`];
  for (const a of page.results) lines.push(...activityLines(a));
  for (const p of page.promoted ?? []) lines.push(`promoted ${p.id}  ${p.actor} ${p.verb} ${p.object}  custom ${json(p.custom)}`);
  for (const [ref, o] of Object.entries(page.objects ?? {})) lines.push(`object ${ref}  ${json(o.custom)}`);
  if (page.next) lines.push(`next ${page.next}`);
  return lines;
}

function notificationLine(n: Notification): string {
  const parts = [n.created_at, n.verb, n.actor];
  if (n.actor_user) parts.push(json(n.actor_user.custom));
  parts.push(`object ${n.object}`);
  if (n.reaction_kind) parts.push(`reaction_kind ${n.reaction_kind}`);
  if (n.activity_id) parts.push(`activity_id ${n.activity_id}`);
  return parts.join("  ");
}

export function notificationLines(owner: string, page: NotificationPage): string[] {
  return [
    `${owner}: ${count(page.results.length, "notification", "notifications")}, unseen ${page.unseen}, unread ${page.unread}`,
    ...page.results.map(notificationLine),
    ...(page.next ? [`next ${page.next}`] : []),
  ];
}
