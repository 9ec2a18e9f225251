import type { CallOptions } from "./http.js";
import { BaseClient, feedRefString, pageQuery, paginate, parseFeedRef, type FeedRef } from "./client-base.js";
import { routeTable } from "@feeds/contract/routes";
import type {
  Activity,
  AddActivityInput,
  AddCommentInput,
  AddedActivity,
  FeedObject,
  FeedPage,
  FeedSignal,
  Follow,
  FollowStats,
  JsonObject,
  MarkNotificationGroupsInput,
  MarkNotificationsInput,
  Notification,
  NotificationCounts,
  NotificationGroup,
  NotificationGroupMembers,
  NotificationGroupPage,
  NotificationPage,
  NotificationSignal,
  ObjectsByRef,
  Page,
  PageParams,
  PatchActivityInput,
  Reaction,
  Reply,
  SignalResult,
  Suggestions,
  User,
} from "@feeds/contract";

import { liveStream, type StreamEvent, type StreamOptions } from "./live-stream.js";

const api = routeTable.feedApi;

/** Paging options of an iterator: the page size, and where to start (default: the first page). */
export type IterateParams = Omit<PageParams, "cursor">;

/** Every item of a feed's timeline and its follow lists, page after page. */
export interface FeedLists {
  /** Every activity of the feed, newest first: `for await (const a of client.feed("user:1").all())`. */
  all(params?: IterateParams, call?: CallOptions): AsyncGenerator<FeedPage["results"][number], void, undefined>;
  /** Every feed this feed follows. */
  following(params?: IterateParams, call?: CallOptions): AsyncGenerator<Follow, void, undefined>;
  /** Every feed following this one. */
  followers(params?: IterateParams, call?: CallOptions): AsyncGenerator<Follow, void, undefined>;
}

/** Every reaction and comment of an activity, page after page. */
export interface ActivityLists {
  reactions(params?: IterateParams & { kind?: string }, call?: CallOptions): AsyncGenerator<Reaction, void, undefined>;
  comments(params?: IterateParams, call?: CallOptions): AsyncGenerator<Reply, void, undefined>;
}



/** `{group, id, target_group, target_id}` of an unfollow. */
function edgeParams(feed: FeedRef, target: FeedRef) {
  const t = parseFeedRef(target);
  return { ...parseFeedRef(feed), target_group: t.group, target_id: t.id };
}

// ---------------------------------------------------------------------------------------------
// Feed API routes open to server and user tokens (routes.feedApi)
// ---------------------------------------------------------------------------------------------

export abstract class FeedApiClient extends BaseClient {
  /**
   * The live stream of `feeds` (at most 20) and/or the caller's `notifications`, as an async
   * iterator that resumes by itself: `for await (const e of client.stream({ feeds: ["timeline:1"] }))`.
   * Every event arrives once, in order, across reconnects (a fresh ticket and the last event's id
   * each time). A `reset` event (`cursor_too_old`) means events were missed: refetch over REST.
   * `signal` ends it; so does `break`.
   */
  stream(options: StreamOptions): AsyncGenerator<StreamEvent, void, undefined> {
    return liveStream(this.http, (body) => this.route(routeTable.stream.streamTicket, { body, call: { signal: options.signal } }), options);
  }

  // Iterators over paged lists (each follows `next` until the last page)

  /** A feed's lists as async iterators: `for await (const a of client.feed("timeline:1").all())`. */
  feed(feed: FeedRef): FeedLists {
    return {
      all: (params, call) => paginate((next) => this.readFeed(feed, { ...params, next }, call)),
      following: (params, call) => paginate((next) => this.follows(feed, { ...params, next }, call)),
      followers: (params, call) => paginate((next) => this.followers(feed, { ...params, next }, call)),
    };
  }

  /** An activity's reactions and comments as async iterators. */
  activity(activityId: string): ActivityLists {
    return {
      reactions: (params, call) => paginate((next) => this.reactions(activityId, { ...params, next }, call)),
      comments: (params, call) => paginate((next) => this.comments(activityId, { ...params, next }, call)),
    };
  }

  /** Every reply to a comment, oldest first. */
  allReplies(commentId: string, params?: IterateParams, call?: CallOptions): AsyncGenerator<Reply, void, undefined> {
    return paginate((next) => this.replies(commentId, { ...params, next }, call));
  }

  /** Every notification, newest first (`owner` for server tokens). */
  allNotifications(params: IterateParams & { owner?: string } = {}, call?: CallOptions): AsyncGenerator<NotificationPage["results"][number], void, undefined> {
    return paginate((next) => this.notifications({ ...params, next }, call));
  }

  /** Every notification group, newest update first (`owner` for server tokens). */
  allNotificationGroups(params: IterateParams & { owner?: string } = {}, call?: CallOptions): AsyncGenerator<NotificationGroup, void, undefined> {
    return paginate((next) => this.notificationGroups({ ...params, next }, call));
  }

