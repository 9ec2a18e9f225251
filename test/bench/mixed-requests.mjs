// The request mix of bench 13 for openloop.mjs, like the published feed benchmarks: over `users`
// users (u0 … u{users-1}, each following 10 others), `writeWeight` parts of POST an activity to
// the caller's own user feed and `readWeight` parts of GET the caller's timeline first page, each
// with that user's token. Users are spread over the whole set (multiplicative strides), so reads
// and writes hit many feeds rather than one hot key.
import { SignJWT } from "jose";

export async function makers({ apiKey, secret, users, writeWeight = 1, readWeight = 9, limit = 20 }) {
  const key = new TextEncoder().encode(secret);
  const tokens = await Promise.all(
    Array.from({ length: users }, (_, k) =>
      new SignJWT({ user_id: `u${k}` }).setProtectedHeader({ alg: "HS256", kid: apiKey }).setIssuedAt().setExpirationTime("2h").sign(key),
    ),
  );
  const auth = (k) => ({ authorization: `Bearer ${tokens[k]}` });
  return [
    {
      name: "write",
      weight: writeWeight,
      request(n) {
        const k = (n * 7919 + 3) % users;
        return { method: "POST", path: `/v1/feeds/user/u${k}/activities`, headers: auth(k), body: { actor: `user:u${k}`, verb: "post", object: `note:w${n}`, custom: { text: `load post ${n}` } } };
      },
    },
    {
      name: "read",
      weight: readWeight,
      request(n) {
        const k = (n * 104_729 + 13) % users;
        return { method: "GET", path: `/v1/feeds/timeline/u${k}?limit=${limit}`, headers: auth(k) };
      },
    },
  ];
}
