import { createServerToken, createUserToken, type AddActivityInput } from "@feeds/node";
import { bool, list, required, str, type Command, type Values } from "./command.js";
import type { Context } from "./context.js";
import { usageError } from "./errors.js";
import { notificationLines, feedPageLines } from "./format.js";
import { dateTime, duration, feedRef, id, integer, jsonObject } from "./inputs.js";

// The tenant's commands, on the feed API (/v1) with a server token, or with `--as <user>` a user
// token, both minted from the tenant's api key and secret (the profile's, or FEEDS_API_KEY and
// FEEDS_API_SECRET).

const asOption = { as: { type: "string" } } as const;
const asHelp = "--as <user-id>     act as that end user (a user token) instead of the tenant's backend (a server token)";
const pageOptions = { limit: { type: "string" }, next: { type: "string" } } as const;
const pageHelp = ["--limit <n>        1 to 100 (default 20)", "--next <cursor>    the page after the one that printed it"];

/** The acting client: `--as <user>` a user token's, else the server token's. */
function actor(ctx: Context, values: Values) {
  const as = str(values, "as");
  return as === undefined ? ctx.server() : ctx.user(id(as, "--as"));
}

function page(values: Values) {
  const limit = integer(str(values, "limit"), "--limit", 1, 100);
  const next = str(values, "next");
  return { ...(limit === undefined ? {} : { limit }), ...(next === undefined ? {} : { next }) };
}

const tokenServer: Command = {
  name: "token server",
  args: "",
  summary: "mint a server token (the tenant's backend) from the tenant's api key and secret",
  options: { "expires-in": { type: "string" } },
  optionHelp: ["--expires-in <d>   30s, 15m, 1h, 7d (default: no expiry)"],
  positionals: [0, 0],
  async run(ctx, _, values) {
    const expiresIn = duration(str(values, "expires-in"), "--expires-in");
    const { apiKey, apiSecret } = ctx.tenantCredentials();
    const token = await createServerToken(apiKey, apiSecret, { expiresIn });
    ctx.print({ token }, () => [token]);
  },
};

const tokenUser: Command = {
  name: "token user",
  args: "<user-id>",
  summary: "mint a user token (one end user) from the tenant's api key and secret",
  options: { "expires-in": { type: "string" } },
  optionHelp: ["--expires-in <d>   30s, 15m, 1h, 7d (default 1h)"],
  positionals: [1, 1],
  async run(ctx, [userId = ""], values) {
    const expiresIn = duration(str(values, "expires-in"), "--expires-in");
    const { apiKey, apiSecret } = ctx.tenantCredentials();
    const token = await createUserToken(apiKey, apiSecret, id(userId, "user id"), { expiresIn });
    ctx.print({ token }, () => [token]);
  },
};

const userPut: Command = {
  name: "user put",
  args: "<user-id>",
  summary: "create or replace an end user (PUT /v1/users/{id}, server token)",
  options: { custom: { type: "string" } },
  optionHelp: ["--custom <json>    the user's data, shown as actor_user on activities and notifications (default {})"],
  positionals: [1, 1],
  async run(ctx, [userId = ""], values) {
    const custom = jsonObject(str(values, "custom"), "--custom") ?? {};
    const user = await ctx.server().upsertUser(id(userId, "user id"), custom);
    ctx.print(user, () => [`user ${user.id} ${JSON.stringify(user.custom)}`]);
  },
};

const follow: Command = {
  name: "follow",
  args: "<feed> <target-feed>",
  summary: "make a feed follow another: the target's new activities fan out to it",
  options: { ...asOption, "copy-limit": { type: "string" } },
  optionHelp: [asHelp, "--copy-limit <n>   the target's newest activities copied in, 0 to 1000 (default 100)"],
  positionals: [2, 2],
  async run(ctx, [source = "", target = ""], values) {
    const limit = integer(str(values, "copy-limit"), "--copy-limit", 0, 1000);
    const edge = await actor(ctx, values).follow(feedRef(source), feedRef(target, "target feed"), limit === undefined ? {} : { activity_copy_limit: limit });
    ctx.print(edge, () => [`${edge.source_group}:${edge.source_id} follows ${edge.target_group}:${edge.target_id}`]);
  },
};

