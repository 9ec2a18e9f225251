import { describe, expect, it } from "vitest";
import { limits } from "@feeds/kit";
import { UserClient } from "@feeds/node";
import { baseUrl, envelope, http, newTenant } from "../support/api.js";

// The comment blocklist against a hostile tenant and hostile commenters: no list makes matching
// cost more than one linear pass over the text (terms sharing long prefixes are what a backtracking
// matcher chokes on), the words across a list are bounded, and full-width or zero-width spellings
// of a term are the term.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setUp() {
  const t = await newTenant();
  const server = await t.server();
  const res = await http("POST", "/v1/feeds/user/owner/activities", { token: server, body: { actor: "user:owner", verb: "post", object: "note:1" } });
  expect(res.status).toBe(201);
  return { t, server, fan: await t.user("fan"), activityId: res.body.id as string };
}

const putList = (server: string, terms: unknown) => http("PUT", "/v1/moderation/blocklist", { token: server, body: { terms } });

/** `count` terms of `words` words, `x x … x q00001`, sharing every word but the last. */
const sharedPrefixes = (count: number, words: number) =>
  Array.from({ length: count }, (_, i) => [...Array<string>(words - 1).fill("x"), `q${String(i).padStart(5, "0")}`].join(" "));

/**
 * A health answer waits behind anything that holds the event loop. It takes a few milliseconds
 * (tens, now and then hundreds, on a busy machine); a backtracking matcher holds the loop for
 * seconds on this list (2.5 s to 6 s measured).
 */
const PROMPT_MS = 1000;

describe("the comment blocklist under abuse", () => {
  it(`refuses a list of more than ${limits.blocklistWords} words across its terms: 400 naming terms`, async () => {
    const { server } = await setUp();
    const over = await putList(server, [...sharedPrefixes(limits.blocklistTerms - 1, 5), "one two three four five six"]);
    expect(over.status, JSON.stringify(over.body).slice(0, 100)).toBe(400);
    const error = envelope(over);
    expect(error.code).toBe("VALIDATION_FAILED");
    expect(error.fields?.map((f) => f.path)).toEqual(["terms"]);
    expect(error.fields?.[0]?.message).toContain(`at most ${limits.blocklistWords} words across all terms`);
    expect((await http("GET", "/v1/moderation/blocklist", { token: server })).body).toEqual({ terms: [] });
  });

  it("matches a 5,000-character comment against the worst list allowed while other requests are answered promptly", async () => {
    const { t, server, activityId } = await setUp();
    // 1,000 terms of 5 words: exactly the bound, and the shape that cost the old expression most.
    const terms = sharedPrefixes(limits.blocklistTerms, limits.blocklistWords / limits.blocklistTerms);
    expect((await putList(server, terms)).status).toBe(200);
    const text = "x ".repeat(2500);
    expect(text).toHaveLength(5000);

    const fan = new UserClient({ baseUrl: baseUrl(), apiKey: t.apiKey, apiSecret: t.apiSecret, userId: "fan", timeoutMs: 60_000, maxRetries: 0 });
    let answered = false;
    const posting = fan.addComment(activityId, { text }).finally(() => (answered = true));
    const waits: number[] = [];
    while (!answered || waits.length < 5) {
      const started = performance.now();
      expect((await http("GET", "/v1/health")).status).toBe(200);
      waits.push(Math.round(performance.now() - started));
      await sleep(20);
    }
    expect(await posting).toMatchObject({ text, user_id: "fan" });
    expect(Math.max(...waits), `health answered in ${waits.join(", ")} ms`).toBeLessThan(PROMPT_MS);
  });

  it("rejects full-width and zero-width spellings of a term (422), stores terms folded, and lets look-alike words pass", async () => {
    const { server, fan, activityId } = await setUp();
    const put = await putList(server, ["darn", "ｆｏｕｌ ｐｌａｙ", "he\u200Bck", "c++"]);
    expect(put.status).toBe(200);
    const parent = await http("POST", `/v1/activities/${activityId}/comments`, { token: fan, body: { text: "clean" } });
    expect(parent.status).toBe(201);
    for (const text of ["ｄａｒｎ", "oh ＤＡＲＮ!", "da\u200Brn", "d\u00ADa\u200Cr\u2060n", "\uFEFFdarn", "foul play", "Foul\u3000Play", "HE\u200DCK", "Ｃ＋＋ again"]) {
      for (const res of [
        await http("POST", `/v1/activities/${activityId}/comments`, { token: fan, body: { text } }),
        await http("PATCH", `/v1/comments/${parent.body.id}`, { token: fan, body: { text } }),
      ]) {
        expect(res.status, JSON.stringify(text)).toBe(422);
        expect(envelope(res).code).toBe("CONTENT_REJECTED");
      }
    }
    for (const text of ["ｄａｒｎｅｄ", "dar\u200Bning", "foul\u200Bplay", "c+"]) {
      expect((await http("POST", `/v1/activities/${activityId}/comments`, { token: fan, body: { text } })).status, JSON.stringify(text)).toBe(201);
    }
    // Stored as they are matched: what the tenant reads back is what the matcher looks for.
    expect(put.body).toEqual({ terms: ["c++", "darn", "foul play", "heck"] });
    expect((await http("GET", "/v1/moderation/blocklist", { token: server })).body).toEqual(put.body);
  });
});