  /** Every notification of a group, newest first (`owner` for server tokens). */
  allNotificationGroupMembers(groupKey: string, params: IterateParams & { owner?: string } = {}, call?: CallOptions): AsyncGenerator<Notification, void, undefined> {
    return paginate((next) => this.notificationGroupMembers(groupKey, { ...params, next }, call));
  }

  // Feeds and activities

  /** `GET /v1/feeds/{group}/{id}` */
  readFeed(feed: FeedRef, params?: PageParams, call?: CallOptions): Promise<FeedPage> {
    return this.route(api.readFeed, { params: parseFeedRef(feed), query: pageQuery(params), call });
  }

  /** `POST /v1/feeds/{group}/{id}/activities` (201; a live duplicate answers the existing one). */
  addActivity(feed: FeedRef, activity: AddActivityInput, call?: CallOptions): Promise<AddedActivity> {
    return this.route(api.addActivity, { params: parseFeedRef(feed), body: activity, call });
  }

  /** `GET /v1/activities/{id}` */
  getActivity(id: string, call?: CallOptions): Promise<Activity> {
    return this.route(api.getActivity, { params: { id }, call });
  }

  /** `PATCH /v1/activities/{id}` with `{set?, unset?, refs?}` (paths start with `custom.`). */
  patchActivity(id: string, patch: PatchActivityInput, call?: CallOptions): Promise<Activity> {
    return this.route(api.patchActivity, { params: { id }, body: patch, call });
  }

  /** `DELETE /v1/activities/{id}` (soft delete, 204). */
  deleteActivity(id: string, call?: CallOptions): Promise<void> {
    return this.route(api.deleteActivity, { params: { id }, call });
  }

  /** `POST /v1/feeds/{group}/{id}/follows` — 201 new edge, 200 existing edge. */
  follow(feed: FeedRef, target: FeedRef, options: { activity_copy_limit?: number } = {}, call?: CallOptions): Promise<Follow> {
    const body: JsonObject = { target: feedRefString(target) };
    if (options.activity_copy_limit !== undefined) body["activity_copy_limit"] = options.activity_copy_limit;
    return this.route(api.follow, { params: parseFeedRef(feed), body, call });
  }

  /** `DELETE /v1/feeds/{group}/{id}/follows/{target_group}/{target_id}?keep_history=` (204). */
  unfollow(feed: FeedRef, target: FeedRef, options: { keep_history?: boolean } = {}, call?: CallOptions): Promise<void> {
    return this.route(api.unfollow, { params: edgeParams(feed, target), query: { keep_history: options.keep_history }, call });
  }

  /** `GET /v1/feeds/{group}/{id}/follows` — who this feed follows. */
  follows(feed: FeedRef, params?: PageParams, call?: CallOptions): Promise<Page<Follow>> {
    return this.route(api.follows, { params: parseFeedRef(feed), query: pageQuery(params), call });
  }

  /** `GET /v1/feeds/{group}/{id}/followers` */
  followers(feed: FeedRef, params?: PageParams, call?: CallOptions): Promise<Page<Follow>> {
    return this.route(api.followers, { params: parseFeedRef(feed), query: pageQuery(params), call });
  }

  /** `GET /v1/feeds/{group}/{id}/stats` */
  stats(feed: FeedRef, call?: CallOptions): Promise<FollowStats> {
    return this.route(api.stats, { params: parseFeedRef(feed), call });
  }

  /** `GET /v1/feeds/{group}/{id}/suggestions?limit=` (1..50, default 25; not paged). */
  suggestions(feed: FeedRef, params: { limit?: number } = {}, call?: CallOptions): Promise<Suggestions> {
    return this.route(api.suggestions, { params: parseFeedRef(feed), query: { limit: params.limit }, call });
  }

  /** `GET /v1/feeds/{group}/{id}/signal`, conditional on `etag`. */
  feedSignal(feed: FeedRef, options: { etag?: string } = {}, call?: CallOptions): Promise<SignalResult<FeedSignal>> {
    return this.signalOf(api.feedSignal, { params: parseFeedRef(feed), call }, options.etag);
  }

  // Reactions

  /** `POST /v1/activities/{id}/reactions` — server tokens must pass `user_id`. */
  react(activityId: string, kind: string, options: { user_id?: string } = {}, call?: CallOptions): Promise<Reaction> {
    const body: JsonObject = { kind };
    if (options.user_id !== undefined) body["user_id"] = options.user_id;
    return this.route(api.react, { params: { id: activityId }, body, call });
  }

  /** `GET /v1/activities/{id}/reactions?kind=` (newest first). */
  reactions(activityId: string, params: PageParams & { kind?: string } = {}, call?: CallOptions): Promise<Page<Reaction>> {
    return this.route(api.reactions, { params: { id: activityId }, query: { ...pageQuery(params), kind: params.kind }, call });
  }