const post: Command = {
  name: "post",
  args: "<feed>",
  summary: "add an activity to a feed (it fans out to the feed's followers)",
  options: {
    ...asOption,
    actor: { type: "string" },
    verb: { type: "string" },
    object: { type: "string" },
    target: { type: "string" },
    custom: { type: "string" },
    ref: { type: "string", multiple: true },
    "foreign-id": { type: "string" },
    time: { type: "string" },
    quiet: { type: "boolean", short: "q" },
  },
  optionHelp: [
    "--verb <verb> --object <object>   required",
    "--actor <actor>    required with a server token; with --as it is user:<id>",
    asHelp,
    "--target <t>  --custom <json>  --ref <type:id> (up to 4)",
    "--foreign-id <id> --time <date-time>   the dedupe identity (a retry answers the same activity)",
    "-q, --quiet        print the activity id alone",
  ],
  positionals: [1, 1],
  async run(ctx, [feed = ""], values) {
    const custom = jsonObject(str(values, "custom"), "--custom");
    const time = dateTime(str(values, "time"), "--time");
    const fields: AddActivityInput = {
      verb: required(values, "verb"),
      object: required(values, "object"),
      ...optional("actor", str(values, "actor")),
      ...optional("target", str(values, "target")),
      ...optional("foreign_id", str(values, "foreign-id")),
      ...optional("time", time),
      ...optional("custom", custom),
      ...(list(values, "ref").length > 0 ? { refs: list(values, "ref") } : {}),
    };
    const added = await actor(ctx, values).addActivity(feedRef(feed), fields);
    if (bool(values, "quiet") && !ctx.globals.json) {
      ctx.io.stdout(`${added.id}\n`);
      return;
    }
    ctx.print(added, () => [
      `activity ${added.id} in ${added.origin_feed}: ${added.actor} ${added.verb} ${added.object}`,
      ...(added.warnings ?? []).map((w) => `warning ${w}`),
    ]);
  },
};

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

const read: Command = {
  name: "read",
  args: "<feed>",
  summary: "read a feed, newest first, enriched (actor_user, reaction_counts, own_reactions, objects, promoted)",
  options: { ...asOption, ...pageOptions },
  optionHelp: [asHelp, ...pageHelp],
  positionals: [1, 1],
  async run(ctx, [feed = ""], values) {
    const ref = feedRef(feed);
    const answer = await actor(ctx, values).readFeed(ref, page(values));
    ctx.print(answer, () => feedPageLines(ref, answer));
  },
};

const react: Command = {
  name: "react",
  args: "<activity-id> <kind>",
  summary: "react to an activity as an end user (--as is required)",
  options: { ...asOption },
  optionHelp: ["--as <user-id>     the user who reacts (required)"],
  positionals: [2, 2],
  async run(ctx, [activityId = "", kind = ""], values) {
    const as = str(values, "as");
    if (as === undefined) throw usageError("react needs --as <user-id>: the user who reacts");
    const reaction = await ctx.user(id(as, "--as")).react(activityId, kind);
    ctx.print(reaction, () => [`${reaction.user_id} reacted ${reaction.kind} to ${reaction.activity_id}`]);
  },
};

const notifications: Command = {
  name: "notifications",
  args: "",
  summary: "read an end user's notifications (follow, react, comment), newest first",
  options: { ...asOption, owner: { type: "string" }, ...pageOptions },
  optionHelp: ["--as <user-id>     read your own, as that user (a user token)", "--owner <user-id>  read that user's with a server token", ...pageHelp],
  positionals: [0, 0],
  async run(ctx, _, values) {
    const as = str(values, "as");
    const owner = str(values, "owner");
    if ((as === undefined) === (owner === undefined)) throw usageError("notifications needs one of --as <user-id> or --owner <user-id>");
    const answer =
      as === undefined
        ? await ctx.server().notifications({ ...page(values), owner: id(owner ?? "", "--owner") })
        : await ctx.user(id(as, "--as")).notifications(page(values));
    ctx.print(answer, () => notificationLines(as ?? owner ?? "", answer));
  },
};

export const feedCommands: Command[] = [tokenServer, tokenUser, userPut, follow, post, read, react, notifications];
