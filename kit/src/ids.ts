// Identifier and size rules of the contract (section 4), shared by gateway and services.
export const ID_PATTERN = /^[A-Za-z0-9_\-.@]{1,128}$/;
export const GROUP_PATTERN = /^[A-Za-z0-9_]{1,64}$/;
/** custom objects: at most 64 KB of JSON. */
export const MAX_CUSTOM_BYTES = 64 * 1024;

export const isId = (s: string): boolean => ID_PATTERN.test(s);
export const isGroup = (s: string): boolean => GROUP_PATTERN.test(s);
