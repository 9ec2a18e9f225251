// Bounds on the shape of a request body, checked by the SDK before it sends and by the gateway
// (which validates with the same schemas) before any service runs. docs/limits.md lists them for
// users; kit/src/config.ts re-exports them beside the server's own limits.

export const requestLimits = {
  /** Serialized JSON of any `custom` object (activities, objects, users, promoted). */
  customBytes: 64 * 1024,
  /** Nesting of any `custom` object: objects and arrays inside it, `custom` itself is level 1. */
  customDepth: 32,
  /** Keys of a patch body's `set`. */
  patchSetKeys: 100,
  /** Entries of a patch body's `unset`. */
  patchUnsetPaths: 100,
  /** Characters of one patch path (`custom.a.b`). */
  patchPathChars: 1024,
  /** Segments of one patch path, `custom` included. */
  patchPathSegments: 32,
  /** Serialized JSON of a patch body's whole `set`. */
  patchSetBytes: 64 * 1024,
  /** Kinds a tenant may declare (`PUT /v1/reactions/kinds`): the distinct kinds one activity may carry. */
  reactionKinds: 25,
  /** Terms of a comment blocklist, and characters of one term once trimmed. */
  blocklistTerms: 1000,
  blocklistTermChars: 100,
} as const;
