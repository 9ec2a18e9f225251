// The requests of bench 14 (load-worker.mjs `make`): request n is a new edge, feed
// `timeline:${prefix}${⌊n / T⌋}` following target n mod T, so that the load's connections follow
// every target at once (their follower counts are hot) and no edge comes twice. The copy limit is
// the default (100): each follow publishes its history copy task too.
//   args: {targets: ["group:id"], prefix}
export function request(n, { targets, prefix }) {
  const t = targets.length;
  return {
    method: "POST",
    path: `/v1/feeds/timeline/${prefix}${Math.floor(n / t)}/follows`,
    body: { target: targets[n % t] },
  };
}
