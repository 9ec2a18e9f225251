// The requests of bench 9 (load-worker.mjs `make`): request n is a new reaction, user
// `${prefix}${⌊n / A⌋}` on activity n mod A, so that the load's connections react on every
// activity at once and no (user, activity, kind) comes twice.
//   args: {activities: [id], kind, prefix}
export function request(n, { activities, kind, prefix }) {
  const a = activities.length;
  return {
    method: "POST",
    path: `/v1/activities/${activities[n % a]}/reactions`,
    body: { kind, user_id: `${prefix}${Math.floor(n / a)}` },
  };
}