  /** `DELETE /v1/activities/{id}/reactions/{kind}` (`user_id` for server tokens). */
  unreact(activityId: string, kind: string, options: { user_id?: string } = {}, call?: CallOptions): Promise<void> {
    return this.route(api.unreact, { params: { id: activityId, kind }, query: { user_id: options.user_id }, call });
  }

  /** `DELETE /v1/reactions/{id}` (compatibility route). */
  deleteReaction(reactionId: string, call?: CallOptions): Promise<void> {
    return this.route(api.deleteReaction, { params: { id: reactionId }, call });
  }

  // Comments

  /** `POST /v1/activities/{id}/comments` `{text, parent_id?, user_id?}` — a reply when parent_id is set. */
  addComment(activityId: string, input: AddCommentInput, call?: CallOptions): Promise<Reply> {
    return this.route(api.addComment, { params: { id: activityId }, body: input, call });
  }

  /** `GET /v1/activities/{id}/comments` — top-level comments, oldest first. */
  comments(activityId: string, params?: PageParams, call?: CallOptions): Promise<Page<Reply>> {
    return this.route(api.comments, { params: { id: activityId }, query: pageQuery(params), call });
  }

  /** `GET /v1/comments/{id}/replies` — oldest first. */
  replies(commentId: string, params?: PageParams, call?: CallOptions): Promise<Page<Reply>> {
    return this.route(api.replies, { params: { id: commentId }, query: pageQuery(params), call });
  }

  /** `PATCH /v1/comments/{id}` `{text, user_id?}` — the author only; server tokens pass the author's `user_id`. */
  editComment(commentId: string, text: string, options: { user_id?: string } = {}, call?: CallOptions): Promise<Reply> {
    const body: JsonObject = { text };
    if (options.user_id !== undefined) body["user_id"] = options.user_id;
    return this.route(api.editComment, { params: { id: commentId }, body, call });
  }

  /** `DELETE /v1/comments/{id}` (204) — the author only (`user_id` for server tokens); replies go with their comment. */
  deleteComment(commentId: string, options: { user_id?: string } = {}, call?: CallOptions): Promise<void> {
    return this.route(api.deleteComment, { params: { id: commentId }, query: { user_id: options.user_id }, call });
  }

  // Notifications

  /** `GET /v1/notifications` — `owner` for server tokens. */
  notifications(params: PageParams & { owner?: string } = {}, call?: CallOptions): Promise<NotificationPage> {
    return this.route(api.notifications, { query: { ...pageQuery(params), owner: params.owner }, call });
  }

  /** `POST /v1/notifications/mark` `{seen?, read?, owner?}` → `{unseen, unread}`. */
  markNotifications(input: MarkNotificationsInput, call?: CallOptions): Promise<NotificationCounts> {
    return this.route(api.markNotifications, { body: input, call });
  }

  /** `GET /v1/notifications/groups` — groups newest update first, `{unseen, unread}` count groups; `owner` for server tokens. */
  notificationGroups(params: PageParams & { owner?: string } = {}, call?: CallOptions): Promise<NotificationGroupPage> {
    return this.route(api.notificationGroups, { query: { ...pageQuery(params), owner: params.owner }, call });
  }

  /** `GET /v1/notifications/groups/{group_key}/members` — the group's notifications, newest first. */
  notificationGroupMembers(groupKey: string, params: PageParams & { owner?: string } = {}, call?: CallOptions): Promise<NotificationGroupMembers> {
    return this.route(api.notificationGroupMembers, { params: { group_key: groupKey }, query: { ...pageQuery(params), owner: params.owner }, call });
  }

  /** `POST /v1/notifications/groups/mark` `{seen?, read?, owner?}` (true or group keys) → the groups' `{unseen, unread}`. */
  markNotificationGroups(input: MarkNotificationGroupsInput, call?: CallOptions): Promise<NotificationCounts> {
    return this.route(api.markNotificationGroups, { body: input, call });
  }

  /** `GET /v1/notifications/signal`, conditional on `etag` (`owner` for server tokens). */
  notificationSignal(options: { owner?: string; etag?: string } = {}, call?: CallOptions): Promise<SignalResult<NotificationSignal>> {
    return this.signalOf(api.notificationSignal, { query: { owner: options.owner }, call }, options.etag);
  }

  // Objects (reads are open to any token)

  /** `GET /v1/objects/{type}/{id}` */
  getObject(type: string, id: string, call?: CallOptions): Promise<FeedObject> {
    return this.route(api.getObject, { params: { type, id }, call });
  }

  /** `GET /v1/objects?refs=a:1,b:2` (at most 100 refs) → `{objects: {ref: Object}}`. */
  getObjects(refs: readonly string[], call?: CallOptions): Promise<ObjectsByRef> {
    return this.route(api.getObjects, { query: { refs: refs.join(",") }, call });
  }

  // Users

  /** `GET /v1/users/{id}` */
  getUser(id: string, call?: CallOptions): Promise<User> {
    return this.route(api.getUser, { params: { id }, call });
  }
}

